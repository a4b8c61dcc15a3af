// Long because: the harness every workflow test in the package uses, beside the chat tool loop's tests.

package workflows_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/workflows"
	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// t0 is where the test environment's clock starts, so event times are known.
var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// spec is the agent the tests' ResolveAgent mock returns unless a test says
// otherwise.
var spec = contract.AgentSpec{
	ID:       "assistant",
	Mode:     "chat",
	Model:    "test-model",
	MaxTurns: 8,
	Tools:    []string{"current_time", "web_fetch"},
}

// harness runs AgentWorkflow in the SDK's test environment with the
// activities mocked, and records what the workflow asked the model.
type harness struct {
	t    *testing.T
	env  *testsuite.TestWorkflowEnvironment
	acts *activities.Activities

	mu       sync.Mutex // mock callbacks run on their own goroutines
	model    []contract.ModelRequest
	attempts []int32
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := s.NewTestWorkflowEnvironment()
	env.SetStartTime(t0)
	env.SetTestTimeout(time.Minute) // wall clock; -race is slow
	// The SDK calls a workflow that runs a second without yielding a
	// deadlock; on a loaded CI machine under -race a plain step can.
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: 30 * time.Second})
	h := &harness{t: t, env: env, acts: &activities.Activities{}}
	env.RegisterWorkflowWithOptions(workflows.AgentWorkflow, workflow.RegisterOptions{Name: contract.AgentWorkflowName})
	env.RegisterActivity(h.acts)
	t.Cleanup(func() { env.AssertExpectations(t) })
	return h
}

// suiteEnv runs the workflow fn, registered as name, in the SDK's test
// environment with the activities for mocking, and asserts the mocks'
// expectations when t ends.
func suiteEnv(t *testing.T, fn any, name string) (*testsuite.TestWorkflowEnvironment, *activities.Activities) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := s.NewTestWorkflowEnvironment()
	acts := &activities.Activities{}
	env.RegisterWorkflowWithOptions(fn, workflow.RegisterOptions{Name: name})
	env.RegisterActivity(acts)
	t.Cleanup(func() { env.AssertExpectations(t) })
	return env, acts
}

// u1 is the harness's user as tool calls carry it (allow: rules judge it).
var u1 = &longhaul.User{ID: "u1"}

// resolve mocks the ResolveAgent local activity (OnActivity mocks local
// activities too).
func (h *harness) resolve(s contract.AgentSpec) {
	h.env.OnActivity(h.acts.ResolveAgent, mock.Anything, s.ID, mock.Anything).Return(s, nil).Once()
}

// reply is one scripted answer of the model activity.
type reply struct {
	resp contract.ModelResponse
	err  error
}

func usage(prompt, completion int) longhaul.Usage {
	return longhaul.Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
}

func assistant(content string, calls ...longhaul.ToolCall) longhaul.Message {
	return longhaul.Message{Role: longhaul.RoleAssistant, Content: content, ToolCalls: calls}
}

func answer(content string, u longhaul.Usage) reply {
	return reply{resp: contract.ModelResponse{Message: assistant(content), FinishReason: "stop", Usage: u, Model: "test-model-v2"}}
}

func askTools(content string, u longhaul.Usage, calls ...longhaul.ToolCall) reply {
	return reply{resp: contract.ModelResponse{Message: assistant(content, calls...), FinishReason: "tool_calls", Usage: u, Model: "test-model-v2"}}
}

// scriptCallThenAnswer scripts a turn of two model calls: the first asks
// for call, using ask; the second answers text, using u.
func (h *harness) scriptCallThenAnswer(call longhaul.ToolCall, ask longhaul.Usage, text string, u longhaul.Usage) {
	h.scriptModel(askTools("", ask, call), answer(text, u)).Twice()
}

// scriptModel mocks ChatCompletion: attempt n (counting retries) gets
// replies[n]; an unscripted call fails the run.
func (h *harness) scriptModel(replies ...reply) *testsuite.MockCallWrapper {
	return h.env.OnActivity(h.acts.ChatCompletion, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, req contract.ModelRequest) (contract.ModelResponse, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			n := len(h.model)
			// The run's user rides on every call (allow: rules); the
			// tests' wants leave it out.
			req.Principal = nil
			h.model = append(h.model, req)
			h.attempts = append(h.attempts, activity.GetInfo(ctx).Attempt)
			if n >= len(replies) {
				return contract.ModelResponse{}, temporal.NewNonRetryableApplicationError(
					fmt.Sprintf("unscripted model call %d", n+1), "Unscripted", nil)
			}
			return replies[n].resp, replies[n].err
		})
}

// modelCalls returns the requests the model activity received, in order.
func (h *harness) modelCalls() []contract.ModelRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]contract.ModelRequest(nil), h.model...)
}

