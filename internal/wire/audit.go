package wire

import (
	"fmt"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
)

// The audit trail's wire types: the "longhaul" options a
// chat request carries and the audit object an answer carries beside it.
// api/runweb builds the object (BuildAudit) from a run's state and log.

// LonghaulOptions are the Longhaul-only fields of a chat request, under
// its top-level "longhaul" key (openai-python sends them with extra_body,
// openai-node as an extra body field).
type LonghaulOptions struct {
	// Audit asks for the audit trail beside the answer.
	Audit bool `json:"audit"`
	// VectorStores are vector stores of the principal ("vs_…") the run's
	// document_search searches, beside the agent's own (vector_stores:).
	VectorStores []string `json:"vector_stores,omitempty"`
}

// Validate checks the options' vector store ids (their form and number;
// whose they are, the tool checks when it searches).
func (o *LonghaulOptions) Validate() error {
	if o == nil {
		return nil
	}
	if len(o.VectorStores) > longhaul.MaxVectorStores {
		return fmt.Errorf("longhaul.vector_stores: at most %d, got %d", longhaul.MaxVectorStores, len(o.VectorStores))
	}
	for i, id := range o.VectorStores {
		if !longhaul.ValidVectorStoreID(id) {
			return fmt.Errorf("longhaul.vector_stores[%d]: %q is not a vector store id (vs_…)", i, id)
		}
	}
	return nil
}

// StoreIDs are the vector stores the request names, or nil.
func (o *LonghaulOptions) StoreIDs() []string {
	if o == nil {
		return nil
	}
	return o.VectorStores
}

// Audit is the audit trail of a run: the "longhaul" object of a chat
// completion (or of the last chunk before [DONE]) and GET
// /v1/runs/{id}/audit. Plans, Steps and Reviews are GET /v1/runs/{id}'s.
type Audit struct {
	RunID  string `json:"run_id"`
	Agent  string `json:"agent,omitempty"`
	Status string `json:"status,omitempty"`
	// Mode is how the run went: chat, agentic, skill or task.
	Mode    string                  `json:"mode,omitempty"`
	Plans   []contract.PlanRevision `json:"plans"`
	Steps   []longhaul.PlanStep     `json:"steps"`
	Reviews []longhaul.ReviewData   `json:"reviews"`
	// ToolCalls are the run's tool calls in the order they were made.
	ToolCalls []AuditToolCall `json:"tool_calls"`
	// Truncated reports that some result was cut to the audit's bounds.
	Truncated bool   `json:"truncated"`
	RunURL    string `json:"run_url"`
	EventsURL string `json:"events_url"`
	// Error says why the trail is missing when the run could not be read
	// after it answered; the answer itself stands.
	Error string `json:"error,omitempty"`
}

// Statuses of an audited tool call.
const (
	// AuditCallOK: the tool returned a result.
	AuditCallOK = "ok"
	// AuditCallError: the tool failed; Result is its error.
	AuditCallError = "error"
	// AuditCallDenied: a person refused the call (or replied instead); it
	// never ran.
	AuditCallDenied = "denied"
	// AuditCallAwaitingApproval: the call waits for a person's approval.
	AuditCallAwaitingApproval = "awaiting_approval"
	// AuditCallRunning: the call was made and has not returned yet.
	AuditCallRunning = "running"
	// AuditCallClient: a tool the client declared; the client runs it.
	AuditCallClient = "client"
)

// AuditToolCall is one tool call of an audited run.
type AuditToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments are what the model sent, as JSON text (as in OpenAI's
	// tool_calls).
	Arguments string `json:"arguments"`
	// Target names what the call acts on (a host, a path), as the Temporal
	// UI shows it.
	Target string `json:"target,omitempty"`
	// StepID is the plan step the call ran in, if any.
	StepID string `json:"step_id,omitempty"`
	// Run is the child run an ask_ tool's call ran (the asked agent's):
	// GET /v1/runs/{run} reads it.
	Run string `json:"run,omitempty"`
	// Status is one of the AuditCall* statuses.
	Status string `json:"status"`
	Result string `json:"result"`
	// Truncated: Result is a part; OutputURL serves more.
	Truncated bool `json:"truncated,omitempty"`
	// OutputURL reads the whole output: the stored output (GET
	// /v1/runs/{id}/outputs/{ref}), or, for an output the run did not
	// store, the run's event stream from its tool_output event.
	OutputURL string `json:"output_url,omitempty"`
	// Offset is the offset of the call's first event in the run's log.
	Offset int64 `json:"offset"`
}
