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

// TestReplayRetentionHistory replays a committed real run of
// RetentionWorkflow against the current code. Its runs are short, but the
// schedule starts one every hour, so one may be in flight when a worker is
// upgraded.
func TestReplayRetentionHistory(t *testing.T) {
	replayTest{
		file: filepath.Join("testdata", "retention_history.json"),
		fn:   workflows.RetentionWorkflow, name: contract.RetentionWorkflowName,
		shape: checkRetentionShape, generate: generateRetentionHistory,
	}.run(t)
}

// checkRetentionShape makes sure the committed history is what it stands
// for: one DeleteExpiredBlobs activity, then the run's completion.
func checkRetentionShape(t *testing.T, h *historypb.History) {
	t.Helper()
	checkScheduledThenCompleted(t, h, []string{"DeleteExpiredBlobs"})
}

// generateRetentionHistory runs RetentionWorkflow on the real embedded
// server.
func generateRetentionHistory(t *testing.T) (*testenv.Env, client.WorkflowRun) {
	t.Helper()
	env := testenv.Start(t, testenv.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var res contract.RetentionResult
	run := execute(ctx, t, env, "replay-retention-1", contract.RetentionWorkflowName, contract.RetentionInput{Retention: 24 * time.Hour}, &res)
	return env, run
}