// modelCallsN is modelCalls, failing the test unless there are n.
func (h *harness) modelCallsN(n int) []contract.ModelRequest {
	h.t.Helper()
	reqs := h.modelCalls()
	if len(reqs) != n {
		h.t.Fatalf("model called %d times, want %d", len(reqs), n)
	}
	return reqs
}

// onTool mocks the CallTool activity for the call with the given id.
func (h *harness) onTool(id string, res contract.ToolResponse, err error) *testsuite.MockCallWrapper {
	match := mock.MatchedBy(func(r contract.ToolRequest) bool { return r.Call.ID == id })
	return h.env.OnActivity(h.acts.CallTool, mock.Anything, match).Return(res, err)
}

func (h *harness) run(in contract.AgentInput) {
	h.t.Helper()
	h.env.ExecuteWorkflow(contract.AgentWorkflowName, in)
	if !h.env.IsWorkflowCompleted() {
		h.t.Fatal("workflow did not complete")
	}
}

// result returns the run's result; the run must have succeeded.
func (h *harness) result() contract.AgentResult {
	h.t.Helper()
	if err := h.env.GetWorkflowError(); err != nil {
		h.t.Fatalf("workflow failed: %v", err)
	}
	var res contract.AgentResult
	if err := h.env.GetWorkflowResult(&res); err != nil {
		h.t.Fatalf("decode result: %v", err)
	}
	return res
}

// query runs the workflow query name with args and decodes its answer.
func query[T any](h *harness, name string, args ...any) T {
	h.t.Helper()
	v, err := h.env.QueryWorkflow(name, args...)
	if err != nil {
		h.t.Fatalf("query %s: %v", name, err)
	}
	var answer T
	if err := v.Get(&answer); err != nil {
		h.t.Fatalf("decode %s: %v", name, err)
	}
	return answer
}

func (h *harness) page(req contract.EventsRequest) contract.EventsPage {
	h.t.Helper()
	return query[contract.EventsPage](h, contract.QueryEvents, req)
}

// events returns the whole log and checks it is closed.
func (h *harness) events() []longhaul.Event {
	h.t.Helper()
	p := h.page(contract.EventsRequest{})
	if !p.Done {
		h.t.Errorf("events page: Done = false after the run ended")
	}
	if n := len(p.Events); n > 0 && p.Last != p.Events[n-1].Offset {
		h.t.Errorf("events page: Last = %d, last event has offset %d", p.Last, p.Events[n-1].Offset)
	}
	return p.Events
}

func (h *harness) state() contract.RunState {
	h.t.Helper()
	return query[contract.RunState](h, contract.QueryState)
}

// ev builds an expected event; the offset is set by log and the time is not
// compared.
func ev(t longhaul.EventType, payload any) longhaul.Event {
	return longhaul.NewEvent(t, time.Time{}, payload)
}

// log numbers expected events from offset 1.
func logOf(evs ...longhaul.Event) []longhaul.Event {
	for i := range evs {
		evs[i].Offset = int64(i + 1)
	}
	return evs
}

// oneTurnLog is the event log of a run answered in its first model call:
// the answer's text, its usage, the run's end.
func oneTurnLog(text string, u longhaul.Usage) []longhaul.Event {
	return logOf(
		ev(longhaul.EventContent, longhaul.ContentData{Text: text, Call: "turn-1"}),
		ev(longhaul.EventUsage, u),
		ev(longhaul.EventDone, longhaul.DoneData{Status: contract.StatusCompleted, FinishReason: "stop"}),
	)
}

// eventOpts compare events by offset, type and decoded payload.
var eventOpts = cmp.Options{
	cmpopts.IgnoreFields(longhaul.Event{}, "Time"),
	cmp.Transformer("json", func(r json.RawMessage) any {
		var v any
		if len(r) > 0 && json.Unmarshal(r, &v) != nil {
			return string(r)
		}
		return v
	}),
}

func diffEvents(t *testing.T, want, got []longhaul.Event) {
	t.Helper()
	if diff := cmp.Diff(want, got, eventOpts, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("event log mismatch (-want +got):\n%s", diff)
	}
}

func diff(t *testing.T, what string, want, got any, opts ...cmp.Option) {
	t.Helper()
	if d := cmp.Diff(want, got, append(opts, cmpopts.EquateEmpty())...); d != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", what, d)
	}
}

// appError unwraps the run's error to the application error it carries.
func appError(t *testing.T, err error) *temporal.ApplicationError {
	t.Helper()
	if err == nil {
		t.Fatal("workflow succeeded, want a failure")
	}
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) {
		t.Fatalf("workflow error %v (%T) carries no *temporal.ApplicationError", err, err)
	}
	return appErr
}

var hi = []longhaul.Message{{Role: longhaul.RoleUser, Content: "hi"}}

func input(msgs ...longhaul.Message) contract.AgentInput {
	return contract.AgentInput{Agent: spec.ID, Messages: msgs, User: longhaul.User{ID: "u1"}}
}

