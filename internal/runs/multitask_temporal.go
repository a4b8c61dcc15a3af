package runs

import (
	"context"

	"github.com/longhaul-dev/longhaul/contract"
)

// Steer implements Service: the steer update, completed once the run
// queued the message.
func (t *Temporal) Steer(ctx context.Context, id, updateID string, req contract.SteerRequest) (contract.SteerResult, error) {
	ctx, cancel := t.call(ctx)
	defer cancel()
	return update[contract.SteerResult](ctx, t.c, id, updateID, contract.UpdateSteer, req)
}
