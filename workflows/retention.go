package workflows

import (
	"fmt"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/activities"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// RetentionWorkflowName is the registered name of RetentionWorkflow.
const RetentionWorkflowName = "RetentionWorkflow"

// RetentionScheduleID is the ID of the Temporal Schedule that starts
// RetentionWorkflow on taskQueue; its runs' workflow IDs start with it too.
// One per task queue: deployments sharing a namespace on task queues of
// their own have stores of their own, and each cleans its own.
func RetentionScheduleID(taskQueue string) string { return "longhaul-retention-" + taskQueue }

// RetentionInterval is how often the schedule starts RetentionWorkflow: a
// run's blobs outlive its history by at most this much.
const RetentionInterval = time.Hour

// RetentionInput is RetentionWorkflow's input.
type RetentionInput struct {
	// Retention is how long after a run closed its stored blobs are kept
	// (LONGHAUL_RETENTION, or the namespace's workflow retention).
	Retention time.Duration `json:"retention"`
}

// RetentionResult is what RetentionWorkflow did.
type RetentionResult struct {
	activities.RetentionResult
}

// RetentionWorkflow deletes the stored blobs of runs that closed more than
// the retention ago (see activities.DeleteExpiredBlobs). A Temporal
// Schedule starts it every RetentionInterval; one activity does the work,
// so its history is a handful of events whatever it deletes.
func RetentionWorkflow(ctx workflow.Context, in RetentionInput) (RetentionResult, error) {
	if in.Retention <= 0 {
		return RetentionResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("retention %v must be positive", in.Retention), longhaul.ErrTypeBadInput, nil)
	}
	var a *activities.Activities
	ctx = retentionOptions(ctx, in.Retention)
	var res activities.RetentionResult
	err := workflow.ExecuteActivity(ctx, a.DeleteExpiredBlobs, activities.RetentionRequest{Retention: in.Retention}).Get(ctx, &res)
	return RetentionResult{res}, err
}
