package workflows_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/workflows"
	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// fanner is the researcher with a bound of four steps at once.
func fanner() contract.AgentSpec {
	s := researcher
	s.Parallel = 4
	return s
}

// fetchOf is a tool step reading url, as the planner writes it, needing
// the steps numbered needs.
func fetchOf(title, url string, needs ...string) longhaul.PlanStep {
	return longhaul.PlanStep{
		Kind: longhaul.StepTool, Target: "web_fetch", Title: title, About: "example.org",
		Arguments: json.RawMessage(`{"url":"` + url + `"}`), Success: "the page", DependsOn: needs,
	}
}

// needing is s needing the steps numbered needs.
func needing(s longhaul.PlanStep, needs ...string) longhaul.PlanStep {
	s.DependsOn = needs
	return s
}

// graphHarness is a harness whose environment runs plan steps' workflows.
func graphHarness(t *testing.T) (*harness, *pipeline) {
	h := newHarness(t)
	h.env.RegisterWorkflowWithOptions(workflows.StepWorkflow, workflow.RegisterOptions{Name: contract.StepWorkflowName})
	return h, newPipeline(h)
}

// startGate holds back tool calls until n of them have started: proof that they
// run at once. A call that waits longer than a minute fails the test
// instead of hanging it.
type startGate struct {
	mu      sync.Mutex
	started []string
	all     chan struct{}
	n       int
}

func newStartGate(n int) *startGate { return &startGate{all: make(chan struct{}), n: n} }

func (g *startGate) enter(id string) error {
	g.mu.Lock()
	g.started = append(g.started, id)
	if len(g.started) == g.n {
		close(g.all)
	}
	g.mu.Unlock()
	select {
	case <-g.all:
		return nil
	case <-time.After(time.Minute):
		return temporal.NewNonRetryableApplicationError("the other steps never started", "Gate", nil)
	}
}

// onGatedTools mocks CallTool: each call enters g, then answers with
// "result of <call id>".
func (p *pipeline) onGatedTools(g *startGate) {
	p.h.env.OnActivity(p.h.acts.CallTool, mock.Anything, mock.Anything).Return(
		func(_ context.Context, req contract.ToolRequest) (contract.ToolResponse, error) {
			p.mu.Lock()
			p.tools = append(p.tools, req)
			p.mu.Unlock()
			if err := g.enter(req.Call.ID); err != nil {
				return contract.ToolResponse{}, err
			}
			return contract.ToolResponse{Content: "result of " + req.Call.ID}, nil
		})
}

// TestGraphStartsIndependentStepsAtOnce: three steps that need nothing
// from each other all start before any ends, each in a workflow of its
// own; each is reviewed; the answer reads their results in plan order.
func TestGraphStartsIndependentStepsAtOnce(t *testing.T) {
	h, p := graphHarness(t)
	h.resolve(fanner())
	p.onPlan(planned(goal,
		fetchOf("Read a", "https://example.org/a"), fetchOf("Read b", "https://example.org/b"), fetchOf("Read c", "https://example.org/c"),
		needing(answerStep, "1", "2", "3"))).Once()
	p.onSupervisePlan(planOK).Once()
	p.onReviewStep(stepOK("read"), stepOK("read"), stepOK("read")).Times(3)
	g := newStartGate(3)
	p.onGatedTools(g)
	h.scriptModel(answer("All three.", usage(10, 5))).Once()
	h.run(input(question...))

	if got := h.result().Content; got != "All three." {
		t.Fatalf("Content = %q", got)
	}
	ids := toolIDs(p.toolRequests())
	slices.Sort(ids)
	diff(t, "tool calls", []string{"step-1", "step-2", "step-3"}, ids)
	for _, r := range p.toolRequests() {
		// Each step's calls are numbered in a block of their own.
		if r.Seq%10000 != 1 {
			t.Errorf("call %s has number %d, want the first of its step's block", r.Call.ID, r.Seq)
		}
	}
	evs := h.events()
	types := eventTypes(evs)
	firstResult := slices.Index(types, longhaul.EventStepResult)
	if starts := countTypes(types[:max(firstResult, 0)], longhaul.EventStepStart); starts != 3 {
		t.Errorf("%d steps started before the first ended, want 3: %v", starts, types)
	}
	results := payloads[longhaul.StepResultData](t, evs, longhaul.EventStepResult)
	if len(results) != 4 {
		t.Fatalf("%d step results, want 4", len(results))
	}
	for _, c := range payloads[longhaul.ToolStartData](t, evs, longhaul.EventToolStart) {
		if c.ToolCallID != "step-"+c.StepID {
			t.Errorf("tool_start %s names step %q", c.ToolCallID, c.StepID)
		}
	}
	outputs := payloads[longhaul.ToolOutputData](t, evs, longhaul.EventToolOutput)
	if len(outputs) != 3 {
		t.Errorf("%d tool outputs in the run's log, want the steps' 3", len(outputs))
	}
	_, _, _, reviews, _ := p.calls()
	if len(reviews) != 3 {
		t.Errorf("%d step reviews, want one a step", len(reviews))
	}
	ans := h.modelCallsN(1)[0]
	text := answerText(ans)
	a, b, c := strings.Index(text, "result of step-1"), strings.Index(text, "result of step-2"), strings.Index(text, "result of step-3")
	if a < 0 || b < a || c < b {
		t.Errorf("the answer does not read the three results in plan order:\n%s", text)
	}
	st := h.state()
	diff(t, "dependencies in the state", [][]string{nil, nil, nil, {"1", "2", "3"}}, dependencies(st.Plans[0].Steps))
	if d := h.currentDetails(); !strings.Contains(d, "- [x] 4. Answer — needs 1, 2, 3\n") {
		t.Errorf("the checklist does not say what the answer needs:\n%s", d)
	}
}

