package workflows_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/workflows"
	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/workflow"
)

// TestWebhooksOfApprovalAndEnd: a run that waits for a person's approval
// notifies its webhooks (its own and its principal's subscriptions, which
// WebhookTargets finds) of run.waiting, naming the call, then of
// run.completed, each event delivered by a WebhookWorkflow under an id
// of its own; a background response's end goes out as OpenAI's
// response.completed, naming the response.
func TestWebhooksOfApprovalAndEnd(t *testing.T) {
	h := newHarness(t)
	h.resolve(approvalSpec)
	h.scriptModel(askTools("", usage(1, 1), order), answer("Ordered.", usage(1, 1))).Twice()
	h.env.OnActivity(h.acts.CallTool, mock.Anything, mock.Anything).Return(contract.ToolResponse{Content: "order ord-1 placed"}, nil).Once()
	var mu sync.Mutex
	var asked []contract.WebhookTargetsRequest
	h.env.OnActivity(h.acts.WebhookTargets, mock.Anything, mock.Anything).Return(
		func(_ context.Context, req contract.WebhookTargetsRequest) ([]string, error) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, req)
			return []string{"wh_sub", req.Run}, nil
		}).Twice()
	var delivered []contract.WebhookInput
	h.env.RegisterWorkflowWithOptions(workflows.WebhookWorkflow, workflow.RegisterOptions{Name: contract.WebhookWorkflowName})
	h.env.OnWorkflow(contract.WebhookWorkflowName, mock.Anything, mock.Anything).Return(
		func(_ workflow.Context, in contract.WebhookInput) (contract.WebhookResult, error) {
			mu.Lock()
			defer mu.Unlock()
			delivered = append(delivered, in)
			return contract.WebhookResult{StatusCode: 200, Attempt: 1}, nil
		}).Times(4)
	yes := true
	var got sent
	h.sendInput(time.Hour, contract.InputRequest{Approve: &yes}, &got)
	in := input(hi...)
	in.Agent, in.Webhook = "shop", &contract.RunWebhook{ID: "wh_run", Response: "resp_1"}
	h.run(in)
	h.result()

	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 2 || asked[0].Type != contract.WebhookRunWaiting || asked[1].Type != contract.WebhookRunCompleted ||
		asked[0].Owner != "u1" || asked[0].Run != "wh_run" {
		t.Fatalf("WebhookTargets asked %+v, want run.waiting then run.completed of u1's run with its webhook", asked)
	}
	if len(delivered) != 4 {
		t.Fatalf("%d deliveries, want 2 events to 2 webhooks", len(delivered))
	}
	ids := map[string]bool{}
	for i, d := range delivered {
		ids[d.Event.ID] = true
		if !strings.HasPrefix(d.Event.ID, "evt_") || d.Event.Object != "event" || d.Event.CreatedAt == 0 {
			t.Errorf("delivery %d = %+v", i, d.Event)
		}
	}
	if len(ids) != 4 {
		t.Errorf("event ids %v, want one per event and webhook", ids)
	}
	wait, end := delivered[0].Event, delivered[3].Event
	if wait.Type != contract.WebhookRunWaiting || wait.Data.Status != contract.StatusWaiting || wait.Data.ToolCallID != order.ID ||
		wait.Data.Tool != order.Name || wait.Data.Object != "run" {
		t.Errorf("waiting event = %+v, want run.waiting naming the call", wait)
	}
	if end.Type != "response.completed" || end.Data.ID != "resp_1" || end.Data.Object != "response" || end.Data.Status != contract.StatusCompleted {
		t.Errorf("end event = %+v, want response.completed of resp_1", end)
	}
}
