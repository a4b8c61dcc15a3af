package workflows_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/workflows"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
)

// The webhook histories replay beside the others (TestReplayHistories):
// a delivery (WebhookWorkflow runs for up to a day, so a worker is
// upgraded under many), and a run that delivered its end to a
// subscription behind the webhooks version marker.
func init() {
	replays = append(replays,
		replayTest{
			file: filepath.Join("testdata", "webhook_history.json"),
			fn:   workflows.WebhookWorkflow, name: contract.WebhookWorkflowName,
			scheduled: []string{"DeliverWebhook"},
			generate:  generateWebhookHistory,
		},
		replayTest{
			file: filepath.Join("testdata", "agent_webhook_history.json"),
			fn:   workflows.AgentWorkflow, name: contract.AgentWorkflowName,
			scheduled: []string{"ChatCompletion"},
			markers:   []string{"webhooks", "WebhookTargets"},
			generate:  generateAgentWebhookHistory,
		})
}

// TestAgentWebhookHistoryStartsDelivery: the committed run started its
// delivery as a child it abandons, under the event's id.
func TestAgentWebhookHistoryStartsDelivery(t *testing.T) {
	h := loadHistoryFile(t, filepath.Join("testdata", "agent_webhook_history.json"))
	var started []*historypb.StartChildWorkflowExecutionInitiatedEventAttributes
	for _, e := range h.GetEvents() {
		if e.GetEventType() == enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED {
			started = append(started, e.GetStartChildWorkflowExecutionInitiatedEventAttributes())
		}
	}
	if len(started) != 1 {
		t.Fatalf("%d child workflows started, want the one delivery", len(started))
	}
	c := started[0]
	if c.GetWorkflowType().GetName() != contract.WebhookWorkflowName || c.GetParentClosePolicy() != enumspb.PARENT_CLOSE_POLICY_ABANDON {
		t.Errorf("child = %s, %s; want %s, abandoned", c.GetWorkflowType().GetName(), c.GetParentClosePolicy(), contract.WebhookWorkflowName)
	}
}

// TestWebhookHistoryRetryPolicy: the committed delivery asked the server
// for attempts with exponential backoff from 2 s, at most an hour apart,
// for up to a day, and none after a refusal for good; and no secret is in
// its history.
func TestWebhookHistoryRetryPolicy(t *testing.T) {
	h := loadHistoryFile(t, filepath.Join("testdata", "webhook_history.json"))
	var a *historypb.ActivityTaskScheduledEventAttributes
	for _, e := range h.GetEvents() {
		if e.GetEventType() == enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED {
			a = e.GetActivityTaskScheduledEventAttributes()
		}
		if strings.Contains(e.String(), "whsec_") {
			t.Errorf("event %d holds a webhook secret", e.GetEventId())
		}
	}
	if a == nil {
		t.Fatal("no activity scheduled")
	}
	p := a.GetRetryPolicy()
	if a.GetScheduleToCloseTimeout().AsDuration() != 24*time.Hour || p.GetInitialInterval().AsDuration() != 2*time.Second ||
		p.GetBackoffCoefficient() != 2 || p.GetMaximumInterval().AsDuration() != time.Hour || p.GetMaximumAttempts() != 0 ||
		!slices.Contains(p.GetNonRetryableErrorTypes(), longhaul.ErrTypeWebhookRejected) || !slices.Contains(p.GetNonRetryableErrorTypes(), longhaul.ErrTypeWebhookGone) {
		t.Errorf("DeliverWebhook scheduled with %v to close and retry policy %v", a.GetScheduleToCloseTimeout().AsDuration(), p)
	}
}

// replaySecret signs the generated deliveries.
var replaySecret = "whsec_" + base64.StdEncoding.EncodeToString([]byte("replay-secret-replay-secret-1234"))

// webhookEnv is a stack whose worker delivers to a receiver on loopback
// that takes every event, and a webhook of user u1's there.
func webhookEnv(t *testing.T, events ...string) *testenv.Env {
	t.Helper()
	env := testenv.Start(t, testenv.Options{WebhookPrivate: true})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(srv.Close)
	ws := env.Blobs.(store.Webhooks)
	if _, err := ws.CreateWebhook(t.Context(), store.Webhook{ID: "wh_replay", Owner: "u1", URL: srv.URL, Events: events, Secret: replaySecret}, 0); err != nil {
		t.Fatal(err)
	}
	return env
}

// generateWebhookHistory makes the delivery of testdata/webhook_history.json
// again on the embedded server.
func generateWebhookHistory(t *testing.T) (*testenv.Env, client.WorkflowRun) {
	t.Helper()
	env := webhookEnv(t, contract.WebhookEventTypes...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var res contract.WebhookResult
	run := execute(ctx, t, env, "replay-webhook-1", contract.WebhookWorkflowName, contract.WebhookInput{Webhook: "wh_replay", Event: contract.WebhookEvent{
		ID: "evt_replay", Object: "event", Type: contract.WebhookRunCompleted, CreatedAt: 1767225600,
		Data: contract.WebhookEventData{ID: "run-replay", Object: "run", Status: contract.StatusCompleted, Agent: "assistant"},
	}}, &res)
	if res.StatusCode != http.StatusNoContent {
		t.Fatalf("delivery = %+v, want 204", res)
	}
	return env, run
}

// generateAgentWebhookHistory makes the run of
// testdata/agent_webhook_history.json again: a chat answer whose end goes
// to its user's subscription.
func generateAgentWebhookHistory(t *testing.T) (*testenv.Env, client.WorkflowRun) {
	t.Helper()
	env := webhookEnv(t, contract.WebhookRunCompleted)
	env.Model.Enqueue(llmtest.Text("Hello."))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run := execute(ctx, t, env, "replay-agent-webhook-1", contract.AgentWorkflowName, contract.AgentInput{
		Agent: "assistant", User: longhaul.User{ID: "u1"},
		Messages: []longhaul.Message{{Role: longhaul.RoleUser, Content: "Hi"}},
	}, nil)
	return env, run
}