func TestFinalAnswerWithoutTools(t *testing.T) {
	h := newHarness(t)
	h.resolve(spec)
	h.scriptModel(answer("Hello there!", usage(10, 5))).Once()
	in := input(hi...)
	in.Options = longhaul.ModelOptions{MaxTokens: 100, Stop: []string{"END"}}
	h.run(in)

	res := h.result()
	diff(t, "result", contract.AgentResult{
		Content:      "Hello there!",
		FinishReason: "stop",
		Messages:     []longhaul.Message{assistant("Hello there!")},
		Usage:        usage(10, 5),
		Model:        "test-model-v2",
		LastOffset:   3,
	}, res)
	diff(t, "model requests", []contract.ModelRequest{{
		Call:     "turn-1",
		Agent:    "assistant",
		Model:    "test-model",
		Messages: hi,
		Tools:    spec.Tools,
		Options:  in.Options,
		Publish:  true,
		NextCall: 1,
	}}, h.modelCalls())
	// No batch was published, so reconciling writes the whole answer.
	diffEvents(t, oneTurnLog("Hello there!", usage(10, 5)), h.events())
	diff(t, "state", contract.RunState{
		Agent:    "assistant",
		User:     "u1",
		Status:   contract.StatusCompleted,
		Mode:     contract.ModeChat,
		Dispatch: "the agent chats",
		Turns:    1,
		Calls:    []contract.CallUsage{{Call: "turn-1", Model: "test-model", Usage: usage(10, 5)}},
		Usage:    usage(10, 5),
		Result:   "Hello there!",
	}, h.state())
}

// TestQuietRun: with nobody following live, the model call publishes no
// deltas, and the log still gets the whole answer.
func TestQuietRun(t *testing.T) {
	h := newHarness(t)
	h.resolve(spec)
	h.scriptModel(answer("Quietly.", usage(2, 1))).Once()
	in := input(hi...)
	in.Quiet = true
	h.run(in)

	if reqs := h.modelCalls(); len(reqs) != 1 || reqs[0].Publish {
		t.Errorf("model requests %+v, want one with Publish false", reqs)
	}
	diffEvents(t, oneTurnLog("Quietly.", usage(2, 1)), h.events())
}

// TestBackgroundTask checks a client's housekeeping request is one model
// call without the agent's prompt or tools, even when the agent has tools
// and the model asks for one.
func TestBackgroundTask(t *testing.T) {
	h := newHarness(t)
	h.resolve(spec)
	h.scriptModel(askTools("Durable Chat Title", usage(5, 3), longhaul.ToolCall{ID: "c1", Name: "current_time", Arguments: `{}`})).Once()
	task := []longhaul.Message{{Role: longhaul.RoleUser, Content: "### Task:\nGenerate a concise title."}}
	in := input(task...)
	in.Background = true
	h.run(in)

	reqs := h.modelCalls()
	if len(reqs) != 1 || !reqs[0].NoPrompt || len(reqs[0].Tools) != 0 {
		t.Fatalf("model requests %+v, want one without prompt and tools", reqs)
	}
	res := h.result()
	if res.Content != "Durable Chat Title" || len(res.Messages) != 1 || len(res.Messages[0].ToolCalls) != 0 {
		t.Errorf("result %+v", res)
	}
}

// TestAgentTemperature checks the agent's temperature is used when the
// request sets none, and the request's wins when it does.
func TestAgentTemperature(t *testing.T) {
	agentT, requestT := float32(0.2), float32(0.9)
	for _, tt := range []struct {
		name    string
		request *float32
		want    float32
	}{{"agent default", nil, agentT}, {"request wins", &requestT, requestT}} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			s := spec
			s.Temperature = &agentT
			h.resolve(s)
			h.scriptModel(answer("ok", usage(1, 1))).Once()
			in := input(hi...)
			in.Options.Temperature = tt.request
			h.run(in)
			reqs := h.modelCalls()
			if len(reqs) != 1 || reqs[0].Options.Temperature == nil || *reqs[0].Options.Temperature != tt.want {
				t.Fatalf("model requests %+v, want temperature %v", reqs, tt.want)
			}
		})
	}
}

func TestFinishReasonLength(t *testing.T) {
	h := newHarness(t)
	h.resolve(spec)
	r := answer("Once upon a", usage(4, 3))
	r.resp.FinishReason = "length"
	h.scriptModel(r).Once()
	h.run(input(hi...))

	if got := h.result().FinishReason; got != "length" {
		t.Errorf("FinishReason = %q, want length", got)
	}
	evs := h.events()
	diff(t, "last event", ev(longhaul.EventDone, longhaul.DoneData{Status: contract.StatusCompleted, FinishReason: "length", Cut: longhaul.CutMaxTokens}),
		evs[len(evs)-1], eventOpts, cmpopts.IgnoreFields(longhaul.Event{}, "Offset"))
}

