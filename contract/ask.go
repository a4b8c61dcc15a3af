package contract

// This file is agents asking agents: an agent's ask_<id> tool (agents: in
// its file) runs agent <id> as a child run of the caller's, and the child's
// answer is the call's result.

// AskSpec is one ask_ tool of an agent's spec: the tool's name, the agent
// it asks and that agent's description (what the model is told of it).
type AskSpec struct {
	Tool        string `json:"tool"`
	Agent       string `json:"agent"`
	Description string `json:"description,omitempty"`
}

// ParentCall names the tool call of a parent run that a child run answers
// (an ask_ tool's call): the child's progress is shown on that call, in the
// parent's stream.
type ParentCall struct {
	// Run is the parent's run (workflow) id.
	Run string `json:"run"`
	// ToolCallID and Tool are the parent's call.
	ToolCallID string `json:"tool_call_id"`
	Tool       string `json:"tool"`
	// After is the offset of the call's tool_start in the parent's event
	// log: the progress belongs after it.
	After int64 `json:"after"`
}

// Progress asks an activity of a child run to publish, as it starts, a
// line of progress (tool_status) on its parent's call. It travels over
// NATS only: the parent's history does not grow with its child's work.
type Progress struct {
	ParentCall
	Message string `json:"message"`
}

// MemoParent is the memo field of a child run that holds its parent's run
// id (Temporal shows the parent of a child workflow itself too).
const MemoParent = "parent"

// MaxAskDepth bounds how deep runs ask agents: a run at this depth (its
// AgentInput.Depth) is offered no ask_ tools. Load refuses agents that ask
// each other in a cycle; the bound holds whatever catalog a run meets.
const MaxAskDepth = 3

// MaxAsksPerTurn bounds the ask_ calls one model answer may run at once;
// the calls past it get a tool error the model reads.
const MaxAsksPerTurn = 4
