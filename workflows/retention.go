package workflows

import (
	"fmt"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/contract"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// RetentionWorkflow deletes the stored blobs of runs that closed more than
// the retention ago (see activities.DeleteExpiredBlobs). A Temporal
// Schedule starts it every RetentionInterval; one activity does the work,
// so its history is a handful of events whatever it deletes.
func RetentionWorkflow(ctx workflow.Context, in contract.RetentionInput) (contract.RetentionResult, error) {
	if in.Retention <= 0 {
		return contract.RetentionResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("retention %v must be positive", in.Retention), longhaul.ErrTypeBadInput, nil)
	}
	var a *activities.Activities
	ctx = retentionOptions(ctx, in.Retention)
	var res contract.RetentionResult
	err := workflow.ExecuteActivity(ctx, a.DeleteExpiredBlobs, contract.RetentionRequest{Retention: in.Retention}).Get(ctx, &res)
	return res, err
}
