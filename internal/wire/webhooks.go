package wire

// WebhookRequest is the body of POST /v1/webhooks: where to deliver, and
// which event types (all of them when none).
type WebhookRequest struct {
	URL    string   `json:"url"`
	Events []string `json:"events,omitempty"`
}

// Webhook is a subscription as the API answers it. Secret (whsec_…) is
// given once, in the answer to its creation.
type Webhook struct {
	ID        string   `json:"id"`
	Object    string   `json:"object"`
	URL       string   `json:"url"`
	Events    []string `json:"events"`
	Secret    string   `json:"secret,omitempty"`
	CreatedAt int64    `json:"created_at"`
}

// WebhookList answers GET /v1/webhooks.
type WebhookList = List[Webhook]

// RunWebhook is the webhook a single run was started with (the webhook
// field of POST /v1/runs, of a background POST /v1/responses): its id,
// for GET /v1/webhooks/{id}/deliveries, and its secret, given only here.
type RunWebhook struct {
	ID     string `json:"id"`
	URL    string `json:"url"`
	Secret string `json:"secret"`
}

// WebhookDelivery is one delivery attempt: the event (its id is the
// webhook-id header, the same on every attempt), the attempt's number,
// and the receiver's status, or why none came.
type WebhookDelivery struct {
	Object     string `json:"object"`
	EventID    string `json:"event_id"`
	Type       string `json:"type"`
	Attempt    int    `json:"attempt"`
	StatusCode *int   `json:"status_code"`
	Error      string `json:"error,omitempty"`
	CreatedAt  int64  `json:"created_at"`
}

// WebhookDeliveryList answers GET /v1/webhooks/{id}/deliveries, newest
// first.
type WebhookDeliveryList = List[WebhookDelivery]