func TestOneToolCallThenAnswer(t *testing.T) {
	h := newHarness(t)
	h.resolve(spec)
	call := longhaul.ToolCall{ID: "call_1", Name: "current_time", Arguments: `{"timezone":"Europe/Berlin"}`}
	h.scriptCallThenAnswer(call, usage(10, 2), "It is Thursday.", usage(20, 4))
	h.env.OnActivity(h.acts.CallTool, mock.Anything, contract.ToolRequest{Call: call, Agent: spec.ID, Seq: 1, After: 1, User: "u1", Principal: u1}).
		Return(contract.ToolResponse{Content: "2025-01-02T04:04:05+01:00 Thursday"}, nil).Once()
	h.run(input(hi...))

	toolMsg := longhaul.Message{Role: longhaul.RoleTool, Name: "current_time", ToolCallID: "call_1", Content: "2025-01-02T04:04:05+01:00 Thursday"}
	added := []longhaul.Message{assistant("", call), toolMsg, assistant("It is Thursday.")}
	diff(t, "result", contract.AgentResult{
		Content:      "It is Thursday.",
		FinishReason: "stop",
		Messages:     added,
		Usage:        usage(30, 6),
		Model:        "test-model-v2",
		LastOffset:   5,
	}, h.result())

	reqs := h.modelCallsN(2)
	// The model's own answer names the model for the next turns.
	diff(t, "second model request", contract.ModelRequest{
		Call:     "turn-2",
		Agent:    "assistant",
		Model:    "test-model-v2",
		Messages: append(append([]longhaul.Message(nil), hi...), added[:2]...),
		Tools:    spec.Tools,
		Publish:  true,
		After:    2,
		NextCall: 2, // the first turn's call was the run's first
	}, reqs[1])

	diffEvents(t, logOf(
		ev(longhaul.EventToolStart, longhaul.ToolStartData{ToolCallID: "call_1", Name: "current_time", Arguments: call.Arguments}),
		ev(longhaul.EventToolOutput, longhaul.ToolOutputData{ToolCallID: "call_1", Name: "current_time", Output: toolMsg.Content}),
		ev(longhaul.EventContent, longhaul.ContentData{Text: "It is Thursday.", Call: "turn-2"}),
		ev(longhaul.EventUsage, usage(30, 6)),
		ev(longhaul.EventDone, longhaul.DoneData{Status: contract.StatusCompleted, FinishReason: "stop"}),
	), h.events())
	diff(t, "state", contract.RunState{
		Agent: "assistant", User: "u1", Status: contract.StatusCompleted, Mode: contract.ModeChat, Dispatch: "the agent chats", Turns: 2, Usage: usage(30, 6), Result: "It is Thursday.",
		Calls: []contract.CallUsage{{Call: "turn-1", Model: "test-model", Usage: usage(10, 2)}, {Call: "turn-2", Model: "test-model-v2", Usage: usage(20, 4)}},
	}, h.state())
}

func TestParallelToolCalls(t *testing.T) {
	h := newHarness(t)
	h.resolve(spec)
	fetch := longhaul.ToolCall{ID: "call_a", Name: "web_fetch", Arguments: `{"url":"https://example.com/page?q=1"}`}
	clock := longhaul.ToolCall{ID: "call_b", Name: "current_time", Arguments: `{}`}
	ask := askTools("Let me look.", usage(10, 8), fetch, clock)
	ask.resp.Targets = map[string]string{"call_a": "example.com", "call_b": "UTC"}
	h.scriptModel(ask, answer("Done.", usage(30, 2))).Twice()
	// The first call takes longer: the results must still come in call
	// order, and the run must take as long as the slower call, not the sum.
	h.onTool("call_a", contract.ToolResponse{Content: "page text", Truncated: true}, nil).After(2 * time.Second).Once()
	h.onTool("call_b", contract.ToolResponse{Content: "now"}, nil).After(time.Second).Once()
	h.run(input(hi...))

	added := []longhaul.Message{
		assistant("Let me look.", fetch, clock),
		{Role: longhaul.RoleTool, Name: "web_fetch", ToolCallID: "call_a", Content: "page text"},
		{Role: longhaul.RoleTool, Name: "current_time", ToolCallID: "call_b", Content: "now"},
		assistant("Done."),
	}
	diff(t, "result", contract.AgentResult{
		Content: "Done.", FinishReason: "stop", Messages: added, Usage: usage(40, 10), Model: "test-model-v2", LastOffset: 8,
	}, h.result())
	reqs := h.modelCallsN(2)
	diff(t, "second model request messages", append(append([]longhaul.Message(nil), hi...), added[:3]...), reqs[1].Messages)

	evs := h.events()
	diffEvents(t, logOf(
		ev(longhaul.EventContent, longhaul.ContentData{Text: "Let me look.", Call: "turn-1"}),
		ev(longhaul.EventToolStart, longhaul.ToolStartData{ToolCallID: "call_a", Name: "web_fetch", Arguments: fetch.Arguments, Target: "example.com"}),
		ev(longhaul.EventToolStart, longhaul.ToolStartData{ToolCallID: "call_b", Name: "current_time", Arguments: clock.Arguments, Target: "UTC"}),
		ev(longhaul.EventToolOutput, longhaul.ToolOutputData{ToolCallID: "call_a", Name: "web_fetch", Output: "page text", Truncated: true}),
		ev(longhaul.EventToolOutput, longhaul.ToolOutputData{ToolCallID: "call_b", Name: "current_time", Output: "now"}),
		ev(longhaul.EventContent, longhaul.ContentData{Text: "Done.", Call: "turn-2"}),
		ev(longhaul.EventUsage, usage(40, 10)),
		ev(longhaul.EventDone, longhaul.DoneData{Status: contract.StatusCompleted, FinishReason: "stop"}),
	), evs)
	if len(evs) == 8 {
		for _, i := range []int{1, 2} {
			if !evs[i].Time.Equal(t0) {
				t.Errorf("tool_start %d at %v, want %v", i, evs[i].Time, t0)
			}
		}
		for _, i := range []int{3, 4} {
			if want := t0.Add(2 * time.Second); !evs[i].Time.Equal(want) {
				t.Errorf("tool_output %d at %v, want %v (the calls ran one after the other?)", i, evs[i].Time, want)
			}
		}
	}
}

