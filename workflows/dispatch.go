package workflows

import (
	"strings"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// dispatch decides how the request runs: a client's background task goes
// straight to the model; a message starting with a skill's slash command
// runs that skill; otherwise the agent's mode decides, and for "auto" a
// small classification call does.
func (r *run) dispatch(ctx workflow.Context) (contract.AgentResult, error) {
	if r.in.Background {
		r.state.Mode, r.state.Dispatch = contract.ModeTask, "a client's background request"
		return r.background(ctx)
	}
	if err := r.recall(ctx); err != nil {
		return contract.AgentResult{Model: r.model}, err
	}
	if skill, rest, ok := r.slashCommand(); ok {
		return r.runCommand(ctx, skill, rest)
	}
	// Only agents with language: auto translate (no run recorded before
	// the option existed has one).
	if err := r.translateRequest(ctx); err != nil {
		return contract.AgentResult{Model: r.model}, err
	}
	if len(r.in.ClientTools) > 0 {
		// The client runs a tool loop of its own, one model answer at a
		// time: a plan would not fit in it.
		r.state.Mode, r.state.Dispatch = contract.ModeChat, "the request brings tools of its own"
		return r.chat(ctx)
	}
	mode := r.spec.Mode
	switch mode {
	case contract.ModeAgentic:
		r.state.Dispatch = "the agent always plans"
	case contract.ModeAuto:
		var d contract.Dispatch
		model := r.roleModel(roleClassify)
		err := workflow.ExecuteActivity(r.structuredOptions(ctx, r.roleSummary("dispatch", model)), a.Classify, contract.ClassifyRequest{
			Caller: r.caller(model), Messages: r.in.Messages,
		}).Get(ctx, &d)
		r.addUsage("dispatch", model, d.Usage)
		switch {
		case temporal.IsCanceledError(err):
			return contract.AgentResult{}, err
		case err != nil:
			mode, r.state.Dispatch = contract.ModeChat, "the classification failed ("+errorMessage(err)+"), so the request runs as a chat"
		case d.Mode == contract.ModeAgentic:
			mode, r.state.Dispatch = contract.ModeAgentic, d.Reason
		default:
			mode, r.state.Dispatch = contract.ModeChat, d.Reason
		}
	default:
		mode, r.state.Dispatch = contract.ModeChat, "the agent chats"
	}
	r.state.Mode = mode
	if mode == contract.ModeAgentic {
		return r.agentic(ctx)
	}
	return r.chat(ctx)
}

// slashCommand finds a skill command at the start of the last user message:
// "/briefing EU AI act" gives the skill with command "/briefing" and "EU AI
// act". Only the agent's own skills are reachable this way.
func (r *run) slashCommand() (contract.SkillSpec, string, bool) {
	text := strings.TrimSpace(longhaul.LastUserText(r.in.Messages))
	if !strings.HasPrefix(text, "/") {
		return contract.SkillSpec{}, "", false
	}
	cmd, rest, _ := strings.Cut(text, " ")
	if i := strings.IndexAny(cmd, "\n\t"); i >= 0 {
		cmd, rest = cmd[:i], text[i:]
	}
	for _, s := range r.spec.Skills {
		if s.Command != "" && s.Command == cmd {
			return s, strings.TrimSpace(rest), true
		}
	}
	return contract.SkillSpec{}, "", false
}

// runCommand runs a skill invoked by its slash command: the skill's own loop
// on the rest of the message, streamed like a chat turn.
func (r *run) runCommand(ctx workflow.Context, s contract.SkillSpec, input string) (contract.AgentResult, error) {
	r.state.Mode, r.state.Skill = contract.ModeSkill, s.ID
	r.state.Dispatch = "the message starts with " + s.Command
	r.log.emit(workflow.Now(ctx), longhaul.EventSkillActivity, longhaul.SkillActivityData{Skill: s.ID, Message: "running " + s.Command})
	l := commandLoop(s, r.in.Messages, input)
	l.Publish = !r.in.Quiet
	return r.toolLoop(ctx, l)
}

// commandLoop is the loop of skill s run by its slash command on msgs,
// input standing for the last user message (the text after the command).
func commandLoop(s contract.SkillSpec, msgs []longhaul.Message, input string) LoopState {
	msgs = append([]longhaul.Message(nil), msgs...)
	if input != "" {
		for i := len(msgs) - 1; i >= 0; i-- {
			if msgs[i].Role == longhaul.RoleUser {
				msgs[i].Content = input
				break
			}
		}
	}
	return LoopState{
		Label:    "skill " + s.ID,
		Messages: msgs,
		Scope:    s.Tools,
		MaxTurns: s.MaxTurns,
		Skill:    s.ID,
		Model:    s.Model,
	}
}
