package workflows_test

import (
	"context"
	"errors"
	"fmt"
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
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

// askParent is the run id the ask tests start their parent as.
const askParent = "run-parent"

// mediaSpec asks the helper agent (agents: [helper]), as ResolveAgent
// gives it.
var mediaSpec = contract.AgentSpec{
	ID: "media", Mode: "chat", Model: "test-model", MaxTurns: 8,
	Tools:     []string{"current_time", "ask_helper"},
	Asks:      []contract.AskSpec{{Tool: "ask_helper", Agent: "helper", Description: "Answers questions"}},
	AskOutput: 40,
}

var helperSpec = contract.AgentSpec{ID: "helper", Mode: "chat", Model: "test-model", MaxTurns: 8}

// askCall is the parent's call of ask_helper.
func askCall(id, question string) longhaul.ToolCall {
	return longhaul.ToolCall{ID: id, Name: "ask_helper", Arguments: fmt.Sprintf(`{"question":%q}`, question)}
}

// askHarness is the harness with the parent started as askParent, the
// model scripted per agent and the children's starts and cancellations
// recorded.
type askHarness struct {
	*harness
	mu        sync.Mutex
	byAgent   map[string][]contract.ModelRequest
	children  []*workflow.Info
	inputs    []workflows.Input
	cancelled []string
}

func newAskHarness(t *testing.T) *askHarness {
	h := &askHarness{harness: newHarness(t), byAgent: map[string][]contract.ModelRequest{}}
	h.env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: askParent})
	h.env.SetOnChildWorkflowStartedListener(func(info *workflow.Info, _ workflow.Context, args converter.EncodedValues) {
		var in workflows.Input
		if err := args.Get(&in); err != nil {
			t.Errorf("child input: %v", err)
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		h.children = append(h.children, info)
		h.inputs = append(h.inputs, in)
	})
	h.env.SetOnChildWorkflowCanceledListener(func(info *workflow.Info) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.cancelled = append(h.cancelled, info.WorkflowExecution.ID)
	})
	return h
}

// script answers each agent's model calls in turn with its replies.
func (h *askHarness) script(replies map[string][]reply) *testsuite.MockCallWrapper {
	return h.env.OnActivity(h.acts.ChatCompletion, mock.Anything, mock.Anything).Return(
		func(_ context.Context, req contract.ModelRequest) (contract.ModelResponse, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			n := len(h.byAgent[req.Agent])
			h.byAgent[req.Agent] = append(h.byAgent[req.Agent], req)
			if n >= len(replies[req.Agent]) {
				return contract.ModelResponse{}, temporal.NewNonRetryableApplicationError(
					fmt.Sprintf("unscripted model call %d of %s", n+1, req.Agent), "Unscripted", nil)
			}
			r := replies[req.Agent][n]
			return r.resp, r.err
		})
}

func (h *askHarness) calls(agent string) []contract.ModelRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.byAgent[agent]
}

// toolMessage is the tool message of the parent's second model call.
func (h *askHarness) toolMessages() []longhaul.Message {
	h.t.Helper()
	calls := h.calls("media")
	if len(calls) < 2 {
		h.t.Fatalf("the parent called the model %d times, want 2", len(calls))
	}
	var out []longhaul.Message
	for _, m := range calls[1].Messages {
		if m.Role == longhaul.RoleTool {
			out = append(out, m)
		}
	}
	return out
}

func askInput(question string) contract.AgentInput {
	in := input(longhaul.Message{Role: longhaul.RoleUser, Content: question})
	in.Agent = "media"
	return in
}

// An ask_ call starts the asked agent as a child run: its id is the
// parent's and the call's number, it runs for the parent's user (its model
// calls carry the same principal, which budgets count against), one level
// deeper, naming the parent's call for its progress; its answer, cut to
// the tool output limit, is the call's result, and the tool_start names it.
func TestAskRunsChild(t *testing.T) {
	h := newAskHarness(t)
	h.resolve(mediaSpec)
	h.resolve(helperSpec)
	long := "Forty-two, as the guide says, and more words past the limit."
	h.script(map[string][]reply{
		"media":  {askTools("", usage(1, 1), askCall("c1", "What is six times seven?")), answer("It is 42.", usage(1, 1))},
		"helper": {answer(long, usage(2, 2))},
	})
	h.run(askInput("Ask the helper"))
	if res := h.result(); res.Content != "It is 42." {
		t.Fatalf("answer %q", res.Content)
	}
	if len(h.children) != 1 {
		t.Fatalf("%d children started, want 1", len(h.children))
	}
	child, in := h.children[0], h.inputs[0]
	if child.WorkflowExecution.ID != askParent+"-ask-1" || child.ParentWorkflowExecution.ID != askParent {
		t.Errorf("child %s of %v, want %s-ask-1 of %s", child.WorkflowExecution.ID, child.ParentWorkflowExecution, askParent, askParent)
	}
	if in.Agent != "helper" || in.User.Key() != u1.Key() || in.Depth != 1 || len(in.Messages) != 1 || in.Messages[0].Content != "What is six times seven?" {
		t.Errorf("child input %+v", in.AgentInput)
	}
	want := contract.ParentCall{Run: askParent, ToolCallID: "c1", Tool: "ask_helper", After: 1}
	if in.Parent == nil || *in.Parent != want {
		t.Errorf("child's parent %+v, want %+v", in.Parent, want)
	}
	// The child's model call counts against the parent's user, and shows
	// its progress on the parent's call.
	hc := h.calls("helper")
	if len(hc) != 1 || hc[0].Principal == nil || hc[0].Principal.Key() != u1.Key() {
		t.Fatalf("child's model calls %+v, want one as %v", hc, u1)
	}
	if p := hc[0].Progress; p == nil || p.ParentCall != want || p.Message != "helper: thinking (turn 1)" {
		t.Errorf("child's progress %+v", p)
	}
	if p := h.calls("media")[0].Progress; p != nil {
		t.Errorf("a run no one asked shows progress %+v", p)
	}
	tm := h.toolMessages()
	if len(tm) != 1 || tm[0].ToolCallID != "c1" || tm[0].Content != fmt.Sprintf("%s\n\n[answer cut: 40 of %d characters shown; the whole answer is the run run-parent-ask-1's]", long[:40], len(long)) {
		t.Errorf("tool result %+v", tm)
	}
	var start longhaul.ToolStartData
	for _, e := range h.events() {
		if e.Type == longhaul.EventToolStart {
			_ = e.Decode(&start)
		}
	}
	if start.Run != askParent+"-ask-1" {
		t.Errorf("tool_start %+v names no child run", start)
	}
}

