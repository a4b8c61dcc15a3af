package workflows

import (
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"go.temporal.io/sdk/workflow"
)

// A fork (contract.Fork) is a run whose first execution starts from another
// run's state at a point, the way a continued run starts from its
// checkpoint: ReadFork reads what the old run recorded up to the point,
// the fork makes a checkpoint of it and resumes from there. Only runs
// started with a Fork take this path, so no recorded history changes.

// forkModel gives every model call of spec the model m: the agent's, its
// roles' and its skills'.
func forkModel(spec contract.AgentSpec, m string) contract.AgentSpec {
	spec.Model = m
	spec.Models = contract.RoleModels{}
	skills := make([]contract.SkillSpec, len(spec.Skills))
	for i, s := range spec.Skills {
		s.Model = ""
		skills[i] = s
	}
	spec.Skills = skills
	return spec
}

// fork starts the run from the old run's state at f's point: from the
// start it is a new run of the (maybe edited) request; at a plan step or
// a tool call it goes on from a checkpoint of what the old run did before.
func (r *run) fork(ctx workflow.Context, f *contract.Fork) (contract.AgentResult, error) {
	r.model = r.spec.Model
	r.think(ctx, "Forked from run "+f.Run+" at "+f.At)
	if f.Step == "" && f.Call == "" {
		return r.dispatch(ctx)
	}
	var fs contract.ForkState
	err := workflow.ExecuteActivity(forkOptions(ctx, "fork of "+f.Run+" at "+f.At), a.ReadFork, contract.ForkRequest{Run: f.Run, Step: f.Step, Call: f.Call}).Get(ctx, &fs)
	if err != nil {
		return contract.AgentResult{Model: r.model}, err
	}
	cp := r.forkCheckpoint(f, fs)
	r.state = cp.State
	r.stepSeq, r.toolSeq = cp.StepSeq, cp.ToolSeq
	if cp.Loop == nil {
		if p := r.current(); p != nil {
			r.log.emit(workflow.Now(ctx), longhaul.EventPlan, p.Plan)
		}
	}
	return r.resume(ctx, cp)
}

// forkCheckpoint is the checkpoint a fork at f resumes from, made of what
// the old run recorded (fs). The fork's usage and event log are its own,
// from zero.
func (r *run) forkCheckpoint(f *contract.Fork, fs contract.ForkState) *Checkpoint {
	st := r.state
	st.Mode, st.Skill = fs.Mode, fs.Skill
	st.Dispatch = "forked from run " + f.Run + " at " + f.At
	cp := &Checkpoint{Model: r.model, StepSeq: fs.StepSeq, ToolSeq: fs.ToolSeq}
	if f.Step != "" {
		st.Mode = contract.ModeAgentic
		st.Plans, st.Reviews = fs.Plans, fs.Reviews
		st.ReplansRemaining = r.spec.MaxReplans
		cp.State = st
		return cp
	}
	l := LoopState{Scope: r.spec.Tools, MaxTurns: r.spec.MaxTurns}
	msgs := r.in.Messages
	if st.Mode == contract.ModeSkill {
		if s, rest, ok := r.slashCommand(); ok && s.ID == fs.Skill {
			l = commandLoop(s, r.in.Messages, rest)
			msgs = l.Messages
		}
	}
	l.Publish = !r.in.Quiet
	l.Turn = fs.Turn
	l.Messages = append(append([]longhaul.Message(nil), msgs...), fs.Messages...)
	st.Turns = max(fs.Turn-1, 0)
	cp.State = st
	cp.Loop = &l
	return cp
}
