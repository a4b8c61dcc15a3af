package runweb

import (
	"context"
	"net/url"
	"strconv"
	"unicode/utf8"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/textcut"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// The audit trail beside the answer (the `steps`, `metadata.plan` and
// `metadata.tool_results` a research client reads): a client that asks for it
// gets, beside a chat completion, the run's plan with its revisions, each
// step's outcome and every tool call with its arguments and a bounded
// result. This file holds its pure builder (the wire types are internal/wire's
// audit.go) and what reads the run for it.

// Bounds of an audit object's results, in runes: each tool call's (and each
// step's) result is cut at auditResultLimit, and all of them together at
// auditTotalLimit; past it, results are empty and marked truncated. The
// whole output stays where output_url says.
const (
	auditResultLimit = 1000
	auditTotalLimit  = 16000
)

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

// BuildAudit describes run from its state (the same as GET /v1/runs/{id}
// reads) and its event log: tool calls come from tool_start, tool_output,
// approval_required, approval and client_tool_calls events, each placed in
// the plan step whose step_start and step_result enclose it.
func BuildAudit(run string, st contract.RunState, log []longhaul.Event) wire.Audit {
	ab := &auditBuilder{
		run: run, b: &budget{left: auditTotalLimit}, byID: map[string]int{},
		a: wire.Audit{
			RunID: run, Agent: st.Agent, Status: st.Status, Mode: st.Mode,
			Reviews: NonNil(st.Reviews), ToolCalls: []wire.AuditToolCall{},
			RunURL: "/v1/runs/" + url.PathEscape(run), EventsURL: EventsURL(run),
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
	a.Steps = NonNil(CurrentSteps(a.Plans))
	a.Truncated = ab.b.cut
	return ab.a
}

// auditBuilder is BuildAudit's state as it reads the log: the audit so
// far, the results' budget, each tool call's index by id and the plan
// step the log is in.
type auditBuilder struct {
	run  string
	a    wire.Audit
	b    *budget
	byID map[string]int
	step string
}

// call is the tool call id (created, in the current step, on its first
// event).
func (ab *auditBuilder) call(id, name string, offset int64) *wire.AuditToolCall {
	if i, ok := ab.byID[id]; ok && id != "" {
		return &ab.a.ToolCalls[i]
	}
	ab.byID[id] = len(ab.a.ToolCalls)
	ab.a.ToolCalls = append(ab.a.ToolCalls, wire.AuditToolCall{ID: id, Name: name, StepID: ab.step, Offset: offset})
	return &ab.a.ToolCalls[len(ab.a.ToolCalls)-1]
}

// callStarted records a call that an approval_required (whose payload has
// tool_start's fields) or a tool_start event at offset names, with its
// arguments, target and status.
func (ab *auditBuilder) callStarted(offset int64, d longhaul.ToolStartData, status string) {
	c := ab.call(d.ToolCallID, d.Name, offset)
	c.Arguments, c.Target, c.Status, c.Run = d.Arguments, d.Target, status, d.Run
	if d.StepID != "" {
		// A step that ran beside others names itself (workflows' fanOut).
		c.StepID = d.StepID
	}
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
			ab.callStarted(e.Offset, longhaul.ToolStartData{ToolCallID: d.ToolCallID, Name: d.Name, Arguments: d.Arguments, Target: d.Target}, wire.AuditCallAwaitingApproval)
		}
	case longhaul.EventApproval:
		var d longhaul.ApprovalData
		if e.Decode(&d) == nil && d.Decision != "approved" {
			c := ab.call(d.ToolCallID, d.Name, e.Offset)
			c.Status, c.Result = wire.AuditCallDenied, d.Text
		}
	case longhaul.EventToolStart:
		var d longhaul.ToolStartData
		if e.Decode(&d) == nil {
			ab.callStarted(e.Offset, d, wire.AuditCallRunning)
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
				c.Arguments, c.Status = tc.Arguments, wire.AuditCallClient
			}
		}
	}
}

// toolOutput records a tool's output, at offset in the log: its status,
// its result within the budget, and where the whole output is read.
func (ab *auditBuilder) toolOutput(offset int64, d longhaul.ToolOutputData) {
	c := ab.call(d.ToolCallID, d.Name, offset)
	c.Status = wire.AuditCallOK
	if d.Error {
		c.Status = wire.AuditCallError
	}
	var cut bool
	c.Result, cut = ab.b.take(d.Output)
	c.Truncated = cut || d.Truncated
	switch {
	case d.Ref != "":
		c.OutputURL = "/v1/runs/" + url.PathEscape(ab.run) + "/outputs/" + url.PathEscape(d.Ref)
	case c.Truncated:
		c.OutputURL = EventsURL(ab.run) + "?after=" + strconv.FormatInt(offset-1, 10)
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

// Audit reads run's audit trail for owner. A run that cannot be read
// yields an Audit that says why, so the answer it rides on still goes out.
func (r *Runs) Audit(ctx context.Context, run, owner string) *wire.Audit {
	a, err := r.ReadAudit(ctx, run, owner)
	if err != nil {
		r.Logger().WarnContext(ctx, "read the audit trail", "run", run, "error", err)
		a = BuildAudit(run, contract.RunState{}, nil)
		a.Status, a.Error = "", "the audit trail could not be read: "+err.Error()
	}
	return &a
}

// ReadAudit reads run's state with ReadState, which refuses another
// principal's run as unknown, and its whole event log (ReadLog).
func (r *Runs) ReadAudit(ctx context.Context, run, owner string) (wire.Audit, error) {
	st, err := r.ReadState(ctx, run, owner)
	if err != nil {
		return wire.Audit{}, err
	}
	log, err := r.ReadLog(ctx, run)
	if err != nil {
		return wire.Audit{}, err
	}
	return BuildAudit(run, st, log), nil
}