// A child that fails (here the user may not use the agent: ResolveAgent
// refuses it) is a tool error the model reads; the parent answers.
func TestAskFailedChildIsToolError(t *testing.T) {
	h := newAskHarness(t)
	h.resolve(mediaSpec)
	h.env.OnActivity(h.acts.ResolveAgent, mock.Anything, "helper", mock.Anything).Return(contract.AgentSpec{},
		temporal.NewNonRetryableApplicationError(`unknown agent "helper"`, "UnknownAgent", nil)).Once()
	h.script(map[string][]reply{
		"media": {askTools("", usage(1, 1), askCall("c1", "Hi?")), answer("The helper is away.", usage(1, 1))},
	})
	h.run(askInput("Ask the helper"))
	if res := h.result(); res.Content != "The helper is away." {
		t.Fatalf("answer %q", res.Content)
	}
	tm := h.toolMessages()
	if len(tm) != 1 || tm[0].Content != `error: the agent helper failed: unknown agent "helper"` {
		t.Fatalf("tool result %+v", tm)
	}
}

// Bad arguments and calls past the fan-out bound start no child: each is a
// tool error.
func TestAskBounds(t *testing.T) {
	h := newAskHarness(t)
	h.resolve(mediaSpec)
	for range contract.MaxAsksPerTurn {
		h.resolve(helperSpec)
	}
	calls := []longhaul.ToolCall{{ID: "bad", Name: "ask_helper", Arguments: `{"q":"x"}`}}
	var helper []reply
	for i := range contract.MaxAsksPerTurn + 1 {
		calls = append(calls, askCall(fmt.Sprintf("c%d", i), "Q?"))
		helper = append(helper, answer("A.", usage(1, 1)))
	}
	h.script(map[string][]reply{
		"media":  {askTools("", usage(1, 1), calls...), answer("Done.", usage(1, 1))},
		"helper": helper,
	})
	h.run(askInput("Ask many"))
	h.result()
	if len(h.children) != contract.MaxAsksPerTurn {
		t.Fatalf("%d children, want %d", len(h.children), contract.MaxAsksPerTurn)
	}
	tm := h.toolMessages()
	if !strings.HasPrefix(tm[0].Content, `error: ask_helper needs its arguments as {"question": "..."}`) {
		t.Errorf("bad arguments: %q", tm[0].Content)
	}
	last := tm[len(tm)-1].Content
	if want := fmt.Sprintf("error: ask_helper was not run: at most %d agents are asked at once", contract.MaxAsksPerTurn); !strings.HasPrefix(last, want) {
		t.Errorf("past the bound: %q", last)
	}
}

// A run at the deepest level is offered no ask_ tools.
func TestAskDepthBound(t *testing.T) {
	h := newAskHarness(t)
	h.resolve(mediaSpec)
	h.script(map[string][]reply{"media": {answer("Alone.", usage(1, 1))}})
	in := askInput("Hi")
	in.Depth = contract.MaxAskDepth
	h.run(in)
	h.result()
	if tools := h.calls("media")[0].Tools; len(tools) != 1 || tools[0] != "current_time" {
		t.Fatalf("a run at depth %d is offered %v", contract.MaxAskDepth, tools)
	}
}

// Cancelling the parent while the child works cancels the child, and the
// parent ends cancelled.
func TestAskCancelReachesChild(t *testing.T) {
	h := newAskHarness(t)
	h.resolve(mediaSpec)
	h.resolve(helperSpec)
	h.script(map[string][]reply{
		"media":  {askTools("", usage(1, 1), askCall("c1", "Think long"))},
		"helper": {answer("too late", usage(1, 1))},
	}).After(10 * time.Second).Maybe()
	// Each model call takes 10 s: the parent's first ends at 10 s, the
	// child's would at 20 s.
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, 15*time.Second)
	h.run(askInput("Ask the helper"))
	var canceled *temporal.CanceledError
	if err := h.env.GetWorkflowError(); !errors.As(err, &canceled) {
		t.Fatalf("parent ended with %v, want cancelled", err)
	}
	if len(h.children) != 1 || len(h.cancelled) != 1 || h.cancelled[0] != askParent+"-ask-1" {
		t.Fatalf("children %d, cancelled %v", len(h.children), h.cancelled)
	}
}
