package wire

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
)

// The wire types of the runs API (see api's runs.go) and their checks.

// Limits of a run request's metadata.
const (
	// MaxMetadataKeys is how many metadata keys a run may carry.
	MaxMetadataKeys = 16
	// MaxMetadataKey is the longest metadata key, in bytes.
	MaxMetadataKey = 64
	// MaxMetadataValue is the longest metadata value, in bytes.
	MaxMetadataValue = 512
)

// RunRequest is the body of POST /v1/runs: an agent and either a
// conversation (messages) or one user message (input).
type RunRequest struct {
	Agent    string            `json:"agent"`
	Messages []ChatMessage     `json:"messages,omitempty"`
	Input    *string           `json:"input,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
	// Webhook is a URL the run's events are delivered to, signed (see
	// docs/api.md, Webhooks).
	Webhook string `json:"webhook,omitempty"`
	// MultitaskStrategy says what happens when a run of the same
	// metadata.chat_id is still running (see contract.MultitaskStrategies).
	MultitaskStrategy string `json:"multitask_strategy,omitempty"`
}

// RunCreated answers POST /v1/runs.
type RunCreated struct {
	ID        string `json:"id"`
	Status    string `json:"status"`
	EventsURL string `json:"events_url"`
	// Webhook is the run's own webhook, with its secret, when the request
	// named one: the only answer that shows the secret.
	Webhook *RunWebhook `json:"webhook,omitempty"`
}

// Run answers GET /v1/runs/{id}. Times are RFC 3339, as in events;
// FinishedAt is null while the run goes on.
type Run struct {
	ID     string `json:"id"`
	Agent  string `json:"agent"`
	Status string `json:"status"`
	// Mode is how the run went: chat, agentic, skill or task.
	Mode       string     `json:"mode,omitempty"`
	Dispatch   string     `json:"dispatch,omitempty"`
	Skill      string     `json:"skill,omitempty"`
	CreatedAt  *time.Time `json:"created_at"`
	FinishedAt *time.Time `json:"finished_at"`
	Turns      int        `json:"turns"`
	// Plans are every plan revision, the current one last; Steps are the
	// steps of the plan being (or last) carried out.
	Plans   []contract.PlanRevision `json:"plans"`
	Steps   []longhaul.PlanStep     `json:"steps"`
	Reviews []longhaul.ReviewData   `json:"reviews"`
	Waiting *contract.Waiting       `json:"waiting"`
	Result  string                  `json:"result"`
	Error   string                  `json:"error,omitempty"`
	Usage   longhaul.Usage          `json:"usage"`
	// UsageByModel is Usage per model reference, in the order each model
	// was first used (an agent's models: sends roles to different ones).
	UsageByModel []longhaul.ModelUsage `json:"usage_by_model,omitempty"`
	// Continued is how many times the run continued as new to keep its
	// history bounded.
	Continued int    `json:"continued"`
	EventsURL string `json:"events_url"`
	// ScheduleID names the schedule that started the run, if one did.
	ScheduleID string `json:"schedule_id,omitempty"`
	// Door is the protocol the run was asked through: chat, runs,
	// responses, fork, schedule, a2a or mcp (left out for runs older than
	// the field).
	Door string `json:"door,omitempty"`
	// ForkedFrom is the run this one was forked from, and where; Forks
	// are the runs forked from this one (fork.go). Both are left out when
	// there are none.
	ForkedFrom *ForkedFrom `json:"forked_from,omitempty"`
	Forks      []RunFork   `json:"forks,omitempty"`
}

// RunList answers GET /v1/runs. NextPageToken, when set, is the page_token
// of the next page.
type RunList = Page[RunSummary]

// RunSummary is one run of a RunList.
type RunSummary struct {
	ID         string     `json:"id"`
	Agent      string     `json:"agent"`
	Status     string     `json:"status"`
	CreatedAt  *time.Time `json:"created_at"`
	FinishedAt *time.Time `json:"finished_at"`
	Summary    string     `json:"summary,omitempty"`
	ScheduleID string     `json:"schedule_id,omitempty"`
	Door       string     `json:"door,omitempty"`
}

// RunCancelling answers POST /v1/runs/{id}/cancel.
type RunCancelling struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

// RunInput is the body of POST /v1/runs/{id}/input: an approval decision or
// a text reply, not both.
type RunInput struct {
	Approve *bool   `json:"approve,omitempty"`
	Text    *string `json:"text,omitempty"`
}

// Validate reports the first problem with a run request; check compiles
// schemas, as for ChatRequest.Validate.
func (r *RunRequest) Validate(check SchemaCheck) error {
	if strings.TrimSpace(r.Agent) == "" {
		return errors.New("agent: required")
	}
	switch {
	case r.Messages != nil && r.Input != nil:
		return errors.New("send either messages or input, not both")
	case r.Input != nil:
		if strings.TrimSpace(*r.Input) == "" {
			return errors.New("input: must not be empty")
		}
	case r.Messages == nil:
		return errors.New("messages or input: required")
	default:
		chat := ChatRequest{Model: r.Agent, Messages: r.Messages}
		if err := chat.Validate(check); err != nil {
			return err
		}
	}
	if len(r.Metadata) > MaxMetadataKeys {
		return fmt.Errorf("metadata: at most %d keys", MaxMetadataKeys)
	}
	for k, v := range r.Metadata {
		if k == "" || len(k) > MaxMetadataKey {
			return fmt.Errorf("metadata: keys must have 1 to %d characters", MaxMetadataKey)
		}
		if len(v) > MaxMetadataValue {
			return fmt.Errorf("metadata[%q]: at most %d characters", k, MaxMetadataValue)
		}
	}
	return r.checkMultitask()
}

// Conversation is the conversation the run starts with.
func (r *RunRequest) Conversation() []longhaul.Message {
	if r.Input != nil {
		return []longhaul.Message{{Role: longhaul.RoleUser, Content: *r.Input}}
	}
	return DomainMessages(r.Messages)
}

// Validate reports the first problem with a person's input.
func (in *RunInput) Validate() error {
	switch {
	case in.Approve != nil && in.Text != nil:
		return errors.New(`send either {"approve": true|false} or {"text": "…"}, not both`)
	case in.Text != nil && strings.TrimSpace(*in.Text) == "":
		return errors.New("text: must not be empty")
	case in.Approve == nil && in.Text == nil:
		return errors.New(`send {"approve": true|false} or {"text": "…"}`)
	}
	return nil
}

// InputRequest is the input as the contract carries it to the run.
func (in *RunInput) InputRequest() contract.InputRequest {
	r := contract.InputRequest{Approve: in.Approve}
	if in.Text != nil {
		r.Text = *in.Text
	}
	return r
}
