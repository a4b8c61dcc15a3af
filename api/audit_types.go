package api

import (
	"fmt"
	"net/url"
	"strconv"
	"unicode/utf8"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/textcut"
)

// The audit trail beside the answer (issue 24, item 4; seed 004's `steps`
// and `metadata.plan` / `metadata.tool_results`): a client that asks for it
// gets, beside a chat completion, the run's plan with its revisions, each
// step's outcome and every tool call with its arguments and a bounded
// result. This file holds its wire types and the pure builder; audit.go
// reads the run and hands the object out.

// Bounds of an audit object's results, in runes: each tool call's (and each
// step's) result is cut at auditResultLimit, and all of them together at
// auditTotalLimit; past it, results are empty and marked truncated. The
// whole output stays where output_url says.
const (
	auditResultLimit = 1000
	auditTotalLimit  = 16000
)

// HeaderAudit asks for the audit trail: any value but "", "0", "false",
// "no" or "off" does (Open WebUI sends it as a connection header).
const HeaderAudit = "X-Longhaul-Audit"

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

// validate checks the options' vector store ids (their form and number;
// whose they are, the tool checks when it searches).
func (o *LonghaulOptions) validate() error {
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

// vectorStores is what the request names, or nil.
func (o *LonghaulOptions) vectorStores() []string {
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

// budget hands out the audit's result bounds.
type budget struct {
	left int
	cut  bool
}

// take bounds one result: at most auditResultLimit runes and what is left
// of the total. It reports whether it cut.
func (b *budget) take(s string) (string, bool) {
	n := min(auditResultLimit, b.left)
	out := s
	if utf8.RuneCountInString(s) > n {
		out = textcut.Runes(s, n)
	}
	b.left -= utf8.RuneCountInString(out)
	cut := len(out) < len(s)
	b.cut = b.cut || cut
	return out, cut
}

// buildAudit describes run from its state (the same as GET /v1/runs/{id}
// reads) and its event log: tool calls come from tool_start, tool_output,
// approval_required, approval and client_tool_calls events, each placed in
// the plan step whose step_start and step_result enclose it.
func buildAudit(run string, st contract.RunState, log []longhaul.Event) Audit {
	ab := &auditBuilder{
		run: run, b: &budget{left: auditTotalLimit}, byID: map[string]int{},
		a: Audit{
			RunID: run, Agent: st.Agent, Status: st.Status, Mode: st.Mode,
			Reviews: nonNil(st.Reviews), ToolCalls: []AuditToolCall{},
			RunURL: "/v1/runs/" + url.PathEscape(run), EventsURL: eventsURL(run),
		},
	}
	a := &ab.a
	if a.Status == "" {
		a.Status = contract.StatusRunning
	}
	// Tool results first: they are what the trail is for; step results
	// repeat what the tools and skills said.
	for _, e := range log {
		ab.event(e)
	}
	a.Plans = make([]contract.PlanRevision, len(st.Plans))
	for i, p := range st.Plans {
		p.Steps = boundSteps(p.Steps, ab.b)
		a.Plans[i] = p
	}
	a.Steps = nonNil(currentSteps(a.Plans))
	a.Truncated = ab.b.cut
	return ab.a
}

// auditBuilder is buildAudit's state as it reads the log: the audit so
// far, the results' budget, each tool call's index by id and the plan
// step the log is in.
type auditBuilder struct {
	run  string
	a    Audit
	b    *budget
	byID map[string]int
	step string
}

// call is the tool call id (created, in the current step, on its first
// event).
func (ab *auditBuilder) call(id, name string, offset int64) *AuditToolCall {
	if i, ok := ab.byID[id]; ok && id != "" {
		return &ab.a.ToolCalls[i]
	}
	ab.byID[id] = len(ab.a.ToolCalls)
	ab.a.ToolCalls = append(ab.a.ToolCalls, AuditToolCall{ID: id, Name: name, StepID: ab.step, Offset: offset})
	return &ab.a.ToolCalls[len(ab.a.ToolCalls)-1]
}

// event reads one event of the log into the audit; an event that does
// not decode is skipped.
func (ab *auditBuilder) event(e longhaul.Event) {
	switch e.Type {
	case longhaul.EventStepStart:
		var d longhaul.StepStartData
		if e.Decode(&d) == nil {
			ab.step = d.StepID
		}
	case longhaul.EventStepResult:
		ab.step = ""
	case longhaul.EventApprovalRequired:
		var d longhaul.ApprovalRequiredData
		if e.Decode(&d) == nil {
			c := ab.call(d.ToolCallID, d.Name, e.Offset)
			c.Arguments, c.Target, c.Status = d.Arguments, d.Target, AuditCallAwaitingApproval
		}
	case longhaul.EventApproval:
		var d longhaul.ApprovalData
		if e.Decode(&d) == nil && d.Decision != "approved" {
			c := ab.call(d.ToolCallID, d.Name, e.Offset)
			c.Status, c.Result = AuditCallDenied, d.Text
		}
	case longhaul.EventToolStart:
		var d longhaul.ToolStartData
		if e.Decode(&d) == nil {
			c := ab.call(d.ToolCallID, d.Name, e.Offset)
			c.Arguments, c.Target, c.Status = d.Arguments, d.Target, AuditCallRunning
		}
	case longhaul.EventToolOutput:
		var d longhaul.ToolOutputData
		if e.Decode(&d) == nil {
			ab.toolOutput(e.Offset, d)
		}
	case longhaul.EventClientToolCalls:
		var d longhaul.ClientToolCallsData
		if e.Decode(&d) == nil {
			for _, tc := range d.Calls {
				c := ab.call(tc.ID, tc.Name, e.Offset)
				c.Arguments, c.Status = tc.Arguments, AuditCallClient
			}
		}
	}
}

// toolOutput records a tool's output, at offset in the log: its status,
// its result within the budget, and where the whole output is read.
func (ab *auditBuilder) toolOutput(offset int64, d longhaul.ToolOutputData) {
	c := ab.call(d.ToolCallID, d.Name, offset)
	c.Status = AuditCallOK
	if d.Error {
		c.Status = AuditCallError
	}
	var cut bool
	c.Result, cut = ab.b.take(d.Output)
	c.Truncated = cut || d.Truncated
	switch {
	case d.Ref != "":
		c.OutputURL = "/v1/runs/" + url.PathEscape(ab.run) + "/outputs/" + url.PathEscape(d.Ref)
	case c.Truncated:
		c.OutputURL = eventsURL(ab.run) + "?after=" + strconv.FormatInt(offset-1, 10)
	}
}

// boundSteps is a copy of steps whose results are bounded by b.
func boundSteps(steps []longhaul.PlanStep, b *budget) []longhaul.PlanStep {
	out := make([]longhaul.PlanStep, len(steps))
	for i, s := range steps {
		s.Result, _ = b.take(s.Result)
		out[i] = s
	}
	return out
}
