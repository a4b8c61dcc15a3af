package workflows_test

import (
	"errors"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/workflows"
	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
)

// TestRetentionWorkflow: the workflow hands its retention to one
// DeleteExpiredBlobs activity and returns what it did.
func TestRetentionWorkflow(t *testing.T) {
	env, acts := suiteEnv(t, workflows.RetentionWorkflow, contract.RetentionWorkflowName)
	env.OnActivity(acts.DeleteExpiredBlobs, mock.Anything, contract.RetentionRequest{Retention: 36 * time.Hour}).
		Return(contract.RetentionResult{Deleted: 7, Runs: 2, Kept: 1}, nil).Once()
	env.ExecuteWorkflow(contract.RetentionWorkflowName, contract.RetentionInput{Retention: 36 * time.Hour})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("completed %v, error %v", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
	var res contract.RetentionResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if want := (contract.RetentionResult{Deleted: 7, Runs: 2, Kept: 1}); res != want {
		t.Errorf("result %+v, want %+v", res, want)
	}
}

// TestRetentionWorkflowBadInput: a retention that is not positive fails
// the run at once, deleting nothing.
func TestRetentionWorkflowBadInput(t *testing.T) {
	env, _ := suiteEnv(t, workflows.RetentionWorkflow, contract.RetentionWorkflowName)
	env.ExecuteWorkflow(contract.RetentionWorkflowName, contract.RetentionInput{})
	var appErr *temporal.ApplicationError
	if err := env.GetWorkflowError(); !errors.As(err, &appErr) || appErr.Type() != longhaul.ErrTypeBadInput {
		t.Fatalf("error %v, want a %s application error", err, longhaul.ErrTypeBadInput)
	}
}
