package workflows

import (
	"errors"
	"slices"
	"strings"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"go.temporal.io/sdk/workflow"
)

// registerInput installs the handler of UpdateInput: its validator turns
// away input the run is not waiting for, so the caller learns at once.
func (r *run) registerInput(ctx workflow.Context) error {
	return workflow.SetUpdateHandlerWithOptions(ctx, contract.UpdateInput,
		func(ctx workflow.Context, in contract.InputRequest) (contract.InputResult, error) {
			if w := r.state.Waiting; w != nil && w.Run != "" {
				return r.answerChild(ctx, in)
			}
			r.input = &in
			res := contract.InputResult{Decision: contract.Decide(in)}
			if in.Connected != "" {
				res.Decision = contract.DecisionConnected
			}
			if info := workflow.GetCurrentUpdateInfo(ctx); info != nil {
				r.inputUpdate = info.ID
			}
			if res.Decision == contract.DecisionApproved && r.grant != nil {
				g := *r.grant
				res.Approved = &g
			}
			return res, nil
		},
		workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, in contract.InputRequest) error {
			if r.state.Waiting == nil || r.input != nil {
				return errors.New(contract.ErrNotWaiting)
			}
			if w := r.state.Waiting; w.Kind == contract.WaitAuth || in.Connected != "" {
				return checkConnected(w, in)
			}
			if err := checkToolResults(r.state.Waiting, in); err != nil || r.state.Waiting.Kind == contract.WaitClientTools {
				return err
			}
			if in.Approve == nil && strings.TrimSpace(in.Text) == "" {
				return errors.New(`send {"approve": true|false} or {"text": "…"}`)
			}
			return nil
		}},
	)
}

// checkConnected accepts, for a run that waits as w, only the OAuth
// callback's word that the user connected the server it waits for.
func checkConnected(w *contract.Waiting, in contract.InputRequest) error {
	switch {
	case w.Kind != contract.WaitAuth:
		return errors.New(contract.ErrNotWaiting)
	case in.Connected == "":
		return errors.New("the run waits for its user to connect their " + w.Server + " account: open " + w.URL + " in a browser; it goes on once the account is connected")
	case in.Connected != w.Server:
		return errors.New("the run waits for a connection of " + w.Server + ", not " + in.Connected)
	}
	return nil
}

// needsApproval reports whether a person must approve calls of tool.
func (r *run) needsApproval(tool string) bool {
	return slices.Contains(r.spec.Approval, tool)
}

// approve pauses the run before call until a person decides (through
// UpdateInput), or until the agent input's ApprovalTimeout passes, which
// denies it. It returns whether the call may run and, when not, what to
// tell the model.
func (r *run) approve(ctx workflow.Context, call longhaul.ToolCall, seq int64, target string) (bool, string, error) {
	now := workflow.Now(ctx)
	r.input, r.inputUpdate, r.inputFrom = nil, "", nil
	grant := contract.GrantFor(seq, call)
	r.grant = &grant
	defer func() { r.grant = nil }()
	shown := r.state.Waiting
	r.state.Waiting = &contract.Waiting{Kind: contract.WaitApproval, ToolCallID: call.ID, Tool: call.Name, Arguments: call.Arguments, Since: now}
	if shown == nil {
		r.setStatus(ctx, contract.StatusWaiting)
	}
	r.log.emit(now, longhaul.EventApprovalRequired, longhaul.ApprovalRequiredData{
		ToolCallID: call.ID, Name: call.Name, Arguments: call.Arguments, Target: target,
	})
	// A child's wait shows in its parent (askwait.go).
	var notice *contract.ChildWait
	if r.tellsParent(ctx) {
		w := childWaitOf(ctx, r.spec.ID, call, seq, target)
		notice = &w
		r.tellParent(ctx, w)
	}
	r.notify(ctx, contract.WebhookRunWaiting, contract.WebhookEventData{Status: contract.StatusWaiting, ToolCallID: call.ID, Tool: call.Name})
	var err error
	answered := true
	if r.in.ApprovalTimeout > 0 {
		answered, err = workflow.AwaitWithTimeout(ctx, r.in.ApprovalTimeout, func() bool { return r.input != nil })
	} else {
		err = workflow.Await(ctx, func() bool { return r.input != nil })
	}
	r.state.Waiting = nil
	if err != nil {
		if notice != nil {
			// Cancelled: the parents show the wait no longer.
			dctx, _ := workflow.NewDisconnectedContext(ctx)
			notice.Ended, notice.Decision, notice.Text = true, contract.DecisionDenied, "the run was cancelled"
			r.tellParent(dctx, *notice)
		}
		return false, "", err
	}
	if len(r.waits) > 0 {
		// Its children's waits show again.
		r.showWait(ctx)
	} else {
		r.setStatus(ctx, contract.StatusRunning)
	}
	d := longhaul.ApprovalData{ToolCallID: call.ID, Name: call.Name}
	var msg string
	switch {
	case !answered:
		d.Decision = contract.DecisionDenied
		d.Text = "no answer within " + r.in.ApprovalTimeout.String()
		msg = "error: the call was not approved: nobody answered within " + r.in.ApprovalTimeout.String()
	default:
		d.Decision, d.Text = contract.Decide(*r.input), strings.TrimSpace(r.input.Text)
		switch d.Decision {
		case contract.DecisionDenied:
			msg = "error: the user denied this call"
		case contract.DecisionReplied:
			msg = "error: the user did not approve this call and said: " + d.Text
		}
	}
	r.input = nil
	r.log.emit(workflow.Now(ctx), longhaul.EventApproval, d)
	if notice != nil {
		notice.Ended, notice.Decision, notice.Text = true, d.Decision, d.Text
		r.tellParent(ctx, *notice)
	}
	return d.Decision == contract.DecisionApproved, msg, nil
}

// setStatus records the run's status in its state and search attribute.
func (r *run) setStatus(ctx workflow.Context, status string) {
	r.state.Status = status
	_ = workflow.UpsertTypedSearchAttributes(ctx, contract.SearchAttrStatus.ValueSet(status))
}
