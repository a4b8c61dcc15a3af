package workflows_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
)

var lookup = longhaul.ToolSpec{Name: "lookup", Parameters: json.RawMessage(`{"type":"object"}`)}

// clientInput asks with the client's lookup tool and a forcing tool_choice.
func clientInput() contract.AgentInput {
	in := input(hi...)
	in.ClientTools = []longhaul.ToolSpec{lookup}
	in.Options.ToolChoice = json.RawMessage(`"required"`)
	in.ClientToolTimeout = time.Hour
	return in
}

func TestClientToolsWaitForResults(t *testing.T) {
	h := newHarness(t)
	h.resolve(spec)
	call := longhaul.ToolCall{ID: contract.ClientCallID("default-test-workflow-id", 1), Name: "lookup", Arguments: `{"q":"x"}`}
	h.scriptModel(askTools("Looking.", usage(1, 1), call), answer("Found it.", usage(1, 1))).Twice()
	var wrongCall, wrongKind, right sent
	var waiting contract.RunState
	h.env.RegisterDelayedCallback(func() { waiting = h.state() }, time.Minute)
	h.sendInput(2*time.Minute, contract.InputRequest{ToolResults: []contract.ToolResult{{ToolCallID: "call_other", Content: "?"}}}, &wrongCall)
	h.sendInput(3*time.Minute, contract.InputRequest{Text: "approve"}, &wrongKind)
	h.sendInput(4*time.Minute, contract.InputRequest{ToolResults: []contract.ToolResult{{ToolCallID: call.ID, Content: "42"}}}, &right)
	h.run(clientInput())

	res := h.result()
	if res.Content != "Found it." || res.FinishReason != "stop" {
		t.Errorf("result %+v", res)
	}
	if wrongCall.rejected == nil || !strings.Contains(wrongCall.rejected.Error(), "answers no call") || wrongKind.rejected == nil {
		t.Errorf("a result of another call: %v; an approval: %v", wrongCall.rejected, wrongKind.rejected)
	}
	if right.rejected != nil || right.result.Decision != contract.DecisionToolResults {
		t.Errorf("the results: %+v, rejected %v", right.result, right.rejected)
	}
	if waiting.Status != contract.StatusWaiting || waiting.Waiting == nil || waiting.Waiting.Kind != contract.WaitClientTools ||
		len(waiting.Waiting.Calls) != 1 || waiting.Waiting.Calls[0].ID != call.ID {
		t.Errorf("state while waiting %+v", waiting)
	}
	calls := h.modelCalls()
	if len(calls[0].ClientTools) != 1 || string(calls[0].Options.ToolChoice) != `"required"` {
		t.Errorf("first call: client tools %+v, tool_choice %s", calls[0].ClientTools, calls[0].Options.ToolChoice)
	}
	// The second call has the result, and no forced choice: the loop can end.
	last := calls[1].Messages[len(calls[1].Messages)-1]
	if last.Role != longhaul.RoleTool || last.ToolCallID != call.ID || last.Content != "42" || calls[1].Options.ToolChoice != nil {
		t.Errorf("second call: last message %+v, tool_choice %s", last, calls[1].Options.ToolChoice)
	}
	if calls[1].NextCall != 2 {
		t.Errorf("second call's NextCall = %d, want 2: the client's call took number 1", calls[1].NextCall)
	}
	var types []string
	for _, e := range h.events() {
		types = append(types, string(e.Type))
	}
	if got := strings.Join(types, " "); got != "content client_tool_calls content usage done" {
		t.Errorf("events: %s", got)
	}
}

func TestClientToolsUnanswered(t *testing.T) {
	h := newHarness(t)
	h.resolve(spec)
	call := longhaul.ToolCall{ID: "c1", Name: "lookup", Arguments: `{}`}
	h.scriptModel(askTools("", usage(1, 1), call)).Once()
	h.run(clientInput())
	res := h.result()
	if res.FinishReason != "tool_calls" || len(res.ToolCalls) != 1 || res.ToolCalls[0].ID != "c1" {
		t.Errorf("result %+v", res)
	}
	if st := h.state(); st.Status != contract.StatusCompleted || st.Waiting != nil {
		t.Errorf("state %+v", st)
	}
}

func TestClientToolsRunAsChat(t *testing.T) {
	h := newHarness(t)
	auto := spec
	auto.Mode = contract.ModeAuto
	h.resolve(auto)
	// No classification call: a request with tools of its own is a chat.
	h.scriptModel(answer("Hi.", usage(1, 1))).Once()
	h.run(clientInput())
	if st := h.state(); st.Mode != contract.ModeChat {
		t.Errorf("mode %q (%s)", st.Mode, st.Dispatch)
	}
}
