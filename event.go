package longhaul

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// EventType names what an Event reports.
type EventType string

// The event types of a run's stream; docs/api.md describes each.
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
	// EventContentDelta is ephemeral: a piece of a running model call's
	// text, in the runs API's stream only (never in the durable log).
	EventContentDelta EventType = "content_delta"
	// EventReasoningDelta is ephemeral: a piece of a running model call's
	// reasoning (a thinking model's thought), which comes before its
	// text, in the runs API's stream only; the durable content event
	// carries the whole reasoning beside the text (ContentData.Reasoning).
	EventReasoningDelta EventType = "reasoning_delta"
	EventUsage          EventType = "usage"
	// EventApprovalRequired: the run waits for a person to approve a tool
	// call (POST /v1/runs/{id}/input, or the chat's next message).
	EventApprovalRequired EventType = "approval_required"
	// EventApproval: the person's decision on a pending tool call.
	EventApproval EventType = "approval"
	// EventAuthRequired: the run waits for its user to connect the account
	// a tool call needs (an MCP server with auth: oauth), through the
	// connect link it carries.
	EventAuthRequired EventType = "auth_required"
	// EventAuth: the wait of auth_required ended: connected (the call
	// runs now) or not within the approval timeout (the model is told).
	EventAuth EventType = "auth"
	// EventMemoryRecall: memories recalled into the turn (memory: recall)
	// or found by a plan's memory step.
	EventMemoryRecall EventType = "memory_recall"
	// EventMemorySaved: facts of the turn saved to long-term memory
	// (remember: true).
	EventMemorySaved EventType = "memory_saved"
	// EventClientToolCalls: the model called tools the client declared;
	// the run waits for the client to send their results.
	EventClientToolCalls EventType = "client_tool_calls"
	// EventContext: a model call's request was compacted to fit the
	// model's window (ContextData).
	EventContext EventType = "context"
	// EventModelFallback: a model call's model failed after its retries
	// and the next model of its fallback list answers instead
	// (ModelFallbackData).
	EventModelFallback EventType = "model_fallback"
	EventError         EventType = "error"
	EventDone          EventType = "done"
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

// ContentData is the payload of content: the whole text of a finished model
// call (Call names it), durable in the run's log. While the call runs, its
// text streams as ephemeral deltas (Delta); Attempt names the attempt whose
// text this is, so a subscriber that showed another attempt's deltas knows to
// replace them.
type ContentData struct {
	Text string `json:"text"`
	// Reasoning is what a reasoning model streamed as its thinking before
	// the text: never part of Text. While the call runs it streams as
	// reasoning deltas (DeltaReasoning), ahead of the text's.
	Reasoning string `json:"reasoning,omitempty"`
	Call      string `json:"call,omitempty"`
	Attempt   int    `json:"attempt,omitempty"`
	// Cancelled marks the partial text of a call the run's cancellation
	// stopped.
	Cancelled bool `json:"cancelled,omitempty"`
}

// ClientToolCallsData is the payload of client_tool_calls.
type ClientToolCallsData struct {
	Calls []ToolCall `json:"calls"`
	// Call names the model call that made them (its content event, if the
	// model said something with them, carries the same name).
	Call string `json:"call,omitempty"`
}

// ContentResetData is the payload of content_reset, an ephemeral event of
// the runs API's stream: the partial text of the named call's failed attempt
// is void, and the retried attempt's text follows from its start.
type ContentResetData struct {
	Call    string `json:"call,omitempty"`
	Attempt int    `json:"attempt"`
	Reason  string `json:"reason,omitempty"`
}

// ModelFallbackData is the payload of model_fallback: which model of a
// call failed, why, and which one answers instead. A follower that streamed
// the failed model's text drops it (a content_reset comes first): the next
// model's text replaces it, as a retry's does.
type ModelFallbackData struct {
	Call string `json:"call,omitempty"`
	// Model is the model reference that failed; Next is the one that
	// answers instead.
	Model string `json:"model"`
	Next  string `json:"next"`
	// Reason is the failure, as the run would have reported it; Code is
	// its kind (ModelUnavailable, context_length_exceeded,
	// ModelCoolingDown, timeout) and Status the endpoint's HTTP status,
	// when it answered one.
	Reason string `json:"reason"`
	Code   string `json:"code,omitempty"`
	Status int    `json:"status,omitempty"`
}

// Message is the fallback as a status line:
// "model remote:big failed (503), answering with llama3.1:8b".
func (d ModelFallbackData) Message() string {
	why := d.Code
	switch {
	case d.Status != 0:
		why = strconv.Itoa(d.Status)
	case d.Code == "":
		why = "failed"
	}
	return "model " + d.Model + " failed (" + why + "), answering with " + d.Next
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
	// StepID names the plan step whose call it is when the step ran
	// beside others (its events reach the log when it ends, after other
	// steps' step_start).
	StepID string `json:"step_id,omitempty"`
	// Run is the child run an ask_ tool's call runs: a client follows
	// it there (GET /v1/runs/{run}/events).
	Run string `json:"run,omitempty"`
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
	// Agent and Run name the child run (an ask_ call's, at any depth)
	// whose call waits, when a parent run shows its child's approval as
	// its own; an answer given to the parent reaches the child.
	Agent string `json:"agent,omitempty"`
	Run   string `json:"run,omitempty"`
}

