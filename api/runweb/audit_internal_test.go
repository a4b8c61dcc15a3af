package runweb

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// auditLog numbers events as a run's log does.
func auditLog(events ...longhaul.Event) []longhaul.Event {
	for i := range events {
		events[i].Offset = int64(i + 1)
	}
	return events
}

func auditEv(t longhaul.EventType, payload any) longhaul.Event {
	return longhaul.NewEvent(t, time.Unix(0, 0), payload)
}

// TestBuildAudit: every kind of tool call lands in the trail with its
// arguments, status, step and where its whole output is; results are
// bounded one by one and in total.
func TestBuildAudit(t *testing.T) {
	long := strings.Repeat("x", 1500)
	log := auditLog(
		auditEv(longhaul.EventPlan, nil),
		auditEv(longhaul.EventStepStart, longhaul.StepStartData{StepID: "1"}),
		auditEv(longhaul.EventToolStart, longhaul.ToolStartData{ToolCallID: "a", Name: "fetch", Arguments: `{"url":"u"}`, Target: "example.com"}),
		auditEv(longhaul.EventToolOutput, longhaul.ToolOutputData{ToolCallID: "a", Name: "fetch", Output: long, Truncated: true, Ref: "blob/1"}),
		auditEv(longhaul.EventStepResult, longhaul.StepResultData{StepID: "1", Status: "done"}),
		auditEv(longhaul.EventApprovalRequired, longhaul.ApprovalRequiredData{ToolCallID: "b", Name: "order", Arguments: `{"id":1}`}),
		auditEv(longhaul.EventApproval, longhaul.ApprovalData{ToolCallID: "b", Name: "order", Decision: "replied", Text: "not now"}),
		auditEv(longhaul.EventApprovalRequired, longhaul.ApprovalRequiredData{ToolCallID: "c", Name: "order", Arguments: `{"id":2}`}),
		auditEv(longhaul.EventApproval, longhaul.ApprovalData{ToolCallID: "c", Name: "order", Decision: "approved"}),
		auditEv(longhaul.EventToolStart, longhaul.ToolStartData{ToolCallID: "c", Name: "order", Arguments: `{"id":2}`}),
		auditEv(longhaul.EventToolOutput, longhaul.ToolOutputData{ToolCallID: "c", Name: "order", Output: "error: out of stock", Error: true}),
		auditEv(longhaul.EventToolStart, longhaul.ToolStartData{ToolCallID: "d", Name: "slow", Arguments: `{}`}),
		auditEv(longhaul.EventToolOutput, longhaul.ToolOutputData{ToolCallID: "e", Name: "big", Output: long}),
		auditEv(longhaul.EventClientToolCalls, longhaul.ClientToolCallsData{Calls: []longhaul.ToolCall{{ID: "f", Name: "get_time", Arguments: `{"tz":"UTC"}`}}}),
	)
	st := contract.RunState{Agent: "bot", Status: contract.StatusCompleted, Mode: contract.ModeAgentic,
		Plans: []contract.PlanRevision{
			{Plan: longhaul.Plan{Revision: 1, Steps: []longhaul.PlanStep{{ID: "1", Status: "dropped"}}}, Status: contract.PlanReplaced},
			{Plan: longhaul.Plan{Revision: 2, Steps: []longhaul.PlanStep{{ID: "1", Status: "done", Result: long}}}, Status: contract.PlanDone},
		}}
	a := BuildAudit("run-1", st, log)
	want := []wire.AuditToolCall{
		{ID: "a", Name: "fetch", Arguments: `{"url":"u"}`, Target: "example.com", StepID: "1", Status: wire.AuditCallOK,
			Result: long[:auditResultLimit], Truncated: true, OutputURL: "/v1/runs/run-1/outputs/blob%2F1", Offset: 3},
		{ID: "b", Name: "order", Arguments: `{"id":1}`, Status: wire.AuditCallDenied, Result: "not now", Offset: 6},
		{ID: "c", Name: "order", Arguments: `{"id":2}`, Status: wire.AuditCallError, Result: "error: out of stock", Offset: 8},
		{ID: "d", Name: "slow", Arguments: `{}`, Status: wire.AuditCallRunning, Offset: 12},
		{ID: "e", Name: "big", Status: wire.AuditCallOK, Result: long[:auditResultLimit], Truncated: true, OutputURL: "/v1/runs/run-1/events?after=12", Offset: 13},
		{ID: "f", Name: "get_time", Arguments: `{"tz":"UTC"}`, Status: wire.AuditCallClient, Offset: 14},
	}
	if d := cmp.Diff(want, a.ToolCalls); d != "" {
		t.Errorf("tool calls (-want +got):\n%s", d)
	}
	if len(a.Plans) != 2 || len(a.Steps) != 1 || a.Steps[0].Result != long[:auditResultLimit] || !a.Truncated {
		t.Errorf("plans %+v steps %+v truncated %v", a.Plans, a.Steps, a.Truncated)
	}
	if st.Plans[1].Steps[0].Result != long {
		t.Error("building the audit changed the run's state")
	}
	if a.RunURL != "/v1/runs/run-1" || a.EventsURL != "/v1/runs/run-1/events" || a.Reviews == nil {
		t.Errorf("urls %q %q reviews %v", a.RunURL, a.EventsURL, a.Reviews)
	}
}

