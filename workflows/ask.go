package workflows

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/textcut"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// This file is agents asking agents: an agent's ask_<id> tool (agents: in
// its file; contract.AskSpec) runs agent <id> as a child run of this one,
// and the child's answer is the call's result.
//
// The child is AgentWorkflow itself, started as a child workflow:
//   - its id is this run's id and the call's sequence number (askRunID),
//     which continue-as-new keeps and never reuses, so a replayed or
//     retried parent never starts a call's child twice (the start is in
//     the parent's history);
//   - it runs for this run's user, so the allow: rules and budgets that
//     judge this run judge it: its model calls carry the same principal
//     (callOneModel's req.Principal is the run's User);
//   - this run's close (cancelled, failed, ended) asks the child to cancel
//     (PARENT_CLOSE_POLICY_REQUEST_CANCEL), and cancelling this run while
//     it waits cancels the child (the child's context is this run's);
//   - it is one level deeper (AgentInput.Depth): at contract.MaxAskDepth
//     a run has no ask_ tools (withoutAsks);
//   - its calls show their progress on this run's call, over NATS
//     (contract.Progress), so this run's history grows by the child's
//     start and end alone.
//
// A child that fails (or is refused: the user may not use the agent) is a
// tool error the model reads, never this run's failure.

// versionAskAgents marks runs whose ask_ calls run the asked agent as a
// child run. (A run recorded before had no ask_ tools in its spec.)
const versionAskAgents = "ask-agents"

// askOf is the ask_ tool of the run's agent that the call name names, when
// the call comes from the agent's own loop or plan (a skill's loop asks no
// agents: its call goes to CallTool, which refuses it).
func (r *run) askOf(ctx workflow.Context, name, skill string) (contract.AskSpec, bool) {
	if skill != "" || r.in.Pinned != nil {
		return contract.AskSpec{}, false
	}
	for _, s := range r.spec.Asks {
		if s.Tool == name {
			return s, workflow.GetVersion(ctx, versionAskAgents, workflow.DefaultVersion, 1) != workflow.DefaultVersion
		}
	}
	return contract.AskSpec{}, false
}

// askRunID is the id of the child run that the parent run's tool call
// number seq runs.
func askRunID(parent string, seq int64) string {
	return fmt.Sprintf("%s-ask-%d", parent, seq)
}

// withoutAsks is spec without its ask_ tools: a run at the deepest level
// asks no agents.
func withoutAsks(spec contract.AgentSpec) contract.AgentSpec {
	if len(spec.Asks) == 0 {
		return spec
	}
	spec.Tools = slices.DeleteFunc(slices.Clone(spec.Tools), func(t string) bool {
		return slices.ContainsFunc(spec.Asks, func(s contract.AskSpec) bool { return s.Tool == t })
	})
	spec.Asks = nil
	return spec
}

// asking counts the ask_ calls of one model answer that callTools started.
type asking struct{ started int }

// ask runs the call c (number seq, its tool_start at offset after) of the
// ask_ tool s as a child run and returns the future of its result (a
// contract.ToolResponse).
func (r *run) ask(ctx workflow.Context, s contract.AskSpec, c longhaul.ToolCall, seq, after int64, n *asking) workflow.Future {
	f, set := workflow.NewFuture(ctx)
	question, err := askQuestion(c)
	if err != nil {
		set.SetError(err)
		return f
	}
	if n.started >= contract.MaxAsksPerTurn {
		set.SetError(temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"%s was not run: at most %d agents are asked at once; ask again once their answers are in", c.Name, contract.MaxAsksPerTurn), longhaul.ErrTypeToolRefused, nil))
		return f
	}
	n.started++
	// A plan step's workflow asks for its run: the child's progress goes
	// to the run's call (runID).
	parent := runID(ctx)
	child := Input{AgentInput: contract.AgentInput{
		Agent:    s.Agent,
		Messages: []longhaul.Message{{Role: longhaul.RoleUser, Content: question}},
		User:     r.in.User,
		Quiet:    r.in.Quiet,
		Depth:    r.in.Depth + 1,
		Parent:   &contract.ParentCall{Run: parent, ToolCallID: c.ID, Tool: c.Name, After: after},
	}}
	cctx := workflow.WithChildOptions(ctx, askOptions(parent, askRunID(parent, seq), s.Agent, question, r.in.User))
	cf := workflow.ExecuteChildWorkflow(cctx, contract.AgentWorkflowName, child)
	limit := r.spec.AskOutput
	workflow.Go(ctx, func(gctx workflow.Context) {
		var res contract.AgentResult
		err := cf.Get(gctx, &res)
		r.childEnded(gctx, askRunID(parent, seq))
		if err != nil {
			set.SetError(temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("the agent %s failed: %s", s.Agent, errorMessage(err)), longhaul.ErrTypeToolFailed, nil))
			return
		}
		set.SetValue(askAnswer(res.Content, limit, askRunID(parent, seq)))
	})
	return f
}