func countTypes(types []longhaul.EventType, t longhaul.EventType) int {
	n := 0
	for _, x := range types {
		if x == t {
			n++
		}
	}
	return n
}

func dependencies(steps []longhaul.PlanStep) [][]string {
	out := make([][]string, len(steps))
	for i, s := range steps {
		out[i] = s.DependsOn
	}
	return out
}

// TestGraphSecondWaveReadsTheFirst: a skill step that needs two tool
// steps starts once both ended and its instructions hold their results.
func TestGraphSecondWaveReadsTheFirst(t *testing.T) {
	h, p := graphHarness(t)
	h.resolve(fanner())
	p.onPlan(planned(goal,
		fetchOf("Read a", "https://example.org/a"), fetchOf("Read b", "https://example.org/b"),
		needing(briefStep, "1", "2"), needing(answerStep, "1", "2", "3"))).Once()
	p.onSupervisePlan(planOK).Once()
	p.onReviewStep(stepOK("ok"), stepOK("ok"), stepOK("ok")).Times(3)
	g := newStartGate(2)
	p.onGatedTools(g)
	const brief = "Briefing from a and b."
	h.scriptModel(answer(brief, usage(5, 5)), answer("Final.", usage(10, 5))).Twice()
	h.run(input(question...))

	if got := h.result().Content; got != "Final." {
		t.Fatalf("Content = %q", got)
	}
	reqs := h.modelCallsN(2)
	skill := reqs[0]
	if skill.Call != "step-3-turn-1" || skill.Skill != "briefing" {
		t.Fatalf("first model call %q (skill %q), want the skill step's", skill.Call, skill.Skill)
	}
	for _, want := range []string{"result of step-1", "result of step-2", "## Step 1: tool web_fetch — Read a"} {
		if !strings.Contains(skill.Instructions, want) {
			t.Errorf("the skill step's instructions lack %q:\n%s", want, skill.Instructions)
		}
	}
	evs := h.events()
	var order []string
	for _, e := range evs {
		switch e.Type {
		case longhaul.EventStepStart:
			var d longhaul.StepStartData
			_ = e.Decode(&d)
			order = append(order, "start "+d.StepID)
		case longhaul.EventStepResult:
			var d longhaul.StepResultData
			_ = e.Decode(&d)
			order = append(order, "end "+d.StepID)
		}
	}
	if i := slices.Index(order, "start 3"); i < 0 || !slices.Contains(order[:i], "end 1") || !slices.Contains(order[:i], "end 2") {
		t.Errorf("step 3 started before the steps it needs ended: %v", order)
	}
	if !strings.Contains(answerText(reqs[1]), brief) {
		t.Errorf("the answer lacks the skill step's briefing:\n%s", answerText(reqs[1]))
	}
}

