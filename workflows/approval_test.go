package workflows_test

import (
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"
)

// approvalSpec is an agent whose order tool needs a person's approval.
var approvalSpec = contract.AgentSpec{
	ID: "shop", Mode: "chat", Model: "test-model", MaxTurns: 4,
	Tools: []string{"current_time", "place_order"}, Approval: []string{"place_order"},
}

var order = longhaul.ToolCall{ID: "call_o", Name: "place_order", Arguments: `{"item":"book"}`}

// sendInput sends UpdateInput after the given workflow time and records
// whether it was accepted and what it returned.
type sent struct {
	rejected error
	result   contract.InputResult
	done     bool
}

func (h *harness) sendInput(after time.Duration, in contract.InputRequest, out *sent) {
	h.env.RegisterDelayedCallback(func() {
		h.env.UpdateWorkflow(contract.UpdateInput, "input-after-"+after.String(), &testsuite.TestUpdateCallback{
			OnAccept: func() {},
			OnReject: func(err error) { out.rejected = err; out.done = true },
			OnComplete: func(v any, err error) {
				if r, ok := v.(contract.InputResult); ok {
					out.result = r
				}
				out.done = true
			},
		}, in)
	}, after)
}

func TestApprovalApproved(t *testing.T) {
	h := newHarness(t)
	h.resolve(approvalSpec)
	h.scriptModel(askTools("", usage(1, 1), order), answer("Ordered.", usage(1, 1))).Twice()
	var ran contract.ToolRequest
	h.env.OnActivity(h.acts.CallTool, mock.Anything, mock.MatchedBy(func(r contract.ToolRequest) bool { ran = r; return true })).
		Return(contract.ToolResponse{Content: "order ord-1 placed"}, nil).Once()
	var waiting contract.RunState
	h.env.RegisterDelayedCallback(func() { waiting = h.state() }, time.Minute)
	var got sent
	yes := true
	h.sendInput(time.Hour, contract.InputRequest{Approve: &yes}, &got)
	in := input(hi...)
	in.Agent = "shop"
	h.run(in)

	if res := h.result(); res.Content != "Ordered." {
		t.Errorf("answer %q", res.Content)
	}
	// The update's recorded outcome grants this call, and the tool
	// activity is told which update to read it from.
	grant := contract.GrantFor(1, order)
	diff(t, "update result", contract.InputResult{Decision: contract.DecisionApproved, Approved: &grant}, got.result)
	diff(t, "tool request", contract.ToolRequest{Call: order, Agent: "shop", Seq: 1, Approval: "input-after-1h0m0s", After: 3, User: "u1", Principal: u1}, ran)
	if waiting.Status != contract.StatusWaiting || waiting.Waiting == nil || waiting.Waiting.ToolCallID != "call_o" {
		t.Errorf("state while waiting: status %q, waiting %+v", waiting.Status, waiting.Waiting)
	}
	evs := h.events()
	var types []longhaul.EventType
	for _, e := range evs {
		types = append(types, e.Type)
	}
	diff(t, "event types", []longhaul.EventType{
		longhaul.EventApprovalRequired, longhaul.EventApproval, longhaul.EventToolStart, longhaul.EventToolOutput,
		longhaul.EventContent, longhaul.EventUsage, longhaul.EventDone,
	}, types)
	var req longhaul.ApprovalRequiredData
	if err := evs[0].Decode(&req); err != nil || req.Name != "place_order" || req.Arguments != order.Arguments {
		t.Errorf("approval_required = %+v (%v)", req, err)
	}
	if st := h.state(); st.Status != contract.StatusCompleted || st.Waiting != nil {
		t.Errorf("final state: status %q, waiting %+v", st.Status, st.Waiting)
	}
}

