package workflows_test

import (
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/stretchr/testify/mock"
)

// shopHelperSpec is the helper with an order tool that needs a person's
// approval.
var shopHelperSpec = contract.AgentSpec{
	ID: "helper", Mode: "chat", Model: "test-model", MaxTurns: 8,
	Tools: []string{"place_order"}, Approval: []string{"place_order"},
}

// askApproval runs the parent asking the helper, whose order waits for a
// person; in is what the person sends the parent an hour in. It returns
// the parent's state a minute in, the update's outcome and the order's
// tool requests.
func askApproval(t *testing.T, in contract.InputRequest, final string) (*askHarness, contract.RunState, *sent, []contract.ToolRequest) {
	t.Helper()
	h := newAskHarness(t)
	h.resolve(mediaSpec)
	h.resolve(shopHelperSpec)
	h.script(map[string][]reply{
		"media":  {askTools("", usage(1, 1), askCall("c1", "Order the book")), answer(final, usage(1, 1))},
		"helper": {askTools("", usage(1, 1), order), answer("Ordered.", usage(1, 1))},
	})
	var ran []contract.ToolRequest
	h.env.OnActivity(h.acts.CallTool, mock.Anything, mock.MatchedBy(func(r contract.ToolRequest) bool { ran = append(ran, r); return true })).
		Return(contract.ToolResponse{Content: "order ord-1 placed"}, nil).Maybe()
	var waiting contract.RunState
	h.env.RegisterDelayedCallback(func() { waiting = h.state() }, time.Minute)
	got := &sent{}
	h.sendInput(time.Hour, in, got)
	h.run(askInput("Order the book through the helper"))
	return h, waiting, got, ran
}

// A child's approval wait shows in its parent: the parent's state waits
// for the child's call (naming the child run and agent), its log has the
// approval_required and approval events naming them, and the person's
// answer to the parent (UpdateInput) approves the child's call, which
// runs with the parent's update as its approval; the child answers and
// the parent answers with it.
func TestAskChildApprovalShowsInParent(t *testing.T) {
	yes := true
	h, waiting, got, ran := askApproval(t, contract.InputRequest{Approve: &yes}, "The helper ordered it.")
	if res := h.result(); res.Content != "The helper ordered it." {
		t.Fatalf("answer %q", res.Content)
	}
	child := askParent + "-ask-1"
	want := &contract.Waiting{Kind: contract.WaitApproval, ToolCallID: order.ID, Tool: order.Name, Arguments: order.Arguments,
		Since: waiting.Waiting.Since, Run: child, Agent: "helper"}
	if waiting.Status != contract.StatusWaiting {
		t.Errorf("the parent's status while its child waits: %q", waiting.Status)
	}
	diff(t, "the parent's waiting", want, waiting.Waiting)
	grant := contract.GrantFor(1, order)
	grant.Run = child
	if got.rejected != nil || !got.done {
		t.Fatalf("the parent refused the answer: %v", got.rejected)
	}
	diff(t, "update result", contract.InputResult{Decision: contract.DecisionApproved, Approved: &grant}, got.result)
	if len(ran) != 1 || ran[0].Approval != "input-after-1h0m0s" || ran[0].ApprovalWorkflow != askParent || ran[0].Seq != 1 {
		t.Fatalf("the order ran as %+v, want once with the parent's update", ran)
	}
	var req longhaul.ApprovalRequiredData
	var dec longhaul.ApprovalData
	for _, e := range h.events() {
		switch e.Type {
		case longhaul.EventApprovalRequired:
			_ = e.Decode(&req)
		case longhaul.EventApproval:
			_ = e.Decode(&dec)
		}
	}
	diff(t, "approval_required", longhaul.ApprovalRequiredData{ToolCallID: order.ID, Name: order.Name, Arguments: order.Arguments, Agent: "helper", Run: child}, req)
	diff(t, "approval", longhaul.ApprovalData{ToolCallID: order.ID, Name: order.Name, Decision: contract.DecisionApproved, Agent: "helper", Run: child}, dec)
	if st := h.state(); st.Waiting != nil {
		t.Errorf("the parent still waits: %+v", st.Waiting)
	}
}

// A reply to the parent reaches the child as a reply: the order never
// runs and the child's model reads the person's words.
func TestAskChildApprovalReplyReachesChild(t *testing.T) {
	h, _, got, ran := askApproval(t, contract.InputRequest{Text: "Buy the paperback instead"}, "Not ordered.")
	h.result()
	if len(ran) != 0 {
		t.Fatalf("the order ran %d times after a reply", len(ran))
	}
	if got.result.Decision != contract.DecisionReplied || got.result.Approved != nil {
		t.Errorf("update result %+v", got.result)
	}
	hc := h.calls("helper")
	if len(hc) != 2 {
		t.Fatalf("the helper called its model %d times, want 2", len(hc))
	}
	last := hc[1].Messages[len(hc[1].Messages)-1]
	if last.Role != longhaul.RoleTool || last.Content != "error: the user did not approve this call and said: Buy the paperback instead" {
		t.Errorf("the helper read %+v", last)
	}
}
