package api_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
)

// TestRunEventsAcrossContinueAsNew: a run that continued as new several
// times reads through the runs API as one run: one stream from the start
// with every offset once and in order (the older ones read from the event
// archives), a stream resumed from an archived offset, and the run's
// status with its start time and how often it continued.
func TestRunEventsAcrossContinueAsNew(t *testing.T) {
	env := testenv.Start(t, testenv.Options{API: api.Config{HistoryLimit: 30}})
	ctx := within(t, 2*time.Minute)
	const checks = 8
	env.Model.SetDefault(llmtest.CallsUntil(checks, llmtest.ToolCall{Name: "current_time", Arguments: `{}`}, func(n int) llmtest.Reply {
		return llmtest.Text(fmt.Sprintf("I checked the time %d times.", n), llmtest.ChunkSize(5))
	}))
	ann := user("ann")
	r := startRun(t, env, map[string]any{"agent": "assistant", "input": "Check the time eight times."}, ann)
	var res contract.AgentResult
	if err := env.Client.GetWorkflow(ctx, r.ID, "").Get(ctx, &res); err != nil {
		t.Fatal(err)
	}

	all := followToDone(t, ctx, env, r.ID, ann)
	for i, e := range all {
		if e.ID != int64(i+1) {
			t.Fatalf("event %d has id %d: offsets must run 1..n without a gap", i, e.ID)
		}
	}
	if got := contentText(t, all); got != "I checked the time 8 times." {
		t.Fatalf("answer %q", got)
	}
	starts := 0
	for _, e := range all {
		if e.Type == "tool_start" {
			starts++
		}
	}
	if starts != checks {
		t.Fatalf("%d tool_start events, want %d: %v", starts, checks, types(all))
	}

	// Resuming from an offset in the first execution's archive.
	rest, ended := readEvents(t, openEvents(t, ctx, env, r.ID, "?after=3", ann), nil)
	if !ended || len(rest) != len(all)-3 || rest[0].ID != 4 {
		t.Fatalf("after=3: %d events from %v, want %d from 4", len(rest), rest[0].ID, len(all)-3)
	}

	got := getRun(t, env, r.ID, ann)
	if got.Continued < 2 || got.Status != contract.StatusCompleted || got.Turns != checks+1 {
		t.Fatalf("run: continued %d, status %s, turns %d", got.Continued, got.Status, got.Turns)
	}
	desc, err := env.Client.DescribeWorkflowExecution(ctx, r.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	if latest := desc.GetWorkflowExecutionInfo().GetStartTime().AsTime(); !got.CreatedAt.Before(latest) {
		t.Errorf("created_at %v is the last execution's start %v, not the run's", got.CreatedAt, latest)
	}
	// Listed once, however many executions it took.
	if runs := listRuns(t, env, nil, ann); len(runs) != 1 || runs[0].ID != r.ID {
		t.Errorf("listing %v", ids(runs))
	}
}
