package workflows_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/stretchr/testify/mock"
)

// onReadFork mocks ReadFork for req.
func (h *harness) onReadFork(req contract.ForkRequest, fs contract.ForkState) {
	h.env.OnActivity(h.acts.ReadFork, mock.Anything, req).Return(fs, nil).Once()
}

// TestForkAtStep forks an agentic run at its second step on another
// model: the first step keeps its result and does not run, the second
// runs anew, no plan is drafted, and the answer is the other model's.
func TestForkAtStep(t *testing.T) {
	h := newHarness(t)
	h.resolve(researcher)
	plan := contract.PlanRevision{Status: contract.PlanActive, Plan: longhaul.Plan{Revision: 1, Goal: "the changes", Steps: []longhaul.PlanStep{
		as(fetchAct, "1", longhaul.StepDone, "the act's text"),
		as(fetchNews, "2", longhaul.StepPending),
		as(answerStep, "3", longhaul.StepPending),
	}}}
	h.onReadFork(contract.ForkRequest{Run: "run-old", Step: "2"}, contract.ForkState{Mode: contract.ModeAgentic, Plans: []contract.PlanRevision{plan}, StepSeq: 3})
	h.onTool("step-2", contract.ToolResponse{Content: "the news"}, nil).Once()
	h.env.OnActivity(h.acts.ReviewStep, mock.Anything, mock.Anything).Return(contract.StepReview{Decision: longhaul.ReviewOK}, nil).Once()
	h.scriptModel(answer("the answer", usage(10, 5)))

	h.run(contract.AgentInput{Agent: researcher.ID, Messages: question, Fork: &contract.Fork{Run: "run-old", At: "step-2", Step: "2", Model: "other-model"}})
	if res := h.result(); res.Content != "the answer" {
		t.Errorf("answer = %q", res.Content)
	}
	calls := h.modelCalls()
	if len(calls) != 1 || calls[0].Call != "answer" || calls[0].Model != "other-model" {
		t.Fatalf("model calls = %+v, want the answer on other-model", calls)
	}
	if want := []string{"## Step 1: tool web_fetch — Read the act (eur-lex.europa.eu)\n\nthe act's text\n\n", "## Step 2: tool web_fetch — Read the news (news.example)\n\nthe news\n\n"}; !cmp.Equal(calls[0].Findings, want) {
		t.Errorf("findings = %q", calls[0].Findings)
	}
	st := h.state()
	if st.Mode != contract.ModeAgentic || st.Dispatch != "forked from run run-old at step-2" || len(st.Plans) != 1 || st.Plans[0].Status != contract.PlanDone {
		t.Errorf("state = %+v", st)
	}
	if st.ReplansRemaining != researcher.MaxReplans {
		t.Errorf("replans remaining = %d, want the agent's %d", st.ReplansRemaining, researcher.MaxReplans)
	}
}

// TestForkAtToolCall forks a chat at a tool call: the loop goes on at the
// next turn with the recorded answer and result after the request, its
// next call numbered after the old run's.
func TestForkAtToolCall(t *testing.T) {
	h := newHarness(t)
	h.resolve(spec)
	call := longhaul.ToolCall{ID: "c1", Name: "web_fetch", Arguments: `{"url":"https://example.com"}`}
	reused := []longhaul.Message{assistant("", call), {Role: longhaul.RoleTool, ToolCallID: "c1", Name: "web_fetch", Content: "the page"}}
	h.onReadFork(contract.ForkRequest{Run: "run-old", Call: "c1"}, contract.ForkState{Mode: contract.ModeChat, Messages: reused, Turn: 2, ToolSeq: 4})
	h.scriptModel(answer("from the page", usage(10, 5)))

	edited := []longhaul.Message{{Role: longhaul.RoleUser, Content: "Edited"}}
	h.run(contract.AgentInput{Agent: spec.ID, Messages: edited, Fork: &contract.Fork{Run: "run-old", At: "c1", Call: "c1"}})
	if res := h.result(); res.Content != "from the page" {
		t.Errorf("answer = %q", res.Content)
	}
	calls := h.modelCalls()
	if len(calls) != 1 {
		t.Fatalf("model calls = %d, want 1", len(calls))
	}
	if calls[0].Call != "turn-2" || calls[0].NextCall != 5 || calls[0].Model != spec.Model {
		t.Errorf("the call = %s next %d on %s, want turn-2, next 5, on %s", calls[0].Call, calls[0].NextCall, calls[0].Model, spec.Model)
	}
	if diff := cmp.Diff(append(append([]longhaul.Message(nil), edited...), reused...), calls[0].Messages); diff != "" {
		t.Errorf("the conversation (-want +got):\n%s", diff)
	}
	if st := h.state(); st.Turns != 2 || st.Mode != contract.ModeChat {
		t.Errorf("state = %+v, want turn 2 of a chat", st)
	}
}