func TestToolRefusedIsFedBackToModel(t *testing.T) {
	h := newHarness(t)
	h.resolve(spec)
	call := longhaul.ToolCall{ID: "call_1", Name: "shell", Arguments: `{"cmd":"rm -rf /"}`}
	h.scriptCallThenAnswer(call, usage(5, 5), "I cannot do that.", usage(9, 4))
	refusal := `tool "shell" is not allowed here (allowed: [current_time web_fetch])`
	// Non-retryable: exactly one attempt.
	h.onTool("call_1", contract.ToolResponse{}, temporal.NewNonRetryableApplicationError(refusal, longhaul.ErrTypeToolRefused, nil)).Once()
	h.run(input(hi...))

	toolMsg := longhaul.Message{Role: longhaul.RoleTool, Name: "shell", ToolCallID: "call_1", Content: "error: " + refusal}
	res := h.result()
	diff(t, "result", contract.AgentResult{
		Content:      "I cannot do that.",
		FinishReason: "stop",
		Messages:     []longhaul.Message{assistant("", call), toolMsg, assistant("I cannot do that.")},
		Usage:        usage(14, 9),
		Model:        "test-model-v2",
		LastOffset:   5,
	}, res)
	reqs := h.modelCallsN(2)
	if got := reqs[1].Messages[len(reqs[1].Messages)-1]; !strings.HasPrefix(got.Content, "error:") || got.ToolCallID != "call_1" {
		t.Errorf("last message of the second model call = %+v, want the tool error for call_1", got)
	}
	diffEvents(t, logOf(
		ev(longhaul.EventToolStart, longhaul.ToolStartData{ToolCallID: "call_1", Name: "shell", Arguments: call.Arguments}),
		ev(longhaul.EventToolOutput, longhaul.ToolOutputData{ToolCallID: "call_1", Name: "shell", Output: "error: " + refusal, Error: true}),
		ev(longhaul.EventContent, longhaul.ContentData{Text: "I cannot do that.", Call: "turn-2"}),
		ev(longhaul.EventUsage, usage(14, 9)),
		ev(longhaul.EventDone, longhaul.DoneData{Status: contract.StatusCompleted, FinishReason: "stop"}),
	), h.events())
}

func TestToolFailureIsRetriedThenFedBack(t *testing.T) {
	h := newHarness(t)
	h.resolve(spec)
	call := longhaul.ToolCall{ID: "call_1", Name: "web_fetch", Arguments: `{"url":"https://example.com/"}`}
	h.scriptCallThenAnswer(call, usage(5, 5), "The site is down.", usage(9, 4))
	// Retryable, as CallTool fails a tool: the last of its attempts is
	// final.
	match := mock.MatchedBy(func(r contract.ToolRequest) bool { return r.Call.ID == "call_1" })
	h.env.OnActivity(h.acts.CallTool, mock.Anything, match).Return(func(ctx context.Context, _ contract.ToolRequest) (contract.ToolResponse, error) {
		if activity.GetInfo(ctx).Attempt >= contract.ToolAttempts {
			return contract.ToolResponse{}, temporal.NewNonRetryableApplicationError("tool web_fetch failed: 503", longhaul.ErrTypeToolFailed, nil)
		}
		return contract.ToolResponse{}, temporal.NewApplicationError("tool web_fetch failed: 503", longhaul.ErrTypeToolFailed)
	}).Times(contract.ToolAttempts)
	h.run(input(hi...))

	res := h.result()
	if len(res.Messages) != 3 {
		t.Fatalf("result has %d messages, want 3: %+v", len(res.Messages), res.Messages)
	}
	diff(t, "tool message", longhaul.Message{
		Role: longhaul.RoleTool, Name: "web_fetch", ToolCallID: "call_1", Content: "error: tool web_fetch failed: 503",
	}, res.Messages[1])
	evs := h.events()
	diff(t, "tool_output", ev(longhaul.EventToolOutput, longhaul.ToolOutputData{
		ToolCallID: "call_1", Name: "web_fetch", Output: "error: tool web_fetch failed: 503", Error: true,
	}), evs[1], eventOpts, cmpopts.IgnoreFields(longhaul.Event{}, "Offset"))
}