// askQuestion is the question of an ask_ call's arguments.
func askQuestion(c longhaul.ToolCall) (string, error) {
	var args struct {
		Question *string `json:"question"`
	}
	if err := json.Unmarshal([]byte(c.Arguments), &args); err != nil || args.Question == nil || strings.TrimSpace(*args.Question) == "" {
		return "", temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			`%s needs its arguments as {"question": "..."}, a question that is not empty; got %s`, c.Name, textcut.Ellipsis(c.Arguments, 200)), longhaul.ErrTypeToolRefused, nil)
	}
	return strings.TrimSpace(*args.Question), nil
}

// askAnswer is the tool result of an asked agent's answer: the answer, cut
// to limit characters (the tool output limit, 0 for none) as a tool's
// output is, the whole of it kept by the child run.
func askAnswer(answer string, limit int, child string) contract.ToolResponse {
	n := utf8.RuneCountInString(answer)
	if limit <= 0 || n <= limit {
		return contract.ToolResponse{Content: answer}
	}
	return contract.ToolResponse{Truncated: true, Content: textcut.Runes(answer, limit) + fmt.Sprintf(
		"\n\n[answer cut: %d of %d characters shown; the whole answer is the run %s's]", limit, n, child)}
}

// askOptions are the options of the child run id of parent, asking agent
// the question for user: it carries its owner as a run the API starts does
// (internal/runs: the owner and a summary in its memo, the user and agent
// search attributes, as replayOptions does for an evaluation's replays),
// so its owner lists, reads and cancels it; and its parent in its memo.
func askOptions(parent, id, agent, question string, user longhaul.User) workflow.ChildWorkflowOptions {
	owner := user.Key()
	return workflow.ChildWorkflowOptions{
		WorkflowID:        id,
		StaticSummary:     "ask " + agent,
		ParentClosePolicy: enums.PARENT_CLOSE_POLICY_REQUEST_CANCEL,
		Memo: map[string]any{
			contract.MemoOwner:  owner,
			contract.MemoParent: parent,
			// internal/runs.MemoSummary: what a listing shows of the run.
			"summary": textcut.Ellipsis(agent+": "+question, 200),
		},
		TypedSearchAttributes: temporal.NewSearchAttributes(
			contract.SearchAttrUser.ValueSet(owner),
			contract.SearchAttrAgent.ValueSet(agent),
		),
	}
}

// progress is what this run's activity shows on its parent's call, when
// the run is a child: the agent and what the call does.
func (r *run) progress(what string) *contract.Progress {
	p := r.in.Parent
	if p == nil {
		return nil
	}
	return &contract.Progress{ParentCall: *p, Message: r.spec.ID + ": " + strings.TrimSpace(what)}
}

// toolStart logs the start of call c (number seq) on target; the call of
// an ask_ tool names the child run it runs.
func (r *run) toolStart(ctx workflow.Context, c longhaul.ToolCall, target string, seq int64, asks bool) {
	d := longhaul.ToolStartData{ToolCallID: c.ID, Name: c.Name, Arguments: c.Arguments, Target: target}
	if asks {
		d.Run = askRunID(runID(ctx), seq)
	}
	r.log.emit(workflow.Now(ctx), longhaul.EventToolStart, d)
}
