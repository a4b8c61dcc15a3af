package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/tools"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// The wire types of the runs API (see runs.go) and their checks: no fiber,
// no Temporal, so they read and test on their own.

// Limits of the runs API's requests.
const (
	defaultListLimit = 20
	maxListLimit     = 100
	maxMetadataKeys  = 16
	maxMetadataKey   = 64
	maxMetadataValue = 512
)

// RunRequest is the body of POST /v1/runs: an agent and either a
// conversation (messages) or one user message (input).
type RunRequest struct {
	Agent    string             `json:"agent"`
	Messages []wire.ChatMessage `json:"messages,omitempty"`
	Input    *string            `json:"input,omitempty"`
	Metadata map[string]string  `json:"metadata,omitempty"`
}

// RunCreated answers POST /v1/runs.
type RunCreated struct {
	ID        string `json:"id"`
	Status    string `json:"status"`
	EventsURL string `json:"events_url"`
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
}

// RunList answers GET /v1/runs. NextPageToken, when set, is the page_token
// of the next page.
type RunList struct {
	Object        string       `json:"object"`
	Data          []RunSummary `json:"data"`
	NextPageToken string       `json:"next_page_token,omitempty"`
}

// RunSummary is one run of a RunList.
type RunSummary struct {
	ID         string     `json:"id"`
	Agent      string     `json:"agent"`
	Status     string     `json:"status"`
	CreatedAt  *time.Time `json:"created_at"`
	FinishedAt *time.Time `json:"finished_at"`
	Summary    string     `json:"summary,omitempty"`
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

// validate reports the first problem with a run request.
func (r *RunRequest) validate() error {
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
		chat := wire.ChatRequest{Model: r.Agent, Messages: r.Messages}
		if err := chat.Validate(tools.CheckSchema); err != nil {
			return err
		}
	}
	if len(r.Metadata) > maxMetadataKeys {
		return fmt.Errorf("metadata: at most %d keys", maxMetadataKeys)
	}
	for k, v := range r.Metadata {
		if k == "" || len(k) > maxMetadataKey {
			return fmt.Errorf("metadata: keys must have 1 to %d characters", maxMetadataKey)
		}
		if len(v) > maxMetadataValue {
			return fmt.Errorf("metadata[%q]: at most %d characters", k, maxMetadataValue)
		}
	}
	return nil
}

// messages is the conversation the run starts with.
func (r *RunRequest) messages() []longhaul.Message {
	if r.Input != nil {
		return []longhaul.Message{{Role: longhaul.RoleUser, Content: *r.Input}}
	}
	return wire.DomainMessages(r.Messages)
}

// validate reports the first problem with a person's input.
func (in *RunInput) validate() error {
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

func (in *RunInput) request() contract.InputRequest {
	r := contract.InputRequest{Approve: in.Approve}
	if in.Text != nil {
		r.Text = *in.Text
	}
	return r
}

// currentSteps are the steps of the plan being carried out (or carried out
// last): the last revision that is active or done.
func currentSteps(plans []contract.PlanRevision) []longhaul.PlanStep {
	for i := len(plans) - 1; i >= 0; i-- {
		if p := plans[i]; p.Status == contract.PlanActive || p.Status == contract.PlanDone {
			return p.Steps
		}
	}
	return nil
}

// nonNil makes an absent list encode as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func eventsURL(id string) string { return "/v1/runs/" + url.PathEscape(id) + "/events" }

// decodeStrict decodes a JSON body into v, refusing unknown fields and
// trailing data: the native API names its mistakes instead of ignoring them.
func decodeStrict(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return errors.New("request body is empty")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("invalid JSON body: %s", strings.TrimPrefix(jsonProblem(err), "json: "))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("invalid JSON body: data after the object")
	}
	return nil
}
