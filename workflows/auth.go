package workflows

import (
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"go.temporal.io/sdk/workflow"
)

// versionAuthWait marks the runs that, when a tool call needs an account
// its user has not connected and the run's door shows the connect link
// (AgentInput.AuthWait), wait for the connection and call again; a run
// recorded before handed the model the link, and replays so.
const versionAuthWait = "auth-wait"

// waitsForConnect reports whether the run waits for the connection the
// call's result res asks for.
func (r *run) waitsForConnect(ctx workflow.Context, res contract.ToolResponse) bool {
	if res.Connect == nil || !r.in.AuthWait || r.in.Pinned != nil {
		return false
	}
	return workflow.GetVersion(ctx, versionAuthWait, workflow.DefaultVersion, 1) == 1
}

// awaitConnect pauses the run after call found its user's account of
// conn.Server not connected, until the OAuth callback of the connect
// link tells it the user connected it (UpdateInput's Connected), or until
// the agent input's ApprovalTimeout passes. It reports whether the user
// connected in time; the caller then calls again, or hands the model the
// result that carries the link, as a run that does not wait does.
func (r *run) awaitConnect(ctx workflow.Context, call longhaul.ToolCall, conn contract.Connect) (bool, error) {
	now := workflow.Now(ctx)
	r.input, r.inputUpdate = nil, ""
	r.state.Waiting = &contract.Waiting{Kind: contract.WaitAuth, ToolCallID: call.ID, Tool: call.Name, Server: conn.Server, URL: conn.URL, Since: now}
	r.setStatus(ctx, contract.StatusWaiting)
	r.log.emit(now, longhaul.EventAuthRequired, longhaul.AuthRequiredData{
		ToolCallID: call.ID, Name: call.Name, Server: conn.Server, URL: conn.URL,
	})
	r.notify(ctx, contract.WebhookRunWaiting, contract.WebhookEventData{Status: contract.StatusWaiting, ToolCallID: call.ID, Tool: call.Name})
	var err error
	connected := true
	if r.in.ApprovalTimeout > 0 {
		connected, err = workflow.AwaitWithTimeout(ctx, r.in.ApprovalTimeout, func() bool { return r.input != nil })
	} else {
		err = workflow.Await(ctx, func() bool { return r.input != nil })
	}
	r.state.Waiting, r.input = nil, nil
	if err != nil {
		return false, err
	}
	r.setStatus(ctx, contract.StatusRunning)
	d := longhaul.AuthData{ToolCallID: call.ID, Name: call.Name, Server: conn.Server, Connected: connected}
	if !connected {
		d.Text = "not connected within " + r.in.ApprovalTimeout.String()
	}
	r.log.emit(workflow.Now(ctx), longhaul.EventAuth, d)
	return connected, nil
}
