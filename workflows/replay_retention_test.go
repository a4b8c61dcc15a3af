package workflows_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/workflows"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
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
	replay(t, workflows.RetentionWorkflow, contract.RetentionWorkflowName, retentionHistoryFile)
}

// checkRetentionShape makes sure the committed history is what it stands
// for: one DeleteExpiredBlobs activity, then the run's completion.
func checkRetentionShape(t *testing.T, h *historypb.History) {
	t.Helper()
	checkScheduledThenCompleted(t, h, []string{"DeleteExpiredBlobs"})
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
		contract.RetentionWorkflowName, contract.RetentionInput{Retention: 24 * time.Hour})
	if err != nil {
		t.Fatalf("start workflow: %v", err)
	}
	var res contract.RetentionResult
	if err := run.Get(ctx, &res); err != nil {
		t.Fatalf("workflow: %v", err)
	}
	h := fetchHistory(t, env, run)
	checkRetentionShape(t, h)
	writeHistory(t, h, retentionHistoryFile)
}
