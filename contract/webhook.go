package contract

// WebhookWorkflowName is the registered name of the workflow that delivers
// one event to one webhook (workflows.WebhookWorkflow). The agent workflow
// starts one per event and webhook, with the id WebhookWorkflowID gives, so
// a replayed or retried start never delivers an event twice.
const WebhookWorkflowName = "WebhookWorkflow"

// The event types a webhook subscription may ask for: a run's end, by its
// status, and a run that starts waiting for a person's approval.
const (
	WebhookRunCompleted = "run.completed"
	WebhookRunFailed    = "run.failed"
	WebhookRunCancelled = "run.cancelled"
	WebhookRunWaiting   = "run.waiting"
)

// WebhookEventTypes are the types a subscription takes when it names none.
var WebhookEventTypes = []string{WebhookRunCompleted, WebhookRunFailed, WebhookRunCancelled, WebhookRunWaiting}

// ResponseEventTypes are the names OpenAI gives the end of a background
// response, by its run's event type: a background response's events are
// sent under them.
var ResponseEventTypes = map[string]string{
	WebhookRunCompleted: "response.completed",
	WebhookRunFailed:    "response.failed",
	WebhookRunCancelled: "response.cancelled",
}

// RunWebhook is what a run knows of its own webhook and how its events
// are named (AgentInput.Webhook).
type RunWebhook struct {
	// ID names the run's own webhook in the store (its URL and secret
	// stay there), "" when it has none.
	ID string `json:"id,omitempty"`
	// Response is the id of the background response the run answers:
	// its events are then OpenAI's response.* and name the response.
	Response string `json:"response,omitempty"`
}

// WebhookTargetsRequest asks which webhooks take an event of a run
// (activities.WebhookTargets).
type WebhookTargetsRequest struct {
	// Owner is the run's principal (its user key).
	Owner string `json:"owner"`
	// Type is the event's run.* type.
	Type string `json:"type"`
	// Run is the run's own webhook id, "" for none.
	Run string `json:"run,omitempty"`
}

// WebhookEvent is the body of a delivery, the same on every attempt:
// {id, object: "event", type, created_at, data}.
type WebhookEvent struct {
	ID        string           `json:"id"`
	Object    string           `json:"object"`
	Type      string           `json:"type"`
	CreatedAt int64            `json:"created_at"`
	Data      WebhookEventData `json:"data"`
}

// WebhookEventData names the run (or background response) the event is
// of, and its status.
type WebhookEventData struct {
	ID     string `json:"id"`
	Object string `json:"object"`
	Status string `json:"status"`
	Agent  string `json:"agent,omitempty"`
	// Error is why a failed run failed.
	Error string `json:"error,omitempty"`
	// ToolCallID and Tool name the call that waits for approval
	// (run.waiting).
	ToolCallID string `json:"tool_call_id,omitempty"`
	Tool       string `json:"tool,omitempty"`
}

// WebhookInput is WebhookWorkflow's and DeliverWebhook's: the webhook to
// deliver to, by id (the activity reads its URL and secret from the store,
// so no secret enters history), and the event.
type WebhookInput struct {
	Webhook string       `json:"webhook"`
	Event   WebhookEvent `json:"event"`
}

// WebhookResult is a delivery that the receiver took.
type WebhookResult struct {
	StatusCode int `json:"status_code"`
	Attempt    int `json:"attempt"`
}

// WebhookWorkflowID is the workflow id of the delivery of event to webhook.
func WebhookWorkflowID(event, webhook string) string {
	return "webhook-" + event + "-" + webhook
}
