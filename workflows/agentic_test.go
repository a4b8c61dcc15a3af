// Long because: the agentic pipeline's tests, which share one scripted pipeline (classify, plan, review).

package workflows_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/stretchr/testify/mock"
	sdkpb "go.temporal.io/api/sdk/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
)

// briefing is a skill with a slash command and a narrower scope than the
// agent's.
var briefing = contract.SkillSpec{
	ID:          "briefing",
	Description: "Writes a short briefing on a topic",
	Command:     "/briefing",
	Tools:       []string{"web_fetch"},
	MaxTurns:    3,
}

// researcher is an agentic agent with the briefing skill; tests copy it and
// change what they need.
var researcher = contract.AgentSpec{
	ID:         spec.ID,
	Mode:       contract.ModeAgentic,
	Model:      "test-model",
	MaxTurns:   8,
	MaxReplans: 2,
	Tools:      []string{"current_time", "web_fetch"},
	Skills:     []contract.SkillSpec{briefing},
}

var question = []longhaul.Message{{Role: longhaul.RoleUser, Content: "What changed in the EU AI act?"}}

// assistantCaller is who the pipeline's structured calls name in a run of
// the harness's agent with no models: of its own.
var assistantCaller = contract.Caller{Agent: "assistant", Principal: u1, Model: "test-model"}

// Plan steps as the planner returns them: no ids, no statuses.
var (
	fetchAct = longhaul.PlanStep{
		Kind: longhaul.StepTool, Target: "web_fetch", Title: "Read the act", About: "eur-lex.europa.eu",
		Arguments: json.RawMessage(`{"url":"https://eur-lex.europa.eu/ai-act"}`), Success: "the act's text",
	}
	fetchNews = longhaul.PlanStep{
		Kind: longhaul.StepTool, Target: "web_fetch", Title: "Read the news", About: "news.example",
		Arguments: json.RawMessage(`{"url":"https://news.example/ai-act"}`), Success: "a summary of the changes",
	}
	briefStep = longhaul.PlanStep{
		Kind: longhaul.StepSkill, Target: "briefing", Title: "Brief on the act",
		Input: "Brief me on the EU AI act", Success: "a briefing with sources",
	}
	answerStep = longhaul.PlanStep{Kind: longhaul.StepCompletion, Title: "Answer", Input: "list the changes"}
)

// readThenAnswer are the event types of a run of the plan fetchAct, then
// answerStep: the plan, the tool step and its review, the answer.
var readThenAnswer = []longhaul.EventType{
	longhaul.EventThinking, longhaul.EventPlan,
	longhaul.EventStepStart, longhaul.EventToolStart, longhaul.EventToolOutput, longhaul.EventStepResult, longhaul.EventReview,
	longhaul.EventStepStart, longhaul.EventContent, longhaul.EventStepResult,
	longhaul.EventUsage, longhaul.EventDone,
}

// as gives a planned step the id and status the workflow assigns it, and
// optionally its result.
func as(s longhaul.PlanStep, id, status string, result ...string) longhaul.PlanStep {
	s.ID, s.Status = id, status
	if len(result) > 0 {
		s.Result = result[0]
	}
	return s
}

// outcome is one scripted answer of a mocked activity.
type outcome[T any] struct {
	v   T
	err error
}

func ok[T any](v T) outcome[T]         { return outcome[T]{v: v} }
func fail[T any](err error) outcome[T] { return outcome[T]{err: err} }

// pipeline mocks the activities of the agentic pipeline and records their
// requests; an unscripted call fails without a retry.
type pipeline struct {
	h *harness

	mu       sync.Mutex // mock callbacks run on their own goroutines
	classify []contract.ClassifyRequest
	plans    []contract.PlanRequest
	checks   []contract.PlanCheckRequest
	reviews  []contract.StepReviewRequest
	tools    []contract.ToolRequest
}

func newPipeline(h *harness) *pipeline { return &pipeline{h: h} }

// scripted answers the n-th call with replies[n] and records its request.
func scripted[Req, Resp any](p *pipeline, name string, log *[]Req, replies []outcome[Resp]) func(context.Context, Req) (Resp, error) {
	return func(_ context.Context, req Req) (Resp, error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		n := len(*log)
		*log = append(*log, req)
		if n >= len(replies) {
			var zero Resp
			return zero, temporal.NewNonRetryableApplicationError(fmt.Sprintf("unscripted %s call %d", name, n+1), "Unscripted", nil)
		}
		return replies[n].v, replies[n].err
	}
}

func (p *pipeline) onClassify(replies ...outcome[contract.Dispatch]) *testsuite.MockCallWrapper {
	return p.h.env.OnActivity(p.h.acts.Classify, mock.Anything, mock.Anything).Return(scripted(p, "Classify", &p.classify, replies))
}

func (p *pipeline) onPlan(replies ...outcome[contract.PlanResponse]) *testsuite.MockCallWrapper {
	return p.h.env.OnActivity(p.h.acts.Plan, mock.Anything, mock.Anything).Return(scripted(p, "Plan", &p.plans, replies))
}

func (p *pipeline) onSupervisePlan(replies ...outcome[contract.PlanCheck]) *testsuite.MockCallWrapper {
	return p.h.env.OnActivity(p.h.acts.SupervisePlan, mock.Anything, mock.Anything).Return(scripted(p, "SupervisePlan", &p.checks, replies))
}

func (p *pipeline) onReviewStep(replies ...outcome[contract.StepReview]) *testsuite.MockCallWrapper {
	return p.h.env.OnActivity(p.h.acts.ReviewStep, mock.Anything, mock.Anything).Return(scripted(p, "ReviewStep", &p.reviews, replies))
}

// onTool mocks CallTool for the call with the given id and records the
// request.
func (p *pipeline) onTool(id string, res contract.ToolResponse, err error) *testsuite.MockCallWrapper {
	match := mock.MatchedBy(func(r contract.ToolRequest) bool { return r.Call.ID == id })
	return p.h.env.OnActivity(p.h.acts.CallTool, mock.Anything, match).Return(
		func(_ context.Context, req contract.ToolRequest) (contract.ToolResponse, error) {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.tools = append(p.tools, req)
			return res, err
		})
}

// calls returns copies of the recorded requests.
func (p *pipeline) calls() (classify []contract.ClassifyRequest, plans []contract.PlanRequest, checks []contract.PlanCheckRequest, reviews []contract.StepReviewRequest, tools []contract.ToolRequest) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append(classify, p.classify...), append(plans, p.plans...), append(checks, p.checks...),
		append(reviews, p.reviews...), append(tools, p.tools...)
}

