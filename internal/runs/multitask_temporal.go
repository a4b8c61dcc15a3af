package runs

import (
	"context"

	"github.com/longhaul-dev/longhaul/contract"
	"go.temporal.io/sdk/client"
)

// Steer implements Service: the steer update, completed once the run
// queued the message.
func (t *Temporal) Steer(ctx context.Context, id, updateID string, req contract.SteerRequest) (contract.SteerResult, error) {
	ctx, cancel := t.call(ctx)
	defer cancel()
	var res contract.SteerResult
	h, err := t.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: id, UpdateID: updateID,
		UpdateName: contract.UpdateSteer, Args: []any{req}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(ctx, &res)
	}
	return res, classify(err)
}