// TestGraphReplanKeepsRunningSiblings: a failed step's review asks for a
// new plan; the sibling still running finishes first, and the planner gets
// its result as done (it is not redone).
func TestGraphReplanKeepsRunningSiblings(t *testing.T) {
	h, p := graphHarness(t)
	h.resolve(fanner())
	const adjust = "page a failed; read c instead"
	p.onPlan(
		planned(goal, fetchOf("Read a", "https://example.org/a"), fetchOf("Read b", "https://example.org/b"), needing(answerStep, "1", "2")),
		planned(goal, fetchOf("Read c", "https://example.org/c"), needing(answerStep, "1")),
	).Twice()
	p.onSupervisePlan(planOK, planOK).Twice()
	reviewed := make(chan struct{})
	var once sync.Once
	h.env.OnActivity(h.acts.ReviewStep, mock.Anything, mock.Anything).Return(
		func(_ context.Context, req contract.StepReviewRequest) (contract.StepReview, error) {
			p.mu.Lock()
			p.reviews = append(p.reviews, req)
			p.mu.Unlock()
			once.Do(func() { close(reviewed) })
			if req.Step.ID == "1" {
				return contract.StepReview{Decision: longhaul.ReviewAdjust, Reason: adjust}, nil
			}
			return contract.StepReview{Decision: longhaul.ReviewOK, Reason: "ok"}, nil
		})
	p.onTool("step-1", contract.ToolResponse{}, temporal.NewNonRetryableApplicationError("404", longhaul.ErrTypeToolFailed, nil)).Once()
	h.env.OnActivity(h.acts.CallTool, mock.Anything, mock.MatchedBy(func(r contract.ToolRequest) bool { return r.Call.ID == "step-2" })).Return(
		func(_ context.Context, req contract.ToolRequest) (contract.ToolResponse, error) {
			// Step 2 runs on past step 1's review.
			select {
			case <-reviewed:
			case <-time.After(time.Minute):
				return contract.ToolResponse{}, temporal.NewNonRetryableApplicationError("step 1 was never reviewed", "Gate", nil)
			}
			return contract.ToolResponse{Content: "page b"}, nil
		}).Once()
	p.onTool("step-4", contract.ToolResponse{Content: "page c"}, nil).Once()
	h.scriptModel(answer("From b and c.", usage(10, 5))).Once()
	h.run(input(question...))

	if got := h.result().Content; got != "From b and c." {
		t.Fatalf("Content = %q", got)
	}
	plans := p.planRequests()
	if len(plans) != 2 {
		t.Fatalf("%d plan requests, want 2", len(plans))
	}
	var done []string
	for _, s := range plans[1].Done {
		done = append(done, s.ID+" "+s.Status+" "+s.Result)
	}
	if len(done) != 2 || !strings.HasPrefix(done[0], "1 failed error:") || done[1] != "2 done page b" {
		t.Errorf("the re-plan's finished steps = %q, want step 1 failed and step 2 done with its page", done)
	}
	_, _, _, reviews, _ := p.calls()
	var reviewedIDs []string
	for _, r := range reviews {
		reviewedIDs = append(reviewedIDs, r.Step.ID)
	}
	diff(t, "reviewed steps", []string{"1", "4"}, reviewedIDs)
	if !strings.Contains(answerText(h.modelCallsN(1)[0]), "page b") {
		t.Error("the answer lacks the kept sibling's result")
	}
	st := h.state()
	diff(t, "the new plan's dependencies", [][]string{nil, nil, nil, {"4"}}, dependencies(st.Plans[1].Steps))
}

// TestGraphInRunFollowsNeeds: a run whose spec has no bound (resolved
// before bounds existed) carries out a graph one step at a time in the
// run itself, in the order the needs give, not the plan's.
func TestGraphInRunFollowsNeeds(t *testing.T) {
	h, p := graphHarness(t)
	h.resolve(researcher) // Parallel 0
	p.onPlan(planned(goal,
		fetchOf("Read b, after a", "https://example.org/b", "2"), fetchOf("Read a", "https://example.org/a"),
		needing(answerStep, "1", "2"))).Once()
	p.onSupervisePlan(planOK).Once()
	p.onReviewStep(stepOK("ok"), stepOK("ok")).Twice()
	p.onTool("step-2", contract.ToolResponse{Content: "page a"}, nil).Once()
	p.onTool("step-1", contract.ToolResponse{Content: "page b"}, nil).Once()
	h.scriptModel(answer("Done.", usage(1, 1))).Once()
	h.run(input(question...))

	if got := h.result().Content; got != "Done." {
		t.Fatalf("Content = %q", got)
	}
	reqs := p.toolRequests()
	diff(t, "tool calls", []string{"step-2", "step-1"}, toolIDs(reqs))
	if len(reqs) == 2 && (reqs[0].Seq != 1 || reqs[1].Seq != 2) {
		t.Errorf("call numbers %d, %d; want 1, 2 (the run's own)", reqs[0].Seq, reqs[1].Seq)
	}
	types := eventTypes(h.events())
	if i := slices.Index(types, longhaul.EventStepResult); i < 0 || countTypes(types[:i], longhaul.EventStepStart) != 1 {
		t.Errorf("steps overlapped in a run without a bound: %v", types)
	}
}

