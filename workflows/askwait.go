package workflows

import (
	"errors"
	"fmt"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"go.temporal.io/sdk/workflow"
)

// This file is a child run's approval wait shown by its parent: a run
// asked by another (an ask_ call's, at any depth) that stops for a
// person's approval shows the wait in every ancestor up to the run the
// person talks to, and an answer given to any of them reaches it.
//
// How the parent learns of it: the child signals it (SignalChildWait) as
// its wait begins and again as it ends; a parent that is a child itself
// passes each notice on to its own parent. Signals are in the receiver's
// history, so the wait survives a worker restart on either side and
// replays as it was: no ancestor queries anything. (A parent cannot
// query its child from workflow code, and an activity that polled would
// show the wait late and put polls into history.)
//
// How the answer reaches it: an ancestor that shows the wait takes the
// person's input through its own UpdateInput, as for a wait of its own,
// and signals it straight to the waiting run (SignalWaitInput) with the
// update's id and its own run id; the update's result grants the child's
// call (ApprovalGrant.Run names the child), and the child's tool activity
// reads the grant back from the ancestor's history (ToolRequest's
// ApprovalWorkflow). The child ends its wait as if answered directly, and
// its ended notice gives every ancestor the same approval event.
//
// A run shows its own wait first, then its children's in the order they
// began. A child that ends (or is cancelled) while it still waits has its
// waits dropped by the parent that asked it, which says so to its own
// parent; an answer to a wait whose run is gone fails the update.

// versionAskApproval marks runs whose ask_ children show their approval
// waits to their parents (before it, a child's wait was answered only on
// the child run).
const versionAskApproval = "ask-approval"

// registerChildWaits installs the receivers of SignalChildWait and
// SignalWaitInput. They add no command of their own until a signal comes,
// which only a run of this version sends.
func (r *run) registerChildWaits(ctx workflow.Context) {
	notices := workflow.GetSignalChannel(ctx, contract.SignalChildWait)
	inputs := workflow.GetSignalChannel(ctx, contract.SignalWaitInput)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			var w contract.ChildWait
			notices.Receive(ctx, &w)
			r.childWait(ctx, w)
		}
	})
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			var in contract.WaitInput
			inputs.Receive(ctx, &in)
			r.waitInput(in)
		}
	})
}

// tellsParent reports whether the run tells its parent of its approval
// waits: it is an ask_ call's child, of this version.
func (r *run) tellsParent(ctx workflow.Context) bool {
	return r.in.Parent != nil && r.in.Pinned == nil &&
		workflow.GetVersion(ctx, versionAskApproval, workflow.DefaultVersion, 1) != workflow.DefaultVersion
}

// childWaitOf is the notice of this run's own wait for call (number seq).
func childWaitOf(ctx workflow.Context, agent string, call longhaul.ToolCall, seq int64, target string) contract.ChildWait {
	id := workflow.GetInfo(ctx).WorkflowExecution.ID
	g := contract.GrantFor(seq, call)
	g.Run = id
	return contract.ChildWait{
		Run: id, Agent: agent, Seq: seq, ToolCallID: call.ID, Tool: call.Name,
		Arguments: call.Arguments, Target: target, Grant: g, Since: workflow.Now(ctx),
	}
}

// tellParent signals notice w to the run's parent, naming this run as the
// sender. A parent that is gone is no reason to fail: the wait goes on
// here.
func (r *run) tellParent(ctx workflow.Context, w contract.ChildWait) {
	p := r.in.Parent
	if p == nil {
		return
	}
	w.Via = workflow.GetInfo(ctx).WorkflowExecution.ID
	if err := workflow.SignalExternalWorkflow(ctx, p.Run, "", contract.SignalChildWait, w).Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn("telling the parent run of an approval wait failed", "parent", p.Run, "error", err)
	}
}

