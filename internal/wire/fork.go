package wire

import (
	"encoding/json"
	"errors"
	"strings"
	"time"
	"unicode"

	"github.com/longhaul-dev/longhaul"
)

// The wire types of forking a run (POST /v1/runs/{id}/fork, see api's
// runsapi/fork.go) and their checks.

// MaxForkModel is the longest model reference a fork may name, in bytes.
const MaxForkModel = 200

// ForkRequest is the body of POST /v1/runs/{id}/fork: where to fork (at: an
// event offset, "start", "end", a plan step "step-3" or a tool call id;
// absent is the run's latest point) and what to change: the request
// (messages or input, not both), the agent, the model.
type ForkRequest struct {
	At       json.RawMessage `json:"at,omitempty"`
	Messages []ChatMessage   `json:"messages,omitempty"`
	Input    *string         `json:"input,omitempty"`
	Agent    string          `json:"agent,omitempty"`
	Model    string          `json:"model,omitempty"`
}

// ForkedFrom is a fork's lineage: the run it was forked from, and where.
type ForkedFrom struct {
	Run string `json:"run"`
	At  string `json:"at"`
}

// ForkCreated answers POST /v1/runs/{id}/fork.
type ForkCreated struct {
	ID         string     `json:"id"`
	Status     string     `json:"status"`
	EventsURL  string     `json:"events_url"`
	ForkedFrom ForkedFrom `json:"forked_from"`
}

// RunFork is one fork of a run, as GET /v1/runs/{id} lists them.
type RunFork struct {
	ID        string     `json:"id"`
	At        string     `json:"at"`
	Status    string     `json:"status"`
	CreatedAt *time.Time `json:"created_at"`
}

// Validate reports the first problem with a fork request; check compiles
// schemas, as for ChatRequest.Validate.
func (r *ForkRequest) Validate(check SchemaCheck) error {
	switch {
	case r.Messages != nil && r.Input != nil:
		return errors.New("send either messages or input, not both")
	case r.Input != nil && strings.TrimSpace(*r.Input) == "":
		return errors.New("input: must not be empty")
	case r.Messages != nil:
		chat := ChatRequest{Model: "fork", Messages: r.Messages}
		if err := chat.Validate(check); err != nil {
			return err
		}
	}
	if len(r.Model) > MaxForkModel || strings.ContainsFunc(r.Model, unicode.IsSpace) || strings.ContainsFunc(r.Model, unicode.IsControl) {
		return errors.New("model: a model reference (\"model\" or \"endpoint:model\"), without spaces, at most 200 bytes")
	}
	return nil
}

// Conversation is the edited request the fork starts from, or nil when
// the fork keeps the old run's.
func (r *ForkRequest) Conversation() []longhaul.Message {
	switch {
	case r.Input != nil:
		return []longhaul.Message{{Role: longhaul.RoleUser, Content: *r.Input}}
	case r.Messages != nil:
		return DomainMessages(r.Messages)
	}
	return nil
}