// TestAuditTotalBound: past the total bound results are empty and marked.
func TestAuditTotalBound(t *testing.T) {
	var events []longhaul.Event
	n := auditTotalLimit/auditResultLimit + 3
	for i := range n {
		id := string(rune('a' + i))
		events = append(events,
			auditEv(longhaul.EventToolStart, longhaul.ToolStartData{ToolCallID: id, Name: "t", Arguments: "{}"}),
			auditEv(longhaul.EventToolOutput, longhaul.ToolOutputData{ToolCallID: id, Name: "t", Output: strings.Repeat("é", 1200)}))
	}
	a := BuildAudit("r", contract.RunState{}, auditLog(events...))
	total := 0
	for _, c := range a.ToolCalls {
		total += utf8.RuneCountInString(c.Result)
		if !c.Truncated || c.OutputURL == "" {
			t.Errorf("call %s: truncated %v output_url %q", c.ID, c.Truncated, c.OutputURL)
		}
	}
	if len(a.ToolCalls) != n || total != auditTotalLimit || a.ToolCalls[n-1].Result != "" {
		t.Errorf("%d calls, %d runes of results; want %d calls, %d runes, the last empty", len(a.ToolCalls), total, n, auditTotalLimit)
	}
	if a.Status != contract.StatusRunning || a.Plans == nil || a.Steps == nil {
		t.Errorf("an empty state: status %q plans %v steps %v", a.Status, a.Plans, a.Steps)
	}
}

// TestBuildAuditOverlappingSteps: steps that ran at once have their
// events after each other's step_start; each call lands in its own step.
func TestBuildAuditOverlappingSteps(t *testing.T) {
	log := auditLog(
		auditEv(longhaul.EventStepStart, longhaul.StepStartData{StepID: "1"}),
		auditEv(longhaul.EventStepStart, longhaul.StepStartData{StepID: "2"}),
		auditEv(longhaul.EventToolStart, longhaul.ToolStartData{ToolCallID: "step-2", Name: "fetch", Arguments: `{}`, StepID: "2"}),
		auditEv(longhaul.EventToolOutput, longhaul.ToolOutputData{ToolCallID: "step-2", Name: "fetch", Output: "b"}),
		auditEv(longhaul.EventStepResult, longhaul.StepResultData{StepID: "2", Status: "done"}),
		auditEv(longhaul.EventToolStart, longhaul.ToolStartData{ToolCallID: "step-1", Name: "fetch", Arguments: `{}`, StepID: "1"}),
		auditEv(longhaul.EventToolOutput, longhaul.ToolOutputData{ToolCallID: "step-1", Name: "fetch", Output: "a"}),
		auditEv(longhaul.EventStepResult, longhaul.StepResultData{StepID: "1", Status: "done"}),
	)
	a := BuildAudit("run-1", contract.RunState{Status: contract.StatusCompleted, Mode: contract.ModeAgentic}, log)
	var got []string
	for _, c := range a.ToolCalls {
		got = append(got, c.ID+" in step "+c.StepID)
	}
	if d := cmp.Diff([]string{"step-2 in step 2", "step-1 in step 1"}, got); d != "" {
		t.Errorf("calls' steps (-want +got):\n%s", d)
	}
}