// ApprovalData is the payload of approval: "approved", "denied" or
// "replied" (a text answer, which denies the call and reaches the model).
type ApprovalData struct {
	ToolCallID string `json:"tool_call_id"`
	Name       string `json:"name"`
	Decision   string `json:"decision"`
	Text       string `json:"text,omitempty"`
	// Agent and Run name the child run whose call it decides, as in
	// ApprovalRequiredData.
	Agent string `json:"agent,omitempty"`
	Run   string `json:"run,omitempty"`
}

// AuthRequiredData is the payload of auth_required: the call, the OAuth
// server whose account the user must connect, and the connect link.
type AuthRequiredData struct {
	ToolCallID string `json:"tool_call_id"`
	Name       string `json:"name"`
	Server     string `json:"server"`
	URL        string `json:"url"`
}

// AuthData is the payload of auth: whether the user connected the server
// in time.
type AuthData struct {
	ToolCallID string `json:"tool_call_id"`
	Name       string `json:"name"`
	Server     string `json:"server"`
	Connected  bool   `json:"connected"`
	Text       string `json:"text,omitempty"`
}

// MemoryItem is one memory in a memory_recall or memory_saved event.
type MemoryItem struct {
	ID   string `json:"id"`
	Text string `json:"text"`
	// Score is the cosine similarity to the query (memory_recall).
	Score float64 `json:"score,omitempty"`
	// Updated marks a save that updated a near-duplicate (memory_saved).
	Updated bool `json:"updated,omitempty"`
}

// MemoryLines lists memories one a line, as a recall note does after its
// prompt.
func MemoryLines(ms []MemoryItem) string {
	var b strings.Builder
	for _, m := range ms {
		b.WriteString("\n- " + m.Text)
	}
	return strings.TrimPrefix(b.String(), "\n")
}

// MemoryRecallData is the payload of memory_recall: the memories given to
// the model, most similar first. StepID names the plan step that searched,
// if one did.
type MemoryRecallData struct {
	Count    int          `json:"count"`
	Memories []MemoryItem `json:"memories"`
	StepID   string       `json:"step_id,omitempty"`
}

// MemorySavedData is the payload of memory_saved: what the turn taught
// long-term memory.
type MemorySavedData struct {
	Count    int          `json:"count"`
	Memories []MemoryItem `json:"memories"`
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
	// Cut says why an answer that finished "length" is short (CutMaxTokens,
	// CutThinking); empty when the model's own limit did not cut it
	// (max_turns ends a run "length" too).
	Cut string `json:"cut,omitempty"`
}

// DeltaKind names what a Delta carries.
type DeltaKind string

// The kinds of ephemeral deltas.
const (
	// DeltaContent is a piece of a running model call's answer text.
	DeltaContent DeltaKind = "content"
	// DeltaReasoning is a piece of a running model call's reasoning (a
	// thinking model's thought, before its text); its From is the byte
	// position in the call's reasoning.
	DeltaReasoning DeltaKind = "reasoning"
	// DeltaToolStatus is a running tool call's progress.
	DeltaToolStatus DeltaKind = "tool_status"
)

// Delta is an ephemeral piece of a running call's output: the text of a
// model call as it streams, or a tool call's progress. Deltas travel from
// the activity to the API over NATS and never enter workflow history; the
// finished call's whole text is a durable content event, so a lost delta
// costs liveness, never text.
type Delta struct {
	Kind DeltaKind `json:"kind"`
	// Call names the model call (ModelRequest.Call) and Attempt its
	// activity attempt: a higher attempt's text replaces a lower one's.
	Call    string `json:"call,omitempty"`
	Attempt int    `json:"attempt,omitempty"`
	// After is the offset of the last durable event the run had when the
	// call started: the delta belongs after it.
	After int64 `json:"after"`
	// From is the byte position of Text in the call's text (in its
	// reasoning, for DeltaReasoning).
	From   int             `json:"from,omitempty"`
	Text   string          `json:"text,omitempty"`
	Status *ToolStatusData `json:"status,omitempty"`
}

// CallText is the text a running model call has produced so far: what a
// subscriber that joins late (or missed deltas) asks the call for.
type CallText struct {
	Call    string `json:"call"`
	Attempt int    `json:"attempt"`
	After   int64  `json:"after"`
	Text    string `json:"text"`
	// Reasoning is the call's reasoning so far; it came before Text.
	Reasoning string `json:"reasoning,omitempty"`
}
