package workflows_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul/internal/testenv"
	"github.com/longhaul-dev/longhaul/workflows"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// retentionHistoryFile is a real run of RetentionWorkflow.
var retentionHistoryFile = filepath.Join("testdata", "retention_history.json")

// TestReplayRetentionHistory replays a committed run of RetentionWorkflow
// against the current code. Its runs are short, but the schedule starts
// one every hour, so one may be in flight when a worker is upgraded.
func TestReplayRetentionHistory(t *testing.T) {
	if *updateHistory {
		generateRetentionHistory(t)
	}
	checkRetentionShape(t, loadHistoryFile(t, retentionHistoryFile))
	replayer := worker.NewWorkflowReplayer()
	replayer.RegisterWorkflowWithOptions(workflows.RetentionWorkflow, workflow.RegisterOptions{Name: workflows.RetentionWorkflowName})
	if err := replayer.ReplayWorkflowHistoryFromJSONFile(nil, retentionHistoryFile); err != nil {
		t.Fatalf("replaying %s: %v\nIf the change is intended, version it with workflow.GetVersion; "+
			"regenerate the history only for runs that cannot exist any more.", retentionHistoryFile, err)
	}
}

// checkRetentionShape makes sure the committed history is what it stands
// for: one DeleteExpiredBlobs activity, then the run's completion.
func checkRetentionShape(t *testing.T, h *historypb.History) {
	t.Helper()
	var scheduled []string
	for _, e := range h.GetEvents() {
		if e.GetEventType() == enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED {
			scheduled = append(scheduled, e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName())
		}
	}
	if diff := cmp.Diff([]string{"DeleteExpiredBlobs"}, scheduled); diff != "" {
		t.Errorf("scheduled activities mismatch (-want +got):\n%s", diff)
	}
	events := h.GetEvents()
	if n := len(events); n == 0 || events[n-1].GetEventType() != enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED {
		t.Error("history does not end with the run's completion")
	}
}

// generateRetentionHistory runs RetentionWorkflow on the real embedded
// server and writes its history to retentionHistoryFile.
func generateRetentionHistory(t *testing.T) {
	t.Helper()
	env := testenv.Start(t, testenv.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := env.Client.ExecuteWorkflow(ctx,
		client.StartWorkflowOptions{ID: "replay-retention-1", TaskQueue: testenv.TaskQueue},
		workflows.RetentionWorkflowName, workflows.RetentionInput{Retention: 24 * time.Hour})
	if err != nil {
		t.Fatalf("start workflow: %v", err)
	}
	var res workflows.RetentionResult
	if err := run.Get(ctx, &res); err != nil {
		t.Fatalf("workflow: %v", err)
	}
	h := fetchHistory(t, env, run)
	checkRetentionShape(t, h)
	writeHistory(t, h, retentionHistoryFile)
}
