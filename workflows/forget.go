package workflows

import (
	"go.temporal.io/sdk/workflow"
)

// versionForget is the change id of a run not to be kept marking itself
// deleted at its end: runs that began before it replay without the mark.
const versionForget = "forget-at-end"

// forget marks a run not to be kept (contract.AgentInput.Forget, a
// Responses request with store: false) deleted at its end, whatever the
// end: the API that answers the request deletes the run when the request
// ends, but if that process died first, the mark still makes the run read
// as gone, and the retention job and Temporal's own retention take what is
// left. A run that continues as new is not at its end. ctx must survive
// the run's cancellation.
func (r *run) forget(ctx workflow.Context) {
	if !r.forgets(ctx) {
		return
	}
	err := workflow.ExecuteLocalActivity(conversationOptions(ctx, "forget the run"), a.MarkDeleted, workflow.GetInfo(ctx).WorkflowExecution.ID).Get(ctx, nil)
	if err != nil {
		workflow.GetLogger(ctx).Error("mark a run not to be kept deleted", "error", err)
	}
}

// forgets reports whether the run is not to be kept (see forget). Such a
// run extracts no long-term memories from its conversation either: store:
// false keeps nothing. (A memory the agent saves with its memory tool,
// asked to by the user, is the user's own act, and stays.)
func (r *run) forgets(ctx workflow.Context) bool {
	return r.in.Forget && workflow.GetVersion(ctx, versionForget, workflow.DefaultVersion, 1) >= 1
}
