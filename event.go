package longhaul

import (
	"encoding/json"
	"time"
)

// EventType names what an Event reports.
type EventType string

// The event types of a run's stream (DESIGN.md, Events).
const (
	EventThinking      EventType = "thinking"
	EventPlan          EventType = "plan"
	EventStepStart     EventType = "step_start"
	EventStepResult    EventType = "step_result"
	EventReview        EventType = "review"
	EventToolStart     EventType = "tool_start"
	EventToolStatus    EventType = "tool_status"
	EventToolOutput    EventType = "tool_output"
	EventSkillActivity EventType = "skill_activity"
	EventContent       EventType = "content"
	EventContentReset  EventType = "content_reset"
	EventUsage         EventType = "usage"
	// EventApprovalRequired: the run waits for a person to approve a tool
	// call (POST /v1/runs/{id}/input, or the chat's next message).
	EventApprovalRequired EventType = "approval_required"
	// EventApproval: the person's decision on a pending tool call.
	EventApproval EventType = "approval"
	EventError    EventType = "error"
	EventDone     EventType = "done"
)

// Event is one entry of a run's event log. Offsets start at 1 and strictly
// increase within a run; Data is the type's payload as JSON.
type Event struct {
	Offset int64           `json:"offset"`
	Type   EventType       `json:"type"`
	Time   time.Time       `json:"time"`
	Data   json.RawMessage `json:"data,omitempty"`
}

// Decode unmarshals the event's payload into v.
func (e Event) Decode(v any) error { return json.Unmarshal(e.Data, v) }

// NewEvent builds an event without an offset (the log assigns it) from a
// payload; a payload that cannot be encoded yields an event without data.
func NewEvent(t EventType, at time.Time, payload any) Event {
	e := Event{Type: t, Time: at}
	if payload != nil {
		if b, err := json.Marshal(payload); err == nil {
			e.Data = b
		}
	}
	return e
}

// ContentData is the payload of content: a piece of the answer's text.
// Source tells which model call produced it (its call id) so a reset can name
// what it discards.
type ContentData struct {
	Text string `json:"text"`
	Call string `json:"call,omitempty"`
}

// ContentResetData is the payload of content_reset: the partial text of the
// named call's failed attempt is void.
type ContentResetData struct {
	Call    string `json:"call,omitempty"`
	Attempt int    `json:"attempt"`
	Reason  string `json:"reason,omitempty"`
}

// ThinkingData is the payload of thinking: a short progress line.
type ThinkingData struct {
	Message string `json:"message"`
}

// ToolStartData is the payload of tool_start.
type ToolStartData struct {
	ToolCallID string `json:"tool_call_id"`
	Name       string `json:"name"`
	Arguments  string `json:"arguments"`
	Target     string `json:"target,omitempty"`
}

// ToolStatusData is the payload of tool_status: progress of one tool call.
type ToolStatusData struct {
	ToolCallID string  `json:"tool_call_id"`
	Name       string  `json:"name,omitempty"`
	Message    string  `json:"message"`
	Progress   float64 `json:"progress,omitempty"`
}

// ToolOutputData is the payload of tool_output: what a tool returned (an
// excerpt when long) or the error it failed with.
type ToolOutputData struct {
	ToolCallID string `json:"tool_call_id"`
	Name       string `json:"name"`
	Output     string `json:"output"`
	Error      bool   `json:"error,omitempty"`
	Truncated  bool   `json:"truncated,omitempty"`
	// Ref names the whole output in the store when the model read an
	// excerpt; GET /v1/runs/{id}/outputs/{ref} returns it.
	Ref string `json:"ref,omitempty"`
}

// ApprovalRequiredData is the payload of approval_required.
type ApprovalRequiredData struct {
	ToolCallID string `json:"tool_call_id"`
	Name       string `json:"name"`
	Arguments  string `json:"arguments"`
	Target     string `json:"target,omitempty"`
}

// ApprovalData is the payload of approval: "approved", "denied" or
// "replied" (a text answer, which denies the call and reaches the model).
type ApprovalData struct {
	ToolCallID string `json:"tool_call_id"`
	Name       string `json:"name"`
	Decision   string `json:"decision"`
	Text       string `json:"text,omitempty"`
}

// ErrorData is the payload of error.
type ErrorData struct {
	Message string `json:"message"`
	Code    string `json:"code,omitempty"`
}

// DoneData is the payload of done, the last event of a run.
type DoneData struct {
	Status       string `json:"status"`
	FinishReason string `json:"finish_reason,omitempty"`
}

// PublishSignal is the name of the signal that carries an EventBatch from an
// activity to its workflow's event log.
const PublishSignal = "publish"

// EventBatch carries events from an activity to a workflow's log. Seq
// increases by one per batch of a publisher, so a batch delivered twice is
// appended once.
type EventBatch struct {
	Publisher string  `json:"publisher"`
	Seq       int64   `json:"seq"`
	Events    []Event `json:"events"`
}