func TestToolOutputExcerpt(t *testing.T) {
	h := newHarness(t)
	h.resolve(spec)
	call := longhaul.ToolCall{ID: "call_1", Name: "web_fetch", Arguments: `{"url":"https://example.com/"}`}
	h.scriptModel(askTools("", usage(1, 1), call), answer("Long.", usage(1, 1))).Twice()
	long := strings.Repeat("x", 2500)
	h.onTool("call_1", contract.ToolResponse{Content: long}, nil).Once()
	h.run(input(hi...))

	// The model reads everything; the event carries an excerpt.
	if got := h.result().Messages[1].Content; got != long {
		t.Errorf("tool message has %d characters, want %d", len(got), len(long))
	}
	evs := h.events()
	var out longhaul.ToolOutputData
	if err := evs[1].Decode(&out); err != nil || evs[1].Type != longhaul.EventToolOutput {
		t.Fatalf("event 2 = %+v (%v), want tool_output", evs[1], err)
	}
	if len(out.Output) != 2000 || !out.Truncated {
		t.Errorf("tool_output has %d characters, truncated=%v; want 2000, true", len(out.Output), out.Truncated)
	}
}

func TestMaxTurns(t *testing.T) {
	h := newHarness(t)
	s := spec
	s.MaxTurns = 2
	h.resolve(s)
	call := func(n int) longhaul.ToolCall {
		return longhaul.ToolCall{ID: fmt.Sprintf("call_%d", n), Name: "current_time", Arguments: `{}`}
	}
	h.scriptModel(
		askTools("", usage(10, 1), call(1)),
		askTools("", usage(20, 1), call(2)),
		answer("Partial answer: the step limit was reached.", usage(30, 9)),
	).Times(3)
	h.onTool("call_1", contract.ToolResponse{Content: "t1"}, nil).Once()
	h.onTool("call_2", contract.ToolResponse{Content: "t2"}, nil).Once()
	h.run(input(hi...))

	reqs := h.modelCallsN(3)
	for i, r := range reqs[:2] {
		diff(t, fmt.Sprintf("tools offered on turn %d", i+1), s.Tools, r.Tools)
	}
	last := reqs[2]
	if last.Call != "turn-3" || len(last.Tools) != 0 {
		t.Errorf("last model call: Call %q, Tools %v; want turn-3 without tools", last.Call, last.Tools)
	}
	tool := func(n int, content string) longhaul.Message {
		return longhaul.Message{Role: longhaul.RoleTool, Name: "current_time", ToolCallID: fmt.Sprintf("call_%d", n), Content: content}
	}
	conv := append(append([]longhaul.Message(nil), hi...),
		assistant("", call(1)), tool(1, "t1"), assistant("", call(2)), tool(2, "t2"))
	diff(t, "last model call's conversation", conv, last.Messages)
	if !last.Final {
		t.Error("last model call is not Final: the activity would not add the max-turns prompt")
	}

	res := h.result()
	// FinishReason is not compared: see TestMaxTurnsContract.
	diff(t, "result", contract.AgentResult{
		Content:    "Partial answer: the step limit was reached.",
		Messages:   append(conv[1:], assistant("Partial answer: the step limit was reached.")),
		Usage:      usage(60, 11),
		Model:      "test-model-v2",
		LastOffset: 7,
	}, res, cmpopts.IgnoreFields(contract.AgentResult{}, "FinishReason"))
	if st := h.state(); st.Turns != 3 || st.Status != contract.StatusCompleted {
		t.Errorf("state: turns %d, status %q; want 3, completed", st.Turns, st.Status)
	}
}

// TestMaxTurnsContract checks what the contract promises when max_turns cuts a
// run short: FinishReason "length", and no dangling tool calls in the added
// messages even when the model asks for tools on its last, tool-less turn.
func TestMaxTurnsContract(t *testing.T) {
	h := newHarness(t)
	s := spec
	s.MaxTurns = 1
	h.resolve(s)
	first := longhaul.ToolCall{ID: "call_1", Name: "current_time", Arguments: `{}`}
	again := longhaul.ToolCall{ID: "call_2", Name: "current_time", Arguments: `{}`}
	h.scriptModel(
		askTools("", usage(10, 1), first),
		askTools("I would check again.", usage(20, 5), again),
	).Twice()
	h.onTool("call_1", contract.ToolResponse{Content: "t1"}, nil).Once()
	h.run(input(hi...))

	res := h.result()
	if res.FinishReason != "length" {
		t.Errorf("FinishReason = %q, want length", res.FinishReason)
	}
	diff(t, "final message", assistant("I would check again."), res.Messages[len(res.Messages)-1])
}

