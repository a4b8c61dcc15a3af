package workflows

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"

	"github.com/longhaul-dev/longhaul/contract"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// versionWebhooks marks the runs that deliver their events to webhooks
// (workflow.GetVersion): a run recorded before sends none, and replays
// as it ran.
const versionWebhooks = "webhooks"

// WebhookWorkflow delivers one event to one webhook: DeliverWebhook,
// retried with backoff for up to a day (webhookOptions). The agent
// workflow starts it, once per event and webhook, under the id
// contract.WebhookWorkflowID gives, and does not wait for it: the run
// ends at once, the delivery goes on. Every attempt sends the same
// event with the same webhook-id, so a receiver that took an attempt
// whose answer was lost drops the next one: at least once, deduplicated
// by id.
func WebhookWorkflow(ctx workflow.Context, in contract.WebhookInput) (contract.WebhookResult, error) {
	workflow.SetCurrentDetails(ctx, "delivering "+in.Event.Type+" ("+in.Event.ID+") to webhook "+in.Webhook)
	var res contract.WebhookResult
	err := workflow.ExecuteActivity(webhookOptions(ctx, in.Event.Type), a.DeliverWebhook, in).Get(ctx, &res)
	if err == nil {
		workflow.SetCurrentDetails(ctx, "delivered on attempt "+strconv.Itoa(res.Attempt)+" (HTTP "+strconv.Itoa(res.StatusCode)+")")
	}
	return res, err
}

// notify starts the delivery of a run event (a run.* type) to every
// webhook that takes it: the principal's subscriptions to it and the
// run's own webhook. It does not wait for a delivery, only for each
// delivery's workflow to start, so that the run may end at once. A
// housekeeping run (a client's title task) notifies nobody.
func (r *run) notify(ctx workflow.Context, typ string, data contract.WebhookEventData) {
	// A pinned replay (an evaluation's) notifies nobody: it has no side
	// effects. (Only such runs take the first test, before the version.)
	if r.in.Pinned != nil || r.in.Background || workflow.GetVersion(ctx, versionWebhooks, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return
	}
	req := contract.WebhookTargetsRequest{Owner: r.in.User.Key(), Type: typ}
	if r.in.Webhook != nil {
		req.Run = r.in.Webhook.ID
	}
	var targets []string
	err := workflow.ExecuteLocalActivity(conversationOptions(ctx, "find the webhooks of "+typ), a.WebhookTargets, req).Get(ctx, &targets)
	if err != nil {
		workflow.GetLogger(ctx).Warn("finding the run's webhooks failed; none is notified of this event", "type", typ, "error", err)
		return
	}
	if len(targets) == 0 {
		return
	}
	started := make([]workflow.Future, 0, len(targets))
	for _, id := range targets {
		ev := r.webhookEvent(ctx, typ, id, data)
		cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
			WorkflowID: contract.WebhookWorkflowID(ev.ID, id),
			// The delivery outlives the run, which ends without waiting.
			ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_ABANDON,
			WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
			StaticSummary:         ev.Type + " to webhook " + id,
		})
		f := workflow.ExecuteChildWorkflow(cctx, contract.WebhookWorkflowName, contract.WebhookInput{Webhook: id, Event: ev})
		started = append(started, f.GetChildWorkflowExecution())
	}
	for _, f := range started {
		// A delivery already started (the id is the event's) is no
		// failure: it is the same event.
		var exists *temporal.ChildWorkflowExecutionAlreadyStartedError
		if err := f.Get(ctx, nil); err != nil && !errors.As(err, &exists) {
			workflow.GetLogger(ctx).Warn("starting a webhook delivery failed", "type", typ, "error", err)
		}
	}
}

// webhookEvent is the event of typ the webhook gets now: its id is
// derived from the run's first execution (a run id, unique, kept across
// continue-as-new), the event's place in its log and the webhook, so it
// is the same however often the run's code replays it, and no two
// webhooks (which may share a receiver, and its store of ids seen) get
// the same id. A background response's
// events are sent under OpenAI's names (response.completed, …) and name
// the response.
func (r *run) webhookEvent(ctx workflow.Context, typ, webhook string, data contract.WebhookEventData) contract.WebhookEvent {
	info := workflow.GetInfo(ctx)
	data.ID, data.Object, data.Agent = info.WorkflowExecution.ID, "run", r.in.Agent
	if w := r.in.Webhook; w != nil && w.Response != "" {
		if name, ok := contract.ResponseEventTypes[typ]; ok {
			typ, data.ID, data.Object, data.Agent = name, w.Response, "response", ""
		}
	}
	h := sha256.Sum256([]byte(info.FirstRunID + "\x00" + typ + "\x00" + strconv.FormatInt(r.log.last, 10) + "\x00" + webhook))
	return contract.WebhookEvent{
		ID: "evt_" + hex.EncodeToString(h[:12]), Object: "event", Type: typ,
		CreatedAt: workflow.Now(ctx).Unix(), Data: data,
	}
}

// webhookEnd is the run.* type of a run's end in status.
func webhookEnd(status string) string {
	switch status {
	case contract.StatusFailed:
		return contract.WebhookRunFailed
	case contract.StatusCancelled:
		return contract.WebhookRunCancelled
	}
	return contract.WebhookRunCompleted
}