// TestForkAtStart forks from the start on another model: nothing is read
// of the old run, and the run dispatches as a new one.
func TestForkAtStart(t *testing.T) {
	h := newHarness(t)
	h.resolve(spec)
	h.scriptModel(answer("hello", usage(10, 5)))
	h.run(contract.AgentInput{Agent: spec.ID, Messages: question, Fork: &contract.Fork{Run: "run-old", At: contract.ForkStart, Model: "other-model"}})
	if res := h.result(); res.Content != "hello" {
		t.Errorf("answer = %q", res.Content)
	}
	if calls := h.modelCalls(); len(calls) != 1 || calls[0].Call != "turn-1" || calls[0].Model != "other-model" {
		t.Errorf("model calls = %+v", calls)
	}
}

// TestForkInAWaveRerunsOnlyWhatNeedsTheStep forks a fanned-out plan at
// step 2 of its first wave (steps 1, 2 and 3 need nothing, 4 needs 2, the
// answer needs all), with the plan cut as the API cuts it: the siblings
// that finished (1 and 3) keep their results and make no tool call again;
// step 2 and step 4, which needs it, run anew, then the answer. The fork
// reads nothing of the old run: the API handed it the plan.
func TestForkInAWaveRerunsOnlyWhatNeedsTheStep(t *testing.T) {
	h, p := graphHarness(t)
	h.resolve(fanner())
	old := []contract.PlanRevision{{Status: contract.PlanDone, Plan: longhaul.Plan{Revision: 1, Goal: goal, Steps: []longhaul.PlanStep{
		as(fetchOf("Read a", "https://example.org/a"), "1", longhaul.StepDone, "page a"),
		as(fetchOf("Read b", "https://example.org/b"), "2", longhaul.StepDone, "old page b"),
		as(fetchOf("Read c", "https://example.org/c"), "3", longhaul.StepDone, "page c"),
		as(fetchOf("Read b's links", "https://example.org/b/links", "2"), "4", longhaul.StepDone, "old links"),
		as(needing(answerStep, "1", "2", "3", "4"), "5", longhaul.StepDone, "old answer"),
	}}}}
	plans, reviews, ok := contract.ForkPlans(old, nil, "2")
	if !ok {
		t.Fatal("step 2 is no fork point")
	}
	p.onTool("step-2", contract.ToolResponse{Content: "page b"}, nil).Once()
	p.onTool("step-4", contract.ToolResponse{Content: "links"}, nil).Once()
	p.onReviewStep(stepOK("ok"), stepOK("ok")).Times(2)
	h.scriptModel(answer("the answer", usage(10, 5)))
	state := &contract.ForkState{Mode: contract.ModeAgentic, Plans: plans, Reviews: reviews, StepSeq: contract.ForkStepSeq(plans)}
	h.run(contract.AgentInput{Agent: researcher.ID, Messages: question, Fork: &contract.Fork{Run: "run-old", At: "step-2", Step: "2", State: state}})

	if res := h.result(); res.Content != "the answer" {
		t.Fatalf("answer = %q", res.Content)
	}
	var called []string
	for _, r := range p.toolRequests() {
		called = append(called, r.Call.ID)
	}
	slices.Sort(called)
	if want := []string{"step-2", "step-4"}; !slices.Equal(called, want) {
		t.Errorf("tool calls %v, want %v: the finished siblings 1 and 3 run again", called, want)
	}
	calls := h.modelCalls()
	if len(calls) != 1 || calls[0].Call != "answer" {
		t.Fatalf("model calls = %+v, want the answer only", calls)
	}
	for _, want := range []string{"page a", "page b", "page c", "links"} {
		if !slices.ContainsFunc(calls[0].Findings, func(f string) bool { return strings.Contains(f, want) }) {
			t.Errorf("the answer's findings lack %q: %q", want, calls[0].Findings)
		}
	}
	if st := h.state(); len(st.Plans) != 1 || st.Plans[0].Status != contract.PlanDone {
		t.Errorf("state = %+v", st)
	}
}

// TestForkDecidedAtToolCall forks a chat at a tool call the API decided:
// ReadFork fetches only the recorded loop (Decided), and the fork takes
// how the run went from its input.
func TestForkDecidedAtToolCall(t *testing.T) {
	h := newHarness(t)
	h.resolve(spec)
	call := longhaul.ToolCall{ID: "c1", Name: "web_fetch", Arguments: `{"url":"https://example.com"}`}
	reused := []longhaul.Message{assistant("", call), {Role: longhaul.RoleTool, ToolCallID: "c1", Name: "web_fetch", Content: "the page"}}
	h.onReadFork(contract.ForkRequest{Run: "run-old", Call: "c1", Decided: true}, contract.ForkState{Messages: reused, Turn: 2, ToolSeq: 4})
	h.scriptModel(answer("from the page", usage(10, 5)))

	h.run(contract.AgentInput{Agent: spec.ID, Messages: question, Fork: &contract.Fork{Run: "run-old", At: "c1", Call: "c1", State: &contract.ForkState{Mode: contract.ModeChat}}})
	if res := h.result(); res.Content != "from the page" {
		t.Errorf("answer = %q", res.Content)
	}
	calls := h.modelCalls()
	if len(calls) != 1 || calls[0].Call != "turn-2" || calls[0].NextCall != 5 {
		t.Fatalf("model calls = %+v, want turn-2 with next call 5", calls)
	}
	if st := h.state(); st.Turns != 2 || st.Mode != contract.ModeChat {
		t.Errorf("state = %+v, want a chat", st)
	}
}