func TestModelRejectedFailsRun(t *testing.T) {
	h := newHarness(t)
	h.resolve(spec)
	call := longhaul.ToolCall{ID: "call_1", Name: "current_time", Arguments: `{}`}
	rejected := temporal.NewNonRetryableApplicationError("model endpoint answered 400: context too long", longhaul.ErrTypeModelRejected, nil)
	h.scriptModel(askTools("", usage(10, 2), call), reply{err: rejected}).Twice()
	h.onTool("call_1", contract.ToolResponse{Content: "now"}, nil).Once()
	h.run(input(hi...))

	err := h.env.GetWorkflowError()
	if appErr := appError(t, err); appErr.Type() != longhaul.ErrTypeModelRejected {
		t.Errorf("error type = %q, want %q (error: %v)", appErr.Type(), longhaul.ErrTypeModelRejected, err)
	}
	if n := len(h.modelCalls()); n != 2 {
		t.Errorf("model called %d times, want 2 (a rejected call is not retried)", n)
	}
	diffEvents(t, logOf(
		ev(longhaul.EventToolStart, longhaul.ToolStartData{ToolCallID: "call_1", Name: "current_time", Arguments: `{}`}),
		ev(longhaul.EventToolOutput, longhaul.ToolOutputData{ToolCallID: "call_1", Name: "current_time", Output: "now"}),
		ev(longhaul.EventUsage, usage(10, 2)),
		ev(longhaul.EventError, longhaul.ErrorData{Message: "model endpoint answered 400: context too long", Code: longhaul.ErrTypeModelRejected}),
		ev(longhaul.EventDone, longhaul.DoneData{Status: contract.StatusFailed}),
	), h.events())
	diff(t, "state", contract.RunState{
		Agent: "assistant", User: "u1", Status: contract.StatusFailed, Mode: contract.ModeChat, Dispatch: "the agent chats", Turns: 2, Usage: usage(10, 2),
		Calls: []contract.CallUsage{{Call: "turn-1", Model: "test-model", Usage: usage(10, 2)}},
		Error: "model endpoint answered 400: context too long",
	}, h.state())
}

func TestModelUnavailableIsRetried(t *testing.T) {
	h := newHarness(t)
	h.resolve(spec)
	h.scriptModel(
		reply{err: temporal.NewApplicationError("model endpoint answered 503: busy", longhaul.ErrTypeModelUnavailable)},
		answer("Back.", usage(3, 1)),
	).Twice()
	h.run(input(hi...))

	if got := h.result().Content; got != "Back." {
		t.Errorf("Content = %q, want Back.", got)
	}
	h.mu.Lock()
	attempts := append([]int32(nil), h.attempts...)
	h.mu.Unlock()
	diff(t, "model attempts", []int32{1, 2}, attempts)
	diffEvents(t, oneTurnLog("Back.", usage(3, 1)), h.events())
}

// TestContentIsDurableWhole: while a model call runs its text is not in
// the log (it streams over NATS, outside history); when it returns, the log
// gets the whole text as one content event naming the attempt, and the call
// was told the offset its deltas follow.
func TestContentIsDurableWhole(t *testing.T) {
	h := newHarness(t)
	h.resolve(spec)
	call := longhaul.ToolCall{ID: "call_1", Name: "current_time", Arguments: `{}`}
	final := answer("Hello world", usage(3, 2))
	final.resp.Attempt = 2
	h.scriptModel(askTools("", usage(1, 1), call), final).After(5 * time.Second).Twice()
	h.onTool("call_1", contract.ToolResponse{Content: "now"}, nil).Once()
	var running contract.EventsPage
	h.env.RegisterDelayedCallback(func() { running = h.page(contract.EventsRequest{}) }, 8*time.Second)
	h.run(input(hi...))

	if running.Last != 2 || running.Done {
		t.Errorf("page during the second call = %+v, want the tool's two events only", running)
	}
	reqs := h.modelCalls()
	if len(reqs) != 2 || reqs[0].After != 0 || reqs[1].After != 2 {
		t.Fatalf("model calls follow offsets %v, want 0 then 2", afters(reqs))
	}
	evs := h.events()
	if len(evs) < 3 {
		t.Fatalf("log %v", evs)
	}
	want := ev(longhaul.EventContent, longhaul.ContentData{Text: "Hello world", Call: "turn-2", Attempt: 2})
	want.Offset = 3
	diff(t, "content", want, evs[2], eventOpts)
}

func afters(reqs []contract.ModelRequest) []int64 {
	var out []int64
	for _, r := range reqs {
		out = append(out, r.After)
	}
	return out
}

