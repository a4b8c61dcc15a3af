package workflows_test

import (
	"context"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"go.temporal.io/sdk/client"
)

// generateRetentionHistory makes the run of testdata/retention_history.json again
// (see replays) on the embedded server.
func generateRetentionHistory(t *testing.T) (*testenv.Env, client.WorkflowRun) {
	t.Helper()
	env := testenv.Start(t, testenv.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var res contract.RetentionResult
	run := execute(ctx, t, env, "replay-retention-1", contract.RetentionWorkflowName, contract.RetentionInput{Retention: 24 * time.Hour}, &res)
	return env, run
}
