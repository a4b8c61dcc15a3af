package contract

import (
	"github.com/longhaul-dev/longhaul"
)

// ToolAttempts is how many times a tool call is tried when the tool itself
// fails. An attempt lost to the infrastructure (a worker killed, a
// heartbeat that could not reach a restarting Temporal server) is not the
// tool's failure: it does not count, and the call is tried again within
// its time limit (see workflows' toolOptions).
const ToolAttempts = 3

// ToolRequest is one tool call to run.
type ToolRequest struct {
	Call longhaul.ToolCall `json:"call"`
	// Agent, and Skill when the call comes from a skill's own loop, say
	// whose call it is. CallTool reads what they may use from the catalog
	// the worker loaded, never from the request: a forged or stale request
	// (a checkpoint carried across continue-as-new, a workflow started by
	// hand) cannot widen it.
	Agent string `json:"agent"`
	Skill string `json:"skill,omitempty"`
	// Seq numbers the call among all the run's tool calls, from 1. The
	// workflow carries it across continue-as-new, so it is never reused;
	// the idempotency key is made of it (see activities.IdempotencyKey).
	Seq int64 `json:"seq"`
	// Approval is the id of the input update with which a person approved
	// the call. A tool that requires approval runs only when that update is
	// recorded in the run's history as approving this call (see
	// ApprovalGrant).
	Approval string `json:"approval,omitempty"`
	// ApprovalWorkflow and ApprovalRunID name the ancestor run whose
	// history records the Approval update, when a person approved the
	// call through it (see ChildWait); empty for the run's own update.
	ApprovalWorkflow string `json:"approval_workflow,omitempty"`
	ApprovalRunID    string `json:"approval_run_id,omitempty"`
	// After is the offset of the call's tool_start event: its progress
	// belongs after it.
	After int64 `json:"after,omitempty"`
	// Progress, for a child run's call, is the line to show on the
	// parent's call as the call starts.
	Progress *Progress `json:"progress,omitempty"`
	// User is the run's user key and Chat its chat id: what the memory
	// tools are scoped by. The workflow sets them from its input, which the
	// API built from the authenticated principal; the model's arguments
	// never carry them.
	User string `json:"user,omitempty"`
	Chat string `json:"chat,omitempty"`
	// Principal is the run's user whole (role, groups, id, e-mail), what
	// allow: rules judge: CallTool refuses a tool they do not let the user
	// use, as it refuses one outside the scope. The workflow sets it from
	// its input; a request without it (a call scheduled before it existed)
	// is judged as the user key alone, with no role or groups.
	Principal *longhaul.User `json:"principal,omitempty"`
	// VectorStores are the run's vector stores (the agent's and the
	// request's): what document_search searches, as User. The workflow
	// sets them; the model's arguments never carry them.
	VectorStores []string `json:"vector_stores,omitempty"`
}

// ToolResponse is a tool's result as the model will read it.
type ToolResponse struct {
	Content   string `json:"content"`
	Truncated bool   `json:"truncated,omitempty"`
	// Ref names the whole result in the store when Content is an excerpt.
	Ref string `json:"ref,omitempty"`
	// Connect, when set, says the call did not run because the user has
	// not connected the account it needs: Content tells the model so,
	// with the link; a run that can wait for the connection (AuthWait)
	// waits and calls again.
	Connect *Connect `json:"connect,omitempty"`
}

// Connect is an account a tool call needs the user to connect: the OAuth
// server and the connect link, made for the run that waits.
type Connect struct {
	Server string `json:"server"`
	URL    string `json:"url"`
}