// TestGraphStepAsksForTheRun: a plan step that asks an agent, running in
// a workflow of its own beside another, starts the asked agent as the
// run's child run: named from the run's id and the call's number, its
// progress on the run's call; the tool_start names both the child run and
// the step.
func TestGraphStepAsksForTheRun(t *testing.T) {
	h, p := graphHarness(t)
	h.env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: askParent})
	var mu sync.Mutex
	asked := map[string]*contract.ParentCall{} // the asked runs' ids and parent calls
	h.env.SetOnChildWorkflowStartedListener(func(info *workflow.Info, _ workflow.Context, args converter.EncodedValues) {
		if info.WorkflowType.Name != contract.AgentWorkflowName {
			return
		}
		var in workflows.Input
		if err := args.Get(&in); err != nil {
			t.Errorf("asked run's input: %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		asked[info.WorkflowExecution.ID] = in.Parent
	})
	s := mediaSpec
	s.Mode, s.Parallel = contract.ModeAgentic, 2
	h.resolve(s)
	h.resolve(helperSpec)
	ask := longhaul.PlanStep{Kind: longhaul.StepTool, Target: "ask_helper", Title: "Ask the helper", Arguments: json.RawMessage(`{"question":"What is six times seven?"}`)}
	clock := longhaul.PlanStep{Kind: longhaul.StepTool, Target: "current_time", Title: "Read the clock", Arguments: json.RawMessage(`{}`)}
	p.onPlan(planned(goal, ask, clock, needing(answerStep, "1", "2"))).Once()
	p.onSupervisePlan(planOK).Once()
	p.onReviewStep(stepOK("ok"), stepOK("ok")).Twice()
	p.onTool("step-2", contract.ToolResponse{Content: "noon"}, nil).Once()
	h.env.OnActivity(h.acts.ChatCompletion, mock.Anything, mock.Anything).Return(
		func(_ context.Context, req contract.ModelRequest) (contract.ModelResponse, error) {
			if req.Agent == "helper" {
				return answer("42", usage(1, 1)).resp, nil
			}
			return answer("It is 42 at noon.", usage(1, 1)).resp, nil
		})
	in := input(question...)
	in.Agent = "media"
	h.run(in)

	if got := h.result().Content; got != "It is 42 at noon." {
		t.Fatalf("Content = %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	child := askParent + "-ask-1" // the step's first call, numbered from the run's
	parent, ok := asked[child]
	if len(asked) != 1 || !ok || parent == nil || parent.Run != askParent || parent.ToolCallID != "step-1" {
		t.Fatalf("asked runs %v (parent call %+v), want %s, a child of %s's call step-1", asked, parent, child, askParent)
	}
	for _, c := range payloads[longhaul.ToolStartData](t, h.events(), longhaul.EventToolStart) {
		if c.ToolCallID == "step-1" && (c.Run != child || c.StepID != "1") {
			t.Errorf("tool_start of step-1: run %q, step %q; want %q, 1", c.Run, c.StepID, child)
		}
	}
}

// TestGraphCancelReachesEveryStep: cancelling a run while three of its
// steps run at once, each a child workflow whose tool takes 10 s, cancels
// every child, and the run ends cancelled.
func TestGraphCancelReachesEveryStep(t *testing.T) {
	h, p := graphHarness(t)
	var mu sync.Mutex
	var started, cancelled []string
	h.env.SetOnChildWorkflowStartedListener(func(info *workflow.Info, _ workflow.Context, _ converter.EncodedValues) {
		mu.Lock()
		defer mu.Unlock()
		started = append(started, info.WorkflowExecution.ID)
	})
	h.env.SetOnChildWorkflowCanceledListener(func(info *workflow.Info) {
		mu.Lock()
		defer mu.Unlock()
		cancelled = append(cancelled, info.WorkflowExecution.ID)
	})
	h.resolve(fanner())
	p.onPlan(planned(goal,
		fetchOf("Read a", "https://example.org/a"), fetchOf("Read b", "https://example.org/b"), fetchOf("Read c", "https://example.org/c"),
		needing(answerStep, "1", "2", "3"))).Once()
	p.onSupervisePlan(planOK).Once()
	p.onReviewStep(stepOK("read")).Maybe()
	h.env.OnActivity(h.acts.CallTool, mock.Anything, mock.Anything).Return(contract.ToolResponse{Content: "too late"}, nil).After(10 * time.Second).Maybe()
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, 5*time.Second)
	h.run(input(question...))

	var canceled *temporal.CanceledError
	if err := h.env.GetWorkflowError(); !errors.As(err, &canceled) {
		t.Fatalf("the run ended with %v, want cancelled", err)
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(started)
	slices.Sort(cancelled)
	if len(started) != 3 || !slices.Equal(started, cancelled) {
		t.Errorf("step children started %v, cancelled %v: want all three cancelled", started, cancelled)
	}
}