func TestApprovalDeniedNeverRuns(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   contract.InputRequest
		want string
		msg  string
	}{
		{"approve false", contract.InputRequest{Approve: new(bool)}, contract.DecisionDenied, "error: the user denied this call"},
		{"deny in words", contract.InputRequest{Text: "Deny"}, contract.DecisionDenied, "error: the user denied this call"},
		{"a reply", contract.InputRequest{Text: "only if it costs under 10 euros"}, contract.DecisionReplied, "only if it costs under 10 euros"},
		// Words of a person who was shown no prompt are a reply, "ok" too, never an approval.
		{"ok, shown no prompt", contract.InputRequest{Text: "ok", Unprompted: true}, contract.DecisionReplied, "said: ok"},
		{"approve, shown no prompt", contract.InputRequest{Approve: new(true), Text: "yes", Unprompted: true}, contract.DecisionReplied, "said: yes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.resolve(approvalSpec)
			h.scriptModel(askTools("", usage(1, 1), order), answer("Not ordered.", usage(1, 1))).Twice()
			// No CallTool mock: a call that ran would fail the test.
			var got sent
			h.sendInput(time.Minute, tt.in, &got)
			in := input(hi...)
			in.Agent = "shop"
			h.run(in)
			h.result()
			if got.result.Decision != tt.want {
				t.Errorf("decision %q, want %q (rejected: %v)", got.result.Decision, tt.want, got.rejected)
			}
			calls := h.modelCalls()
			toolMsg := calls[1].Messages[len(calls[1].Messages)-1]
			if toolMsg.ToolCallID != "call_o" || !strings.Contains(toolMsg.Content, tt.msg) {
				t.Errorf("the model was told %q, want it to contain %q", toolMsg.Content, tt.msg)
			}
		})
	}
}

func TestApprovalTimeoutDenies(t *testing.T) {
	h := newHarness(t)
	h.resolve(approvalSpec)
	h.scriptModel(askTools("", usage(1, 1), order), answer("Nobody answered.", usage(1, 1))).Twice()
	in := input(hi...)
	in.Agent = "shop"
	in.ApprovalTimeout = 2 * time.Hour
	h.run(in)
	h.result()
	calls := h.modelCalls()
	if msg := calls[1].Messages[len(calls[1].Messages)-1].Content; !strings.Contains(msg, "nobody answered within 2h0m0s") {
		t.Errorf("the model was told %q", msg)
	}
}

func TestInputWhenNotWaitingIsRejected(t *testing.T) {
	h := newHarness(t)
	h.resolve(spec)
	h.scriptModel(reply{resp: contract.ModelResponse{Message: assistant("hi"), FinishReason: "stop"}}).Once().After(time.Hour)
	var got sent
	yes := true
	h.sendInput(time.Minute, contract.InputRequest{Approve: &yes}, &got)
	h.run(input(hi...))
	h.result()
	if got.rejected == nil || !strings.Contains(got.rejected.Error(), contract.ErrNotWaiting) {
		t.Errorf("update on a run that waits for nothing: rejected = %v, want %q", got.rejected, contract.ErrNotWaiting)
	}
}

func TestDecide(t *testing.T) {
	yes, no := true, false
	for _, tt := range []struct {
		in   contract.InputRequest
		want string
	}{
		{contract.InputRequest{Approve: &yes}, contract.DecisionApproved},
		{contract.InputRequest{Approve: &no}, contract.DecisionDenied},
		{contract.InputRequest{Text: "approve"}, contract.DecisionApproved},
		{contract.InputRequest{Text: " Yes! "}, contract.DecisionApproved},
		{contract.InputRequest{Text: "no."}, contract.DecisionDenied},
		{contract.InputRequest{Text: "use the blue one"}, contract.DecisionReplied},
		{contract.InputRequest{Text: "ok", Unprompted: true}, contract.DecisionReplied},
		{contract.InputRequest{Approve: &yes, Unprompted: true}, contract.DecisionReplied},
		{contract.InputRequest{ToolResults: []contract.ToolResult{{ToolCallID: "c", Content: "42"}}}, contract.DecisionToolResults},
	} {
		if got := contract.Decide(tt.in); got != tt.want {
			t.Errorf("Decide(%+v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
