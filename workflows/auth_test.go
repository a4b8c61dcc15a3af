package workflows_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/stretchr/testify/mock"
)

// mailSpec is an agent whose mail tool is an OAuth MCP server's.
var mailSpec = contract.AgentSpec{ID: "mailer", Mode: "chat", Model: "test-model", MaxTurns: 4, Tools: []string{"mail__search"}}

var (
	mailCall     = longhaul.ToolCall{ID: "call_m", Name: "mail__search", Arguments: `{"q":"invoice"}`}
	notConnected = contract.ToolResponse{
		Content: "NOT CONNECTED: open https://lh.example/oauth/connect/L1",
		Connect: &contract.Connect{Server: "mail", URL: "https://lh.example/oauth/connect/L1"},
	}
)

// authRun runs the mailer with AuthWait as given; the tool answers
// notConnected first and, called again, the mail.
func authRun(t *testing.T, authWait bool, timeout time.Duration, inputs map[time.Duration]contract.InputRequest) (*harness, map[time.Duration]*sent, contract.RunState, *int) {
	h := newHarness(t)
	h.resolve(mailSpec)
	h.scriptModel(askTools("", usage(1, 1), mailCall), answer("Found it.", usage(1, 1))).Twice()
	calls := 0
	h.env.OnActivity(h.acts.CallTool, mock.Anything, mock.Anything).Return(
		func(_ context.Context, _ contract.ToolRequest) (contract.ToolResponse, error) {
			calls++
			if calls == 1 {
				return notConnected, nil
			}
			return contract.ToolResponse{Content: "invoice 42 from ACME"}, nil
		})
	var waiting contract.RunState
	h.env.RegisterDelayedCallback(func() { waiting = h.state() }, time.Minute)
	got := map[time.Duration]*sent{}
	for at, in := range inputs {
		got[at] = &sent{}
		h.sendInput(at, in, got[at])
	}
	in := input(hi...)
	in.Agent, in.AuthWait, in.ApprovalTimeout = "mailer", authWait, timeout
	h.run(in)
	return h, got, waiting, &calls
}

// TestAuthWaitConnected: a call whose account is not connected makes a
// run that may wait (AuthWait) wait as auth, its link in its state and
// in auth_required; a person's text is refused, the callback's word for
// another server too; the word for the server resumes it, the call runs
// again and the model reads its result.
func TestAuthWaitConnected(t *testing.T) {
	h, got, waiting, calls := authRun(t, true, 2*time.Hour, map[time.Duration]contract.InputRequest{
		10 * time.Minute: {Text: "yes"},
		20 * time.Minute: {Connected: "calendar"},
		time.Hour:        {Connected: "mail"},
	})
	if res := h.result(); res.Content != "Found it." {
		t.Errorf("answer %q", res.Content)
	}
	w := waiting.Waiting
	if waiting.Status != contract.StatusWaiting || w == nil || w.Kind != contract.WaitAuth || w.Server != "mail" || w.URL != notConnected.Connect.URL || w.ToolCallID != "call_m" {
		t.Errorf("state while waiting: %q, %+v", waiting.Status, w)
	}
	if r := got[10*time.Minute].rejected; r == nil || !strings.Contains(r.Error(), notConnected.Connect.URL) {
		t.Errorf("a text answer: rejected %v, want the link", r)
	}
	if r := got[20*time.Minute].rejected; r == nil {
		t.Error("another server's connection was taken")
	}
	if g := got[time.Hour]; g.rejected != nil || g.result.Decision != contract.DecisionConnected {
		t.Errorf("the connection: %+v", g)
	}
	if *calls != 2 {
		t.Errorf("%d tool calls, want 2: the first, and again once connected", *calls)
	}
	diff(t, "event types", []longhaul.EventType{
		longhaul.EventToolStart, longhaul.EventAuthRequired, longhaul.EventAuth, longhaul.EventToolOutput,
		longhaul.EventContent, longhaul.EventUsage, longhaul.EventDone,
	}, eventTypes(h.events()))
	var d longhaul.AuthRequiredData
	for _, e := range h.events() {
		if e.Type == longhaul.EventAuthRequired {
			_ = e.Decode(&d)
		}
	}
	diff(t, "auth_required", longhaul.AuthRequiredData{ToolCallID: "call_m", Name: "mail__search", Server: "mail", URL: notConnected.Connect.URL}, d)
	mc := h.modelCalls()
	if msg := mc[1].Messages[len(mc[1].Messages)-1].Content; msg != "invoice 42 from ACME" {
		t.Errorf("the model was told %q", msg)
	}
}

// TestAuthWaitTimeout: nobody connects within the approval timeout; the
// model reads the result with the link, as a run that does not wait.
func TestAuthWaitTimeout(t *testing.T) {
	h, _, _, calls := authRun(t, true, 2*time.Hour, nil)
	h.result()
	if *calls != 1 {
		t.Errorf("%d tool calls, want 1", *calls)
	}
	mc := h.modelCalls()
	if msg := mc[1].Messages[len(mc[1].Messages)-1].Content; msg != notConnected.Content {
		t.Errorf("the model was told %q", msg)
	}
	var d longhaul.AuthData
	for _, e := range h.events() {
		if e.Type == longhaul.EventAuth {
			_ = e.Decode(&d)
		}
	}
	if d.Connected || d.Text != "not connected within 2h0m0s" {
		t.Errorf("auth event %+v", d)
	}
}

// TestAuthNoWait: a run whose door does not show the link (a chat) does
// not wait: the model reads the link at once.
func TestAuthNoWait(t *testing.T) {
	h, _, waiting, calls := authRun(t, false, 2*time.Hour, nil)
	h.result()
	if *calls != 1 || waiting.Waiting != nil {
		t.Errorf("%d tool calls, waiting %+v: want one call and no wait", *calls, waiting.Waiting)
	}
	diff(t, "event types", []longhaul.EventType{
		longhaul.EventToolStart, longhaul.EventToolOutput, longhaul.EventContent, longhaul.EventUsage, longhaul.EventDone,
	}, eventTypes(h.events()))
}