func (p *pipeline) planRequests() []contract.PlanRequest {
	_, plans, _, _, _ := p.calls()
	return plans
}

func (p *pipeline) toolRequests() []contract.ToolRequest {
	_, _, _, _, tools := p.calls()
	return tools
}

var planOK = ok(contract.PlanCheck{OK: true})

func stepOK(reason string) outcome[contract.StepReview] {
	return ok(contract.StepReview{Decision: longhaul.ReviewOK, Reason: reason})
}

func stepAdjust(reason string) outcome[contract.StepReview] {
	return ok(contract.StepReview{Decision: longhaul.ReviewAdjust, Reason: reason})
}

func planned(goal string, steps ...longhaul.PlanStep) outcome[contract.PlanResponse] {
	return ok(contract.PlanResponse{Goal: goal, Steps: steps})
}

const goal = "Explain what changed in the EU AI act"

// eventTypes lists the types of evs, in order.
func eventTypes(evs []longhaul.Event) []longhaul.EventType {
	out := make([]longhaul.EventType, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

// payloads decodes the payloads of the events of type t.
func payloads[T any](t *testing.T, evs []longhaul.Event, typ longhaul.EventType) []T {
	t.Helper()
	var out []T
	for _, e := range evs {
		if e.Type != typ {
			continue
		}
		var v T
		if err := e.Decode(&v); err != nil {
			t.Fatalf("decode %s event %d: %v", typ, e.Offset, err)
		}
		out = append(out, v)
	}
	return out
}

// currentDetails reads what the run last put in its current details (the
// Temporal UI's summary of a running workflow) through the SDK's built-in
// metadata query.
func (h *harness) currentDetails() string {
	h.t.Helper()
	md := query[*sdkpb.WorkflowMetadata](h, "__temporal_workflow_metadata")
	return md.GetCurrentDetails()
}

// TestSlashCommandRunsSkill: a message starting with a skill's command runs
// that skill's loop on the rest of the message, with only its tools offered
// and allowed.
func TestSlashCommandRunsSkill(t *testing.T) {
	h := newHarness(t)
	p := newPipeline(h)
	s := spec // a chat agent: the command wins over the mode
	s.Skills = []contract.SkillSpec{briefing}
	h.resolve(s)
	call := longhaul.ToolCall{ID: "call_1", Name: "web_fetch", Arguments: `{"url":"https://eur-lex.europa.eu/ai-act"}`}
	h.scriptCallThenAnswer(call, usage(10, 2), "Briefing: the act bans social scoring.", usage(20, 8))
	p.onTool("call_1", contract.ToolResponse{Content: "act text"}, nil).Once()
	p.onPlan().Maybe()
	p.onClassify().Maybe()
	h.run(input(longhaul.Message{Role: longhaul.RoleUser, Content: "/briefing EU AI act"}))

	if got := h.result().Content; got != "Briefing: the act bans social scoring." {
		t.Errorf("Content = %q", got)
	}
	reqs := h.modelCallsN(2)
	diff(t, "first model request", contract.ModelRequest{
		Call:     "turn-1",
		Agent:    "assistant",
		Model:    "test-model",
		Messages: []longhaul.Message{{Role: longhaul.RoleUser, Content: "EU AI act"}},
		Tools:    briefing.Tools,
		Publish:  true,
		Skill:    "briefing",
		NextCall: 1,
		After:    1, // the skill_activity event
	}, reqs[0])
	if r := reqs[1]; r.Call != "turn-2" || r.Skill != "briefing" {
		t.Errorf("second model request: Call %q, Skill %q; want turn-2, briefing", r.Call, r.Skill)
	}
	diff(t, "tool requests", []contract.ToolRequest{{Call: call, Agent: "assistant", Skill: "briefing", Seq: 1, After: 2, User: "u1", Principal: u1}}, p.toolRequests())
	if classify, plans, _, _, _ := p.calls(); len(classify)+len(plans) != 0 {
		t.Errorf("Classify called %d times, Plan %d times; want neither", len(classify), len(plans))
	}

	diffEvents(t, logOf(
		ev(longhaul.EventSkillActivity, longhaul.SkillActivityData{Skill: "briefing", Message: "running /briefing"}),
		ev(longhaul.EventToolStart, longhaul.ToolStartData{ToolCallID: "call_1", Name: "web_fetch", Arguments: call.Arguments}),
		ev(longhaul.EventToolOutput, longhaul.ToolOutputData{ToolCallID: "call_1", Name: "web_fetch", Output: "act text"}),
		ev(longhaul.EventContent, longhaul.ContentData{Text: "Briefing: the act bans social scoring.", Call: "turn-2"}),
		ev(longhaul.EventUsage, usage(30, 10)),
		ev(longhaul.EventDone, longhaul.DoneData{Status: contract.StatusCompleted, FinishReason: "stop"}),
	), h.events())
	st := h.state()
	diff(t, "state", contract.RunState{
		Agent: "assistant", User: "u1", Status: contract.StatusCompleted,
		Mode: contract.ModeSkill, Skill: "briefing", Dispatch: "the message starts with /briefing",
		Turns: 2, Usage: usage(30, 10), Result: "Briefing: the act bans social scoring.",
		Calls: []contract.CallUsage{{Call: "turn-1", Model: "test-model", Usage: usage(10, 2)}, {Call: "turn-2", Model: "test-model-v2", Usage: usage(20, 8)}},
	}, st)
}

// TestSlashCommandNotASkill: a message that starts with a slash but names
// no skill of the agent is an ordinary chat message, kept as it is.
func TestSlashCommandNotASkill(t *testing.T) {
	for _, text := range []string{"/unknown EU AI act", "/briefingx EU AI act", "/ on its own"} {
		t.Run(text, func(t *testing.T) {
			h := newHarness(t)
			s := spec
			s.Skills = []contract.SkillSpec{briefing}
			h.resolve(s)
			h.scriptModel(answer("A chat answer.", usage(1, 1))).Once()
			msgs := []longhaul.Message{{Role: longhaul.RoleUser, Content: text}}
			h.run(input(msgs...))

			reqs := h.modelCallsN(1)
			if r := reqs[0]; r.Skill != "" || r.Call != "turn-1" {
				t.Errorf("model request: Skill %q, Call %q; want the chat loop", r.Skill, r.Call)
			}
			diff(t, "messages", msgs, reqs[0].Messages)
			diff(t, "tools", s.Tools, reqs[0].Tools)
			if st := h.state(); st.Mode != contract.ModeChat || st.Skill != "" {
				t.Errorf("state: Mode %q, Skill %q; want chat and no skill", st.Mode, st.Skill)
			}
		})
	}
}

// TestBackgroundTaskSkipsDispatch: a client's background request is one
// model call without the prompt, even for an auto agent: no classification,
// no plan.
func TestBackgroundTaskSkipsDispatch(t *testing.T) {
	h := newHarness(t)
	p := newPipeline(h)
	s := researcher
	s.Mode = "auto"
	h.resolve(s)
	h.scriptModel(answer(`{"title":"EU AI act"}`, usage(5, 3))).Once()
	p.onClassify().Maybe()
	p.onPlan().Maybe()
	task := []longhaul.Message{{Role: longhaul.RoleUser, Content: "### Task:\nGenerate a concise title."}}
	in := input(task...)
	in.Background = true
	h.run(in)

	diff(t, "model requests", []contract.ModelRequest{{
		Call: "task", Agent: "assistant", Model: "test-model", Messages: task, NoPrompt: true, Publish: true,
	}}, h.modelCalls())
	if classify, plans, _, _, _ := p.calls(); len(classify)+len(plans) != 0 {
		t.Errorf("Classify called %d times, Plan %d times; want neither", len(classify), len(plans))
	}
	st := h.state()
	if st.Mode != contract.ModeTask || st.Turns != 1 || len(st.Plans) != 0 {
		t.Errorf("state: Mode %q, Turns %d, %d plans; want task, 1, none", st.Mode, st.Turns, len(st.Plans))
	}
}

// TestAutoDispatchChat: an auto agent whose classification says chat runs
// the chat loop and never plans; the state says why.
func TestAutoDispatchChat(t *testing.T) {
	h := newHarness(t)
	p := newPipeline(h)
	s := researcher
	s.Mode = "auto"
	h.resolve(s)
	p.onClassify(ok(contract.Dispatch{Mode: contract.ModeChat, Reason: "a greeting needs no plan", Usage: usage(7, 2)})).Once()
	p.onPlan().Maybe()
	h.scriptModel(answer("Hello!", usage(10, 1))).Once()
	h.run(input(hi...))

	if got := h.result().Content; got != "Hello!" {
		t.Errorf("Content = %q, want Hello!", got)
	}
	classify, plans, _, _, _ := p.calls()
	diff(t, "classify requests", []contract.ClassifyRequest{{Caller: assistantCaller, Messages: hi}}, classify)
	if len(plans) != 0 {
		t.Errorf("Plan called %d times, want 0", len(plans))
	}
	if reqs := h.modelCalls(); len(reqs) != 1 || reqs[0].Call != "turn-1" {
		t.Errorf("model requests %+v, want the chat loop's turn-1", reqs)
	}
	diff(t, "state", contract.RunState{
		Agent: "assistant", User: "u1", Status: contract.StatusCompleted,
		Mode: contract.ModeChat, Dispatch: "a greeting needs no plan", Turns: 1,
		Calls:  []contract.CallUsage{{Call: "dispatch", Model: "test-model", Usage: usage(7, 2)}, {Call: "turn-1", Model: "test-model", Usage: usage(10, 1)}},
		Usage:  usage(17, 3),
		Result: "Hello!",
	}, h.state())
}

// TestAutoDispatchFailureChats: when the classification fails, the request
// runs as a chat instead of failing.
func TestAutoDispatchFailureChats(t *testing.T) {
	h := newHarness(t)
	p := newPipeline(h)
	s := researcher
	s.Mode = "auto"
	h.resolve(s)
	p.onClassify(fail[contract.Dispatch](temporal.NewNonRetryableApplicationError("dispatch: unexpected end of JSON input", longhaul.ErrTypeModelBadOutput, nil))).Once()
	p.onPlan().Maybe()
	h.scriptModel(answer("Hello!", usage(10, 1))).Once()
	h.run(input(hi...))

	st := h.state()
	if st.Status != contract.StatusCompleted || st.Mode != contract.ModeChat {
		t.Errorf("state: Status %q, Mode %q; want completed, chat", st.Status, st.Mode)
	}
	if want := "the classification failed (dispatch: unexpected end of JSON input), so the request runs as a chat"; st.Dispatch != want {
		t.Errorf("Dispatch = %q, want %q", st.Dispatch, want)
	}
}

// TestAutoDispatchAgentic: an auto agent whose classification says agentic
// plans.
func TestAutoDispatchAgentic(t *testing.T) {
	h := newHarness(t)
	p := newPipeline(h)
	s := researcher
	s.Mode = "auto"
	h.resolve(s)
	p.onClassify(ok(contract.Dispatch{Mode: contract.ModeAgentic, Reason: "research across sources"})).Once()
	p.onPlan(planned(goal, answerStep)).Once()
	p.onSupervisePlan(planOK).Once()
	h.scriptModel(answer("Nothing changed.", usage(10, 3))).Once()
	h.run(input(question...))

	if got := h.result().Content; got != "Nothing changed." {
		t.Errorf("Content = %q", got)
	}
	plans := p.planRequests()
	if len(plans) != 1 || plans[0].Revision != 1 {
		t.Fatalf("plan requests %+v, want revision 1 once", plans)
	}
	if reqs := h.modelCalls(); len(reqs) != 1 || reqs[0].Call != "answer" {
		t.Errorf("model requests %+v, want the completion step's answer", reqs)
	}
	st := h.state()
	if st.Mode != contract.ModeAgentic || st.Dispatch != "research across sources" || len(st.Plans) != 1 {
		t.Errorf("state: Mode %q, Dispatch %q, %d plans; want agentic, the classifier's reason, 1", st.Mode, st.Dispatch, len(st.Plans))
	}
}

// TestAgenticRun follows a simple plan — one tool step, then the answer —
// through the requests each activity gets, the event log, the state and the
// current details.
func TestAgenticRun(t *testing.T) {
	h := newHarness(t)
	p := newPipeline(h)
	h.resolve(researcher)
	p.onPlan(ok(contract.PlanResponse{Goal: goal, Steps: []longhaul.PlanStep{fetchAct, answerStep}, Usage: usage(100, 40)})).Once()
	p.onSupervisePlan(planOK).Once()
	p.onReviewStep(ok(contract.StepReview{Decision: longhaul.ReviewOK, Reason: "the act was read", Usage: usage(50, 5)})).Once()
	p.onTool("step-1", contract.ToolResponse{Content: "Article 5 bans social scoring."}, nil).Once()
	const final = "The act bans social scoring (Article 5)."
	h.scriptModel(answer(final, usage(200, 30))).Once()
	h.run(input(question...))

	total := usage(350, 75)
	diff(t, "result", contract.AgentResult{
		Content: final, FinishReason: "stop", Messages: []longhaul.Message{assistant(final)},
		Usage: total, Model: "test-model-v2", LastOffset: 12,
	}, h.result())

	_, plans, checks, reviews, tools := p.calls()
	diff(t, "plan requests", []contract.PlanRequest{{
		Caller: assistantCaller, Messages: question, Tools: researcher.Tools, Skills: researcher.Skills,
		MaxSteps: contract.DefaultMaxPlanSteps, Revision: 1,
	}}, plans)
	v1 := longhaul.Plan{Revision: 1, Reason: "initial plan", Goal: goal, Steps: []longhaul.PlanStep{
		as(fetchAct, "1", longhaul.StepPending), as(answerStep, "2", longhaul.StepPending),
	}}
	diff(t, "plan check requests", []contract.PlanCheckRequest{{
		Caller: assistantCaller, Messages: question, Plan: v1,
		Tools: researcher.Tools, Skills: researcher.Skills, MaxSteps: contract.DefaultMaxPlanSteps,
	}}, checks)
	fetched := as(fetchAct, "1", longhaul.StepDone, "Article 5 bans social scoring.")
	reviewed := v1
	reviewed.Steps = []longhaul.PlanStep{fetched, as(answerStep, "2", longhaul.StepPending)}
	diff(t, "step review requests", []contract.StepReviewRequest{{
		Caller: assistantCaller, Messages: question, Plan: reviewed, Step: fetched,
	}}, reviews)
	diff(t, "tool requests", []contract.ToolRequest{{
		Call:      longhaul.ToolCall{ID: "step-1", Name: "web_fetch", Arguments: string(fetchAct.Arguments)},
		Agent:     "assistant",
		Seq:       1,
		After:     4,
		User:      "u1",
		Principal: u1,
	}}, tools)

	reqs := h.modelCallsN(1)
	ans := reqs[0]
	diff(t, "answer request", contract.ModelRequest{
		Call: "answer", Agent: "assistant", Model: "test-model", Messages: question, Publish: true, After: 8,
	}, ans, cmpopts.IgnoreFields(contract.ModelRequest{}, "Instructions", "Findings"))
	for _, want := range []string{goal, "The answer must: list the changes", "## Step 1: tool web_fetch — Read the act (eur-lex.europa.eu)", "Article 5 bans social scoring."} {
		if !strings.Contains(answerText(ans), want) {
			t.Errorf("answer instructions lack %q:\n%s", want, answerText(ans))
		}
	}

	evs := h.events()
	diff(t, "event types", readThenAnswer, eventTypes(evs))
	okReview := longhaul.ReviewData{StepID: "1", Revision: 1, Decision: longhaul.ReviewOK, Reason: "the act was read", ReplansRemaining: 2}
	diffEvents(t, logOf(
		ev(longhaul.EventThinking, longhaul.ThinkingData{Message: "Planning"}),
		ev(longhaul.EventPlan, v1),
		ev(longhaul.EventStepStart, longhaul.StepStartData{StepID: "1", Index: 1, Total: 2, Kind: longhaul.StepTool, Target: "web_fetch", Title: "Read the act", About: "eur-lex.europa.eu"}),
		ev(longhaul.EventToolStart, longhaul.ToolStartData{ToolCallID: "step-1", Name: "web_fetch", Arguments: string(fetchAct.Arguments), Target: "eur-lex.europa.eu"}),
		ev(longhaul.EventToolOutput, longhaul.ToolOutputData{ToolCallID: "step-1", Name: "web_fetch", Output: "Article 5 bans social scoring."}),
		ev(longhaul.EventStepResult, longhaul.StepResultData{StepID: "1", Status: longhaul.StepDone, Output: "Article 5 bans social scoring."}),
		ev(longhaul.EventReview, okReview),
		ev(longhaul.EventStepStart, longhaul.StepStartData{StepID: "2", Index: 2, Total: 2, Kind: longhaul.StepCompletion, Title: "Answer"}),
		ev(longhaul.EventContent, longhaul.ContentData{Text: final, Call: "answer"}),
		ev(longhaul.EventStepResult, longhaul.StepResultData{StepID: "2", Status: longhaul.StepDone, Output: final}),
		ev(longhaul.EventUsage, total),
		ev(longhaul.EventDone, longhaul.DoneData{Status: contract.StatusCompleted, FinishReason: "stop"}),
	), evs)

	done := v1
	done.Steps = []longhaul.PlanStep{fetched, as(answerStep, "2", longhaul.StepDone, final)}
	diff(t, "state", contract.RunState{
		Agent: "assistant", User: "u1", Status: contract.StatusCompleted,
		Mode: contract.ModeAgentic, Dispatch: "the agent always plans", Turns: 1,
		Plans:            []contract.PlanRevision{{Plan: done, Status: contract.PlanDone}},
		Reviews:          []longhaul.ReviewData{okReview},
		ReplansRemaining: 2,
		Calls: []contract.CallUsage{
			{Call: "plan-v1", Model: "test-model", Usage: usage(100, 40)},
			{Call: "review-step-1", Model: "test-model", Usage: usage(50, 5)},
			{Call: "answer", Model: "test-model", Usage: usage(200, 30)},
		},
		Usage:  total,
		Result: final,
	}, h.state())

	diff(t, "current details", "**Plan v1** — "+goal+"\n\n"+
		"- [x] 1. tool `web_fetch` — Read the act (eur-lex.europa.eu)\n"+
		"- [x] 2. Answer\n", h.currentDetails())
}

// TestCurrentDetailsWhileRunning checks the checklist in the current details
// marks the running step while it runs.
func TestCurrentDetailsWhileRunning(t *testing.T) {
	h := newHarness(t)
	p := newPipeline(h)
	h.resolve(researcher)
	p.onPlan(planned(goal, fetchAct, answerStep)).Once()
	p.onSupervisePlan(planOK).Once()
	p.onReviewStep(stepOK("fine")).Once()
	p.onTool("step-1", contract.ToolResponse{Content: "text"}, nil).After(10 * time.Second).Once()
	h.scriptModel(answer("Done.", usage(1, 1))).Once()
	var running string
	h.env.RegisterDelayedCallback(func() { running = h.currentDetails() }, 5*time.Second)
	h.run(input(question...))

	diff(t, "current details during step 1", "**Plan v1** — "+goal+"\n\n"+
		"- [ ] 1. tool `web_fetch` — Read the act (eur-lex.europa.eu) — **running**\n"+
		"- [ ] 2. Answer\n", running)
}

// TestInvalidPlanIsReplanned: a plan the supervisor rejects goes back to
// the planner with the problems, within the re-plan budget.
func TestInvalidPlanIsReplanned(t *testing.T) {
	h := newHarness(t)
	p := newPipeline(h)
	h.resolve(researcher)
	shell := longhaul.PlanStep{Kind: longhaul.StepTool, Target: "shell", Title: "Look around", Arguments: json.RawMessage(`{}`)}
	problem := `step 1 calls tool "shell", which is not available here (available: current_time, web_fetch)`
	p.onPlan(planned(goal, shell, answerStep), planned(goal, answerStep)).Twice()
	p.onSupervisePlan(ok(contract.PlanCheck{Problems: []string{problem}}), planOK).Twice()
	p.onReviewStep().Maybe()
	h.scriptModel(answer("Nothing changed.", usage(10, 3))).Once()
	h.run(input(question...))

	if got := h.result().Content; got != "Nothing changed." {
		t.Errorf("Content = %q", got)
	}
	plans := p.planRequests()
	if len(plans) != 2 {
		t.Fatalf("Plan called %d times, want 2", len(plans))
	}
	second := plans[1]
	if second.Revision != 2 || !strings.Contains(second.Feedback, problem) || second.Previous != nil || len(second.Done) != 0 {
		t.Errorf("second plan request: Revision %d, Feedback %q, Previous %v, Done %v; want 2, the problem, no previous plan, nothing done",
			second.Revision, second.Feedback, second.Previous, second.Done)
	}

	rejection := longhaul.ReviewData{Revision: 1, Decision: longhaul.ReviewAdjust, Reason: problem, ReplansRemaining: 1}
	st := h.state()
	v2 := longhaul.Plan{Revision: 2, Reason: "plan v1 was rejected: " + problem, Goal: goal, Steps: []longhaul.PlanStep{
		as(answerStep, "3", longhaul.StepDone, "Nothing changed."),
	}}
	diff(t, "plans", []contract.PlanRevision{
		{Plan: longhaul.Plan{Revision: 1, Reason: "initial plan", Goal: goal, Steps: []longhaul.PlanStep{
			as(shell, "1", longhaul.StepPending), as(answerStep, "2", longhaul.StepPending),
		}}, Status: contract.PlanRejected, Problems: []string{problem}},
		{Plan: v2, Status: contract.PlanDone},
	}, st.Plans)
	diff(t, "reviews", []longhaul.ReviewData{rejection}, st.Reviews)
	if st.ReplansRemaining != 1 {
		t.Errorf("ReplansRemaining = %d, want 1", st.ReplansRemaining)
	}

	evs := h.events()
	diff(t, "event types", []longhaul.EventType{
		longhaul.EventThinking, longhaul.EventReview, longhaul.EventThinking, longhaul.EventPlan,
		longhaul.EventStepStart, longhaul.EventContent, longhaul.EventStepResult, longhaul.EventUsage, longhaul.EventDone,
	}, eventTypes(evs))
	diff(t, "thinking", []longhaul.ThinkingData{{Message: "Planning"}, {Message: "Re-planning (plan v2)"}},
		payloads[longhaul.ThinkingData](t, evs, longhaul.EventThinking))
	diff(t, "review events", []longhaul.ReviewData{rejection}, payloads[longhaul.ReviewData](t, evs, longhaul.EventReview))
	if got := payloads[longhaul.Plan](t, evs, longhaul.EventPlan); len(got) != 1 || got[0].Revision != 2 {
		t.Errorf("plan events %+v, want one for revision 2", got)
	}
	if d := h.currentDetails(); !strings.HasPrefix(d, "**Plan v2** — "+goal+"\n\n_Revised: plan v1 was rejected: ") {
		t.Errorf("current details %q, want plan v2 with why it was revised", d)
	}
}

// TestAdjustReplansKeepingFinishedSteps: a step review asking for a change
// re-plans what remains; the finished step and its result are kept, the
// steps that did not run are dropped, and the new steps run.
func TestAdjustReplansKeepingFinishedSteps(t *testing.T) {
	h := newHarness(t)
	p := newPipeline(h)
	h.resolve(researcher)
	const (
		empty  = "404 page not found"
		news   = "The act was amended in 2025."
		final  = "The act was amended in 2025."
		adjust = "the page was not found; read a news report instead"
	)
	p.onPlan(planned(goal, fetchAct, answerStep), planned(goal, fetchNews, answerStep)).Twice()
	p.onSupervisePlan(planOK, planOK).Twice()
	p.onReviewStep(stepAdjust(adjust), stepOK("the news report has it")).Twice()
	p.onTool("step-1", contract.ToolResponse{Content: empty}, nil).Once()
	p.onTool("step-3", contract.ToolResponse{Content: news}, nil).Once()
	h.scriptModel(answer(final, usage(10, 5))).Once()
	h.run(input(question...))

	if got := h.result().Content; got != final {
		t.Errorf("Content = %q, want %q", got, final)
	}
	kept := as(fetchAct, "1", longhaul.StepDone, empty)
	v1 := longhaul.Plan{Revision: 1, Reason: "initial plan", Goal: goal, Steps: []longhaul.PlanStep{kept, as(answerStep, "2", longhaul.StepPending)}}

	plans := p.planRequests()
	if len(plans) != 2 {
		t.Fatalf("Plan called %d times, want 2", len(plans))
	}
	diff(t, "second plan request", contract.PlanRequest{
		Caller: assistantCaller, Messages: question, Tools: researcher.Tools, Skills: researcher.Skills,
		MaxSteps: contract.DefaultMaxPlanSteps, Revision: 2,
		Done:     []longhaul.PlanStep{kept},
		Previous: &v1,
		Feedback: "the review of step 1 asked for a change: " + adjust,
	}, plans[1])
	_, _, checks, _, _ := p.calls()
	if len(checks) != 2 {
		t.Fatalf("SupervisePlan called %d times, want 2", len(checks))
	}
	diff(t, "second plan checked", []longhaul.PlanStep{kept, as(fetchNews, "3", longhaul.StepPending), as(answerStep, "4", longhaul.StepPending)}, checks[1].Plan.Steps)
	diff(t, "tool calls", []string{"step-1", "step-3"}, toolIDs(p.toolRequests()))

	st := h.state()
	replaced := v1
	replaced.Steps = []longhaul.PlanStep{kept, as(answerStep, "2", longhaul.StepDropped)}
	diff(t, "plans", []contract.PlanRevision{
		{Plan: replaced, Status: contract.PlanReplaced},
		{Plan: longhaul.Plan{Revision: 2, Reason: "review of step 1: " + adjust, Goal: goal, Steps: []longhaul.PlanStep{
			kept, as(fetchNews, "3", longhaul.StepDone, news), as(answerStep, "4", longhaul.StepDone, final),
		}}, Status: contract.PlanDone},
	}, st.Plans)
	diff(t, "reviews", []longhaul.ReviewData{
		{StepID: "1", Revision: 1, Decision: longhaul.ReviewAdjust, Reason: adjust, ReplansRemaining: 1},
		{StepID: "3", Revision: 2, Decision: longhaul.ReviewOK, Reason: "the news report has it", ReplansRemaining: 1},
	}, st.Reviews)

	reqs := h.modelCalls()
	if len(reqs) != 1 || reqs[0].Call != "answer" {
		t.Fatalf("model requests %+v, want the answer only", reqs)
	}
	for _, want := range []string{"## Step 1: tool web_fetch", empty, "## Step 3: tool web_fetch — Read the news", news} {
		if !strings.Contains(answerText(reqs[0]), want) {
			t.Errorf("answer instructions lack %q:\n%s", want, answerText(reqs[0]))
		}
	}

	evs := h.events()
	diff(t, "event types", []longhaul.EventType{
		longhaul.EventThinking, longhaul.EventPlan,
		longhaul.EventStepStart, longhaul.EventToolStart, longhaul.EventToolOutput, longhaul.EventStepResult, longhaul.EventReview,
		longhaul.EventThinking, longhaul.EventPlan,
		longhaul.EventStepStart, longhaul.EventToolStart, longhaul.EventToolOutput, longhaul.EventStepResult, longhaul.EventReview,
		longhaul.EventStepStart, longhaul.EventContent, longhaul.EventStepResult,
		longhaul.EventUsage, longhaul.EventDone,
	}, eventTypes(evs))
	starts := payloads[longhaul.StepStartData](t, evs, longhaul.EventStepStart)
	if len(starts) == 3 {
		// The kept step counts in the new plan's positions.
		diff(t, "step 3 start", longhaul.StepStartData{StepID: "3", Index: 2, Total: 3, Kind: longhaul.StepTool, Target: "web_fetch", Title: "Read the news", About: "news.example"}, starts[1])
	}
	diff(t, "current details", "**Plan v2** — "+goal+"\n\n"+
		"_Revised: review of step 1: "+adjust+"_\n\n"+
		"- [x] 1. tool `web_fetch` — Read the act (eur-lex.europa.eu)\n"+
		"- [x] 2. tool `web_fetch` — Read the news (news.example)\n"+
		"- [x] 3. Answer\n", h.currentDetails())
}

func toolIDs(reqs []contract.ToolRequest) []string {
	ids := make([]string, len(reqs))
	for i, r := range reqs {
		ids[i] = r.Call.ID
	}
	return ids
}

// TestAdjustWithoutBudgetIsForced: with no re-plan budget, an adjust is
// recorded as forced and the run goes on with its plan.
func TestAdjustWithoutBudgetIsForced(t *testing.T) {
	h := newHarness(t)
	p := newPipeline(h)
	s := researcher
	s.MaxReplans = 0
	h.resolve(s)
	p.onPlan(planned(goal, fetchAct, answerStep)).Once()
	p.onSupervisePlan(planOK).Once()
	p.onReviewStep(stepAdjust("the page was not found")).Once()
	p.onTool("step-1", contract.ToolResponse{Content: "404"}, nil).Once()
	h.scriptModel(answer("I could not read the act.", usage(10, 5))).Once()
	h.run(input(question...))

	if got := h.result().Content; got != "I could not read the act." {
		t.Errorf("Content = %q", got)
	}
	if n := len(p.planRequests()); n != 1 {
		t.Errorf("Plan called %d times, want 1", n)
	}
	evs := h.events()
	diff(t, "event types", []longhaul.EventType{
		longhaul.EventThinking, longhaul.EventPlan,
		longhaul.EventStepStart, longhaul.EventToolStart, longhaul.EventToolOutput, longhaul.EventStepResult,
		longhaul.EventReview, longhaul.EventThinking,
		longhaul.EventStepStart, longhaul.EventContent, longhaul.EventStepResult,
		longhaul.EventUsage, longhaul.EventDone,
	}, eventTypes(evs))
	forced := longhaul.ReviewData{StepID: "1", Revision: 1, Decision: longhaul.ReviewAdjust, Reason: "the page was not found", Forced: true}
	diff(t, "review events", []longhaul.ReviewData{forced}, payloads[longhaul.ReviewData](t, evs, longhaul.EventReview))
	diff(t, "thinking", []longhaul.ThinkingData{{Message: "Planning"}, {Message: "The re-plan budget is used up; continuing with the current plan"}},
		payloads[longhaul.ThinkingData](t, evs, longhaul.EventThinking))
	st := h.state()
	if len(st.Plans) != 1 || st.Plans[0].Status != contract.PlanDone || st.ReplansRemaining != 0 {
		t.Errorf("state: plans %+v, ReplansRemaining %d; want one done plan, 0", st.Plans, st.ReplansRemaining)
	}
}

// TestReplanBudgetSpentThenForced: the first adjust spends the last re-plan;
// the next one is forced and the revised plan runs to its end.
func TestReplanBudgetSpentThenForced(t *testing.T) {
	h := newHarness(t)
	p := newPipeline(h)
	s := researcher
	s.MaxReplans = 1
	h.resolve(s)
	p.onPlan(planned(goal, fetchAct, answerStep), planned(goal, fetchNews, answerStep)).Twice()
	p.onSupervisePlan(planOK, planOK).Twice()
	p.onReviewStep(stepAdjust("not found"), stepAdjust("still thin")).Twice()
	p.onTool("step-1", contract.ToolResponse{Content: "404"}, nil).Once()
	p.onTool("step-3", contract.ToolResponse{Content: "a short report"}, nil).Once()
	h.scriptModel(answer("Little is known.", usage(10, 5))).Once()
	h.run(input(question...))

	if got := h.result().Content; got != "Little is known." {
		t.Errorf("Content = %q", got)
	}
	diff(t, "reviews", []longhaul.ReviewData{
		{StepID: "1", Revision: 1, Decision: longhaul.ReviewAdjust, Reason: "not found", ReplansRemaining: 0},
		{StepID: "3", Revision: 2, Decision: longhaul.ReviewAdjust, Reason: "still thin", ReplansRemaining: 0, Forced: true},
	}, h.state().Reviews)
	if n := len(p.planRequests()); n != 2 {
		t.Errorf("Plan called %d times, want 2", n)
	}
}

// readThenBrief scripts a researcher whose one skill is sk through the
// plan fetchAct, briefStep (sk's loop), answerStep: the plan passes its
// check, step 1 reads Article 5 and both steps pass their reviews. The
// test scripts the model calls: the skill's turns, then the answer.
func readThenBrief(t *testing.T, sk contract.SkillSpec) (*harness, *pipeline) {
	h := newHarness(t)
	p := newPipeline(h)
	s := researcher
	s.Skills = []contract.SkillSpec{sk}
	h.resolve(s)
	p.onPlan(planned(goal, fetchAct, briefStep, answerStep)).Once()
	p.onSupervisePlan(planOK).Once()
	p.onReviewStep(stepOK("read"), stepOK("a good briefing")).Twice()
	p.onTool("step-1", contract.ToolResponse{Content: "Article 5 bans social scoring."}, nil).Once()
	return h, p
}

// TestSkillStepLoop: a skill step runs the skill's own tool loop, limited
// to the skill's tools and turns, on the step's task; its answer is the
// step's result and stays out of the run's answer text.
func TestSkillStepLoop(t *testing.T) {
	sk := briefing
	sk.MaxTurns = 1
	sk.Model = "briefing-model"
	h, p := readThenBrief(t, sk)
	fetch := longhaul.ToolCall{ID: "call_1", Name: "web_fetch", Arguments: `{"url":"https://news.example/ai-act"}`}
	ask := askTools("Let me read the news.", usage(10, 2), fetch)
	ask.resp.Targets = map[string]string{"call_1": "news.example"}
	const brief = "Briefing: social scoring is banned; fines up to 7%."
	h.scriptModel(
		ask,
		answer(brief, usage(20, 10)),
		answer("Final answer.", usage(30, 5)),
	).Times(3)
	p.onTool("call_1", contract.ToolResponse{Content: "news text"}, nil).Once()
	h.run(input(question...))

	if got := h.result().Content; got != "Final answer." {
		t.Errorf("Content = %q", got)
	}
	reqs := h.modelCallsN(3)
	task := []longhaul.Message{{Role: longhaul.RoleUser, Content: briefStep.Input}}
	first := reqs[0]
	diff(t, "skill's first model request", contract.ModelRequest{
		Call: "step-2-turn-1", Agent: "assistant", Model: "briefing-model", Messages: task,
		Tools: sk.Tools, Skill: "briefing", After: 8, NextCall: 2, // step 1's tool call was the first
	}, first, cmpopts.IgnoreFields(contract.ModelRequest{}, "Instructions"))
	for _, want := range []string{"step 2 of 3", goal, "This step: Brief on the act", "It succeeds when: a briefing with sources", "## Step 1: tool web_fetch", "Article 5 bans social scoring."} {
		if !strings.Contains(first.Instructions, want) {
			t.Errorf("skill instructions lack %q:\n%s", want, first.Instructions)
		}
	}
	// MaxTurns 1: the second turn offers no tools and asks for the answer.
	second := reqs[1]
	if second.Call != "step-2-turn-2" || second.Skill != "briefing" || len(second.Tools) != 0 || second.Instructions != first.Instructions {
		t.Errorf("skill's second model request: Call %q, Skill %q, Tools %v, same instructions %v; want step-2-turn-2, briefing, none, true",
			second.Call, second.Skill, second.Tools, second.Instructions == first.Instructions)
	}
	if n := len(second.Messages); n != 3 || !second.Final {
		t.Errorf("skill's second model request messages %+v, Final %v; want the task, the call, its result, and Final (the max-turns prompt)", second.Messages, second.Final)
	}
	diff(t, "tool requests", []contract.ToolRequest{
		{Call: longhaul.ToolCall{ID: "step-1", Name: "web_fetch", Arguments: string(fetchAct.Arguments)}, Agent: "assistant", Seq: 1, After: 4, User: "u1", Principal: u1},
		{Call: fetch, Agent: "assistant", Skill: sk.ID, Seq: 2, After: 10, User: "u1", Principal: u1},
	}, p.toolRequests())
	if !strings.Contains(answerText(reqs[2]), brief) || reqs[2].Call != "answer" {
		t.Errorf("answer request %q lacks the skill's briefing:\n%s", reqs[2].Call, answerText(reqs[2]))
	}

	evs := h.events()
	diff(t, "skill activity", []longhaul.SkillActivityData{
		{Skill: "briefing", StepID: "2", Message: "calling web_fetch news.example"},
		{Skill: "briefing", StepID: "2", Message: "finished"},
	}, payloads[longhaul.SkillActivityData](t, evs, longhaul.EventSkillActivity))
	results := payloads[longhaul.StepResultData](t, evs, longhaul.EventStepResult)
	if len(results) != 3 {
		t.Fatalf("%d step results, want 3", len(results))
	}
	diff(t, "skill step result", longhaul.StepResultData{StepID: "2", Status: longhaul.StepDone, Output: brief}, results[1])
	// Only the completion step's text is the run's answer.
	diff(t, "content", []longhaul.ContentData{{Text: "Final answer.", Call: "answer"}},
		payloads[longhaul.ContentData](t, evs, longhaul.EventContent))

	st := h.state()
	if len(st.Plans) != 1 || len(st.Plans[0].Steps) != 3 {
		t.Fatalf("plans %+v, want one of three steps", st.Plans)
	}
	if got := st.Plans[0].Steps[1]; got.Status != longhaul.StepDone || got.Result != brief {
		t.Errorf("skill step in state: %+v, want done with the briefing", got)
	}
	if st.Turns != 1 {
		t.Errorf("Turns = %d, want 1 (a skill step's turns are its own)", st.Turns)
	}
	calls := make([]string, len(st.Calls))
	for i, c := range st.Calls {
		calls[i] = c.Call
	}
	diff(t, "calls", []string{"step-2-turn-1", "step-2-turn-2", "answer"}, calls)
}

// TestSkillStepToolOutOfScope: a skill step's loop asking for a tool outside
// the skill's scope gets the refusal as the tool's result and goes on.
func TestSkillStepToolOutOfScope(t *testing.T) {
	h := newHarness(t)
	p := newPipeline(h)
	h.resolve(researcher)
	p.onPlan(planned(goal, briefStep, answerStep)).Once()
	p.onSupervisePlan(planOK).Once()
	p.onReviewStep(stepOK("fine")).Once()
	clock := longhaul.ToolCall{ID: "call_1", Name: "current_time", Arguments: `{}`}
	refusal := `tool "current_time" is not allowed here (allowed: [web_fetch])`
	p.onTool("call_1", contract.ToolResponse{}, temporal.NewNonRetryableApplicationError(refusal, longhaul.ErrTypeToolRefused, nil)).Once()
	h.scriptModel(
		askTools("", usage(1, 1), clock),
		answer("Briefing without the date.", usage(1, 1)),
		answer("Final answer.", usage(1, 1)),
	).Times(3)
	h.run(input(question...))

	if got := h.result().Content; got != "Final answer." {
		t.Errorf("Content = %q", got)
	}
	diff(t, "tool requests", []contract.ToolRequest{{Call: clock, Agent: "assistant", Skill: "briefing", Seq: 1, After: 5, User: "u1", Principal: u1}}, p.toolRequests())
	reqs := h.modelCallsN(3)
	fedBack := reqs[1].Messages[len(reqs[1].Messages)-1]
	diff(t, "tool message fed back", longhaul.Message{Role: longhaul.RoleTool, Name: "current_time", ToolCallID: "call_1", Content: "error: " + refusal}, fedBack)
	evs := h.events()
	diff(t, "tool output", []longhaul.ToolOutputData{{ToolCallID: "call_1", Name: "current_time", Output: "error: " + refusal, Error: true}},
		payloads[longhaul.ToolOutputData](t, evs, longhaul.EventToolOutput))
	st := h.state()
	if st.Status != contract.StatusCompleted || len(st.Plans) != 1 {
		t.Fatalf("state: Status %q, plans %+v; want completed, one plan", st.Status, st.Plans)
	}
	if got := st.Plans[0].Steps[0]; got.Status != longhaul.StepDone || got.Result != "Briefing without the date." {
		t.Errorf("skill step %+v, want done with the skill's answer", got)
	}
}

// TestNoValidPlanFallsBackToChat: when no plan passes the checks within the
// budget, the run answers with the chat loop instead, and says so. A
// planner answer that is not a plan counts as a rejected plan.
func TestNoValidPlanFallsBackToChat(t *testing.T) {
	h := newHarness(t)
	p := newPipeline(h)
	s := researcher
	s.MaxReplans = 1
	h.resolve(s)
	badOutput := "plan: unexpected end of JSON input"
	p.onPlan(
		planned(goal, fetchAct),
		fail[contract.PlanResponse](temporal.NewNonRetryableApplicationError(badOutput, longhaul.ErrTypeModelBadOutput, nil)),
	).Twice()
	p.onSupervisePlan(ok(contract.PlanCheck{Problems: []string{"the last step must be the completion step that writes the answer"}})).Once()
	p.onReviewStep().Maybe()
	h.scriptModel(answer("A direct answer.", usage(10, 5))).Once()
	h.run(input(question...))

	if got := h.result().Content; got != "A direct answer." {
		t.Errorf("Content = %q", got)
	}
	reqs := h.modelCalls()
	if len(reqs) != 1 || reqs[0].Call != "turn-1" {
		t.Fatalf("model requests %+v, want the chat loop's turn-1", reqs)
	}
	diff(t, "chat tools", researcher.Tools, reqs[0].Tools)
	diff(t, "chat messages", question, reqs[0].Messages)

	evs := h.events()
	diff(t, "event types", []longhaul.EventType{
		longhaul.EventThinking, longhaul.EventReview, longhaul.EventThinking, longhaul.EventReview, longhaul.EventThinking,
		longhaul.EventContent, longhaul.EventUsage, longhaul.EventDone,
	}, eventTypes(evs))
	diff(t, "thinking", []longhaul.ThinkingData{
		{Message: "Planning"}, {Message: "Re-planning (plan v2)"},
		{Message: "No valid plan within the re-plan budget; answering directly instead"},
	}, payloads[longhaul.ThinkingData](t, evs, longhaul.EventThinking))
	diff(t, "reviews", []longhaul.ReviewData{
		{Revision: 1, Decision: longhaul.ReviewAdjust, Reason: "the last step must be the completion step that writes the answer", ReplansRemaining: 0},
		{Revision: 2, Decision: longhaul.ReviewAdjust, Reason: badOutput, ReplansRemaining: 0},
	}, payloads[longhaul.ReviewData](t, evs, longhaul.EventReview))
	st := h.state()
	if len(st.Plans) != 2 || st.Plans[0].Status != contract.PlanRejected || st.Plans[1].Status != contract.PlanRejected {
		t.Errorf("plans %+v, want two rejected", st.Plans)
	}
	if st.Mode != contract.ModeChat || !strings.Contains(st.Dispatch, "no valid plan") {
		t.Errorf("mode %q, dispatch %q; want chat, saying no plan was valid", st.Mode, st.Dispatch)
	}
	if d := h.currentDetails(); d != "" {
		t.Errorf("current details %q, want none without a plan", d)
	}
}

// TestResponseFormatAnswersOnly: a request's response_format and forced
// tool_choice shape the call that answers the client, never a plan step's
// loop, whose result the plan reads; the answer in JSON is not streamed.
func TestResponseFormatAnswersOnly(t *testing.T) {
	sk := briefing
	sk.MaxTurns = 1
	h, _ := readThenBrief(t, sk)
	h.scriptModel(answer("Briefing.", usage(1, 1)), answer(`{"answer":"banned"}`, usage(1, 1))).Twice()
	in := input(question...)
	in.Options.ResponseFormat = &longhaul.ResponseFormat{Type: longhaul.FormatJSONObject}
	in.Options.ToolChoice = json.RawMessage(`"required"`)
	h.run(in)

	reqs := h.modelCalls()
	if len(reqs) != 2 || reqs[1].Call != "answer" {
		t.Fatalf("model calls %+v", reqs)
	}
	if step := reqs[0].Options; step.ResponseFormat != nil || step.ToolChoice != nil {
		t.Errorf("the plan step's call got response_format %+v, tool_choice %s", step.ResponseFormat, step.ToolChoice)
	}
	if ans := reqs[1]; ans.Options.ResponseFormat == nil || ans.Publish {
		t.Errorf("the answer: response_format %+v, published %v; want the format, not streamed", ans.Options.ResponseFormat, ans.Publish)
	}
}

// answerText is what an answer request tells the model beside the
// conversation: its instructions and its findings, one a step.
func answerText(req contract.ModelRequest) string {
	return req.Instructions + "\n\n" + strings.Join(req.Findings, "\n\n")
}
