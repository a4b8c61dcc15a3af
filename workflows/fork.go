package workflows

import (
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"go.temporal.io/sdk/workflow"
)

// A fork (contract.Fork) is a run whose first execution starts from another
// run's state at a point, the way a continued run starts from its
// checkpoint: the fork makes a checkpoint of what the old run did before
// the point and resumes from there. The API decides the point from one
// read of the old run (QueryFork) and hands the fork what it read
// (Fork.State): at a plan step that is all (no activity); at a tool call
// ReadFork fetches the recorded loop. A fork recorded before
// (versionForkDecided) read it all with ReadFork, which decided again.

// versionForkDecided marks the forks that take the point the API decided
// (Fork.State) instead of reading the old run's state again.
const versionForkDecided = "fork-decided"

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
	fs, err := r.readFork(ctx, f)
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

// readFork is what the fork at f reuses of the old run: the state the API
// read when it decided the point, with the recorded loop up to a tool call
// fetched; or, for a fork recorded before, all of it read by ReadFork.
func (r *run) readFork(ctx workflow.Context, f *contract.Fork) (contract.ForkState, error) {
	actx := forkOptions(ctx, "fork of "+f.Run+" at "+f.At)
	decided := workflow.GetVersion(ctx, versionForkDecided, workflow.DefaultVersion, 1) == 1 && f.State != nil
	if !decided {
		var fs contract.ForkState
		err := workflow.ExecuteActivity(actx, a.ReadFork, contract.ForkRequest{Run: f.Run, Step: f.Step, Call: f.Call}).Get(ctx, &fs)
		return fs, err
	}
	fs := *f.State
	// What the fork took from its input need not ride on into each
	// execution it continues as new into.
	light := *f
	light.State = nil
	r.in.Fork = &light
	if f.Call == "" {
		return fs, nil
	}
	var loop contract.ForkState
	err := workflow.ExecuteActivity(actx, a.ReadFork, contract.ForkRequest{Run: f.Run, Call: f.Call, Decided: true}).Get(ctx, &loop)
	fs.Messages, fs.Turn, fs.ToolSeq = loop.Messages, loop.Turn, loop.ToolSeq
	return fs, err
}

// registerFork answers QueryFork: the run's state, the request it started
// with (in its first execution), and the events of its log that fork
// points are found by.
func (r *run) registerFork(ctx workflow.Context) error {
	var first *contract.AgentInput
	if r.in.Resume == nil {
		in := r.in.AgentInput
		in.Messages = append([]longhaul.Message(nil), in.Messages...)
		first = &in
	}
	return workflow.SetQueryHandler(ctx, contract.QueryFork, func() (contract.ForkSource, error) {
		src := contract.ForkSource{State: r.state, Request: first, Last: r.log.last, Archives: r.log.archives, Events: []longhaul.Event{}}
		src.State.Usage = r.usage
		for _, e := range r.log.events {
			if contract.IsForkEvent(e.Type) {
				src.Events = append(src.Events, e)
			}
		}
		return src, nil
	})
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
