package contract

import (
	"time"

	"github.com/longhaul-dev/longhaul"
)

// TimelineMessage is one stored message of a chat turn: the message as the
// model saw it, and for a tool result what became of the call.
type TimelineMessage struct {
	Role       longhaul.Role       `json:"role"`
	Content    string              `json:"content,omitempty"`
	Name       string              `json:"name,omitempty"`
	ToolCalls  []longhaul.ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string              `json:"tool_call_id,omitempty"`
	// Ref names the whole tool result in the blob store when Content is
	// an excerpt of it.
	Ref       string `json:"ref,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
	Error     bool   `json:"error,omitempty"`
	// Status is the call's durable events, in order: started, waiting for
	// approval, approved or denied, finished or failed.
	Status []CallStatus `json:"status,omitempty"`
}

// CallStatus is one event of a tool call's life.
type CallStatus struct {
	// Type is the event type: tool_start, approval_required, approval,
	// tool_output.
	Type string    `json:"type"`
	Time time.Time `json:"time"`
	// Detail is the approval's decision, or "error" for a failed call.
	Detail string `json:"detail,omitempty"`
}
