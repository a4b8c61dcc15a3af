package contract

import "time"

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

// A child run's approval wait, shown by its ancestors.
//
// A run asked by another (ParentCall set) that stops for a person's
// approval signals SignalChildWait to its parent run with a ChildWait,
// and again with Ended set once the wait is over; a parent that is
// itself a child passes each notice on to its own parent, so every
// ancestor up to the top run shows the wait as its own (RunState.Waiting
// with Run and Agent set, an approval_required event naming them). A
// person's answer to any of them (UpdateInput) is sent to the waiting run
// as SignalWaitInput, with the update that recorded it.
const (
	SignalChildWait = "child-wait"
	SignalWaitInput = "wait-input"
)

// ChildWait is a notice of a child run's approval wait (SignalChildWait).
type ChildWait struct {
	// Run is the run that waits (a child at any depth) and Agent its
	// agent; Via is the run that sent the notice: the waiting run or a
	// child of the receiver that passes the notice on.
	Run   string `json:"run"`
	Agent string `json:"agent"`
	Via   string `json:"via"`
	// Seq numbers the waiting call in its run; Grant is what approving
	// it grants (ApprovalGrant.Run is the waiting run).
	Seq        int64         `json:"seq"`
	ToolCallID string        `json:"tool_call_id"`
	Tool       string        `json:"tool"`
	Arguments  string        `json:"arguments"`
	Target     string        `json:"target,omitempty"`
	Grant      ApprovalGrant `json:"grant"`
	Since      time.Time     `json:"since"`
	// Ended: the wait is over, with Decision (approved, denied, replied)
	// and Text, as the waiting run's approval event says.
	Ended    bool   `json:"ended,omitempty"`
	Decision string `json:"decision,omitempty"`
	Text     string `json:"text,omitempty"`
}

// WaitInput is a person's answer to a child run's approval wait, given to
// an ancestor run (SignalWaitInput): Seq is the waiting call's; Update
// is the id of the UpdateInput that delivered it, recorded in the history
// of Workflow (run RunID), which the tool activity reads back.
type WaitInput struct {
	Seq      int64        `json:"seq"`
	Input    InputRequest `json:"input"`
	Update   string       `json:"update"`
	Workflow string       `json:"workflow"`
	RunID    string       `json:"run_id"`
}