func TestEventsPaging(t *testing.T) {
	h := newHarness(t)
	h.resolve(spec)
	call := longhaul.ToolCall{ID: "call_1", Name: "current_time", Arguments: `{}`}
	h.scriptModel(askTools("", usage(1, 1), call), answer("ok", usage(1, 1))).Twice()
	h.onTool("call_1", contract.ToolResponse{Content: "now"}, nil).Once()
	h.run(input(hi...))

	all := h.events() // tool_start, tool_output, content, usage, done
	if len(all) != 5 {
		t.Fatalf("log has %d events, want 5", len(all))
	}
	for _, tc := range []struct {
		req  contract.EventsRequest
		want contract.EventsPage
	}{
		{contract.EventsRequest{}, contract.EventsPage{Events: all, Last: 5, Done: true}},
		{contract.EventsRequest{Limit: 2}, contract.EventsPage{Events: all[:2], Last: 5, Done: false}},
		{contract.EventsRequest{After: 2, Limit: 2}, contract.EventsPage{Events: all[2:4], Last: 5, Done: false}},
		{contract.EventsRequest{After: 3, Limit: 2}, contract.EventsPage{Events: all[3:], Last: 5, Done: true}},
		{contract.EventsRequest{After: 4}, contract.EventsPage{Events: all[4:], Last: 5, Done: true}},
		{contract.EventsRequest{After: 5}, contract.EventsPage{Events: []longhaul.Event{}, Last: 5, Done: true}},
		{contract.EventsRequest{After: 99}, contract.EventsPage{Events: []longhaul.Event{}, Last: 5, Done: true}},
		{contract.EventsRequest{After: -3, Limit: 1}, contract.EventsPage{Events: all[:1], Last: 5, Done: false}},
	} {
		got := h.page(tc.req)
		if got.Events == nil {
			t.Errorf("page(%+v): Events is null, want a (possibly empty) list", tc.req)
		}
		diff(t, fmt.Sprintf("page(%+v)", tc.req), tc.want, got, eventOpts)
	}
}

func TestNoMessagesIsBadInput(t *testing.T) {
	h := newHarness(t) // no ResolveAgent mock: it must not be called
	h.run(contract.AgentInput{Agent: "assistant"})

	if appErr := appError(t, h.env.GetWorkflowError()); appErr.Type() != "BadInput" || !appErr.NonRetryable() {
		t.Errorf("error type %q (non-retryable %v), want non-retryable BadInput", appErr.Type(), appErr.NonRetryable())
	}
	diffEvents(t, logOf(
		ev(longhaul.EventError, longhaul.ErrorData{Message: "no messages", Code: "BadInput"}),
		ev(longhaul.EventDone, longhaul.DoneData{Status: contract.StatusFailed}),
	), h.events())
	diff(t, "state", contract.RunState{
		Agent: "assistant", User: "anonymous", Status: contract.StatusFailed, Error: "no messages",
	}, h.state())
}

func TestUnknownAgentFailsRun(t *testing.T) {
	h := newHarness(t)
	h.env.OnActivity(h.acts.ResolveAgent, mock.Anything, "nobody", mock.Anything).
		Return(contract.AgentSpec{}, temporal.NewNonRetryableApplicationError(`unknown agent "nobody"`, longhaul.ErrTypeUnknownAgent, nil)).Once()
	in := input(hi...)
	in.Agent = "nobody"
	h.run(in)

	if appErr := appError(t, h.env.GetWorkflowError()); appErr.Type() != longhaul.ErrTypeUnknownAgent {
		t.Errorf("error type %q, want %q", appErr.Type(), longhaul.ErrTypeUnknownAgent)
	}
	diffEvents(t, logOf(
		ev(longhaul.EventError, longhaul.ErrorData{Message: `unknown agent "nobody"`, Code: longhaul.ErrTypeUnknownAgent}),
		ev(longhaul.EventDone, longhaul.DoneData{Status: contract.StatusFailed}),
	), h.events())
}

func TestCancelDuringModelCall(t *testing.T) {
	h := newHarness(t)
	h.resolve(spec)
	h.scriptModel(answer("too late", usage(1, 1))).After(10 * time.Second).Maybe()
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, time.Second)
	h.run(input(hi...))

	err := h.env.GetWorkflowError()
	var canceled *temporal.CanceledError
	if !errors.As(err, &canceled) {
		t.Fatalf("workflow error = %v, want a cancellation", err)
	}
	diffEvents(t, logOf(
		ev(longhaul.EventError, longhaul.ErrorData{Message: "the run was cancelled"}),
		ev(longhaul.EventDone, longhaul.DoneData{Status: contract.StatusCancelled}),
	), h.events())
	if st := h.state(); st.Status != contract.StatusCancelled {
		t.Errorf("state status %q, want %q", st.Status, contract.StatusCancelled)
	}
}
