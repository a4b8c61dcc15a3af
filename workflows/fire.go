package workflows

import (
	"time"

	"github.com/longhaul-dev/longhaul/contract"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// versionAdmitFire is the change id of the gate of a schedule's runs
// (admitFire): a scheduled run recorded before it had none.
const versionAdmitFire = "admit-fire"

// scheduledBy is the key of the search attribute Temporal's scheduler sets
// on a run a schedule started.
var scheduledBy = temporal.NewSearchAttributeKeyKeyword(contract.SearchAttrScheduledBy)

// admitFire passes a run a schedule started through the gate every start
// of the API passes, at its start (the AdmitFire activity): the owner is
// re-resolved, so the run acts for them as they are now, and a fire
// whose owner is gone, may no longer run the agent, or is over the run
// limit or a budget ends here, refused. A run no schedule started, or a
// continued one, passes as it is.
func (r *run) admitFire(ctx workflow.Context) error {
	sched, ok := workflow.GetTypedSearchAttributes(ctx).GetKeyword(scheduledBy)
	if !ok || sched == "" || r.in.Resume != nil {
		return nil
	}
	if workflow.GetVersion(ctx, versionAdmitFire, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return nil
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 5},
	})
	var got contract.FireAdmitted
	req := contract.FireCheck{Schedule: sched, Run: workflow.GetInfo(ctx).WorkflowExecution.ID, Agent: r.in.Agent, User: r.in.User}
	if err := workflow.ExecuteActivity(actx, a.AdmitFire, req).Get(ctx, &got); err != nil {
		return err
	}
	r.in.User = got.User
	return nil
}