// childWait takes notice w of a child's wait: shows it (or stops showing
// it), logs it as the waiting run logged it, naming the child, and passes
// it on to this run's parent.
func (r *run) childWait(ctx workflow.Context, w contract.ChildWait) {
	if workflow.GetVersion(ctx, versionAskApproval, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return
	}
	now := workflow.Now(ctx)
	if !w.Ended {
		r.waits = append(r.waits, w)
		r.log.emit(now, longhaul.EventApprovalRequired, longhaul.ApprovalRequiredData{
			ToolCallID: w.ToolCallID, Name: w.Tool, Arguments: w.Arguments, Target: w.Target, Agent: w.Agent, Run: w.Run,
		})
		r.showWait(ctx)
		r.tellParent(ctx, w)
		r.notify(ctx, contract.WebhookRunWaiting, contract.WebhookEventData{Status: contract.StatusWaiting, ToolCallID: w.ToolCallID, Tool: w.Tool})
		return
	}
	r.dropWait(func(o contract.ChildWait) bool { return o.Run == w.Run && o.Seq == w.Seq })
	if w.Decision != "" {
		r.log.emit(now, longhaul.EventApproval, longhaul.ApprovalData{
			ToolCallID: w.ToolCallID, Name: w.Tool, Decision: w.Decision, Text: w.Text, Agent: w.Agent, Run: w.Run,
		})
	}
	r.showWait(ctx)
	r.tellParent(ctx, w)
}

// dropWait forgets the children's waits that match drop and returns them.
func (r *run) dropWait(drop func(contract.ChildWait) bool) []contract.ChildWait {
	var gone, kept []contract.ChildWait
	for _, w := range r.waits {
		if drop(w) {
			gone = append(gone, w)
		} else {
			kept = append(kept, w)
		}
	}
	r.waits = kept
	return gone
}

// childEnded forgets the waits that child (a run this one asked, now
// ended) told of and never ended, and tells this run's parent they are
// over, with no decision.
func (r *run) childEnded(ctx workflow.Context, child string) {
	if len(r.waits) == 0 {
		return
	}
	for _, w := range r.dropWait(func(o contract.ChildWait) bool { return o.Via == child }) {
		w.Ended, w.Decision, w.Text = true, "", ""
		r.tellParent(ctx, w)
	}
	r.showWait(ctx)
}

// showWait shows the first of the children's waits as the run's own, or
// none, unless the run waits itself (its own wait shows first).
func (r *run) showWait(ctx workflow.Context) {
	was := r.state.Waiting
	if was != nil && was.Run == "" {
		return
	}
	if len(r.waits) == 0 {
		if was != nil {
			r.state.Waiting = nil
			r.setStatus(ctx, contract.StatusRunning)
		}
		return
	}
	w := r.waits[0]
	r.state.Waiting = &contract.Waiting{
		Kind: contract.WaitApproval, ToolCallID: w.ToolCallID, Tool: w.Tool, Arguments: w.Arguments,
		Since: w.Since, Run: w.Run, Agent: w.Agent,
	}
	if was == nil {
		r.setStatus(ctx, contract.StatusWaiting)
	}
}

// answerChild sends input, which a person gave this run (update
// UpdateInput), to the child whose wait the run shows, and returns the
// update's result: an approval grants the child's call.
func (r *run) answerChild(ctx workflow.Context, in contract.InputRequest) (contract.InputResult, error) {
	if len(r.waits) == 0 {
		return contract.InputResult{}, errors.New(contract.ErrNotWaiting)
	}
	w := r.waits[0]
	r.waits = r.waits[1:]
	// Shown no longer: the child's ended notice logs the decision.
	r.state.Waiting = nil
	r.showWait(ctx)
	if r.state.Waiting == nil {
		r.setStatus(ctx, contract.StatusRunning)
	}
	info := workflow.GetInfo(ctx)
	send := contract.WaitInput{Seq: w.Seq, Input: in, Workflow: info.WorkflowExecution.ID, RunID: info.WorkflowExecution.RunID}
	if u := workflow.GetCurrentUpdateInfo(ctx); u != nil {
		send.Update = u.ID
	}
	if err := workflow.SignalExternalWorkflow(ctx, w.Run, "", contract.SignalWaitInput, send).Get(ctx, nil); err != nil {
		return contract.InputResult{}, fmt.Errorf("the run %s that waited for this answer is gone: %s", w.Run, errorMessage(err))
	}
	res := contract.InputResult{Decision: contract.Decide(in)}
	if res.Decision == contract.DecisionApproved {
		g := w.Grant
		res.Approved = &g
	}
	return res, nil
}

// waitInput takes a person's answer, given to an ancestor, to this run's
// approval wait; an answer to a wait that is over is dropped.
func (r *run) waitInput(in contract.WaitInput) {
	if r.grant == nil || r.grant.Seq != in.Seq || r.input != nil {
		return
	}
	r.input = &in.Input
	r.inputUpdate = in.Update
	r.inputFrom = &in
}
