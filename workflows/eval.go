package workflows

import (
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// EvalUser is the user an evaluation's replays run as: one with no
// memories, chats or webhooks of its own.
const EvalUser = "longhaul-eval"

// versionEvalOwner is the change id of the owner an evaluation's replays
// are started with (replayOptions): an evaluation recorded before started
// them with none, and goes on so. (Replay does not compare a child's memo
// or search attributes with its history; the marker keeps an evaluation's
// replays alike across an upgrade, and tells the two kinds apart.)
const versionEvalOwner = "eval-replay-owner"

// gradeTimeout bounds one GradeCase attempt (a rubric grader calls a
// model).
const gradeTimeout = 5 * time.Minute

// EvaluationWorkflow replays each case of in as a child AgentWorkflow with
// its tool results pinned (contract.Pinned), at most in.Parallel at once,
// and grades each replay (GradeCase). The results are kept in the
// workflow's state as they come (QueryEvalResults): after a worker dies the
// workflow replays its history, and a case whose child and grade completed
// is read back from it, never run again.
func EvaluationWorkflow(ctx workflow.Context, in contract.EvalInput) (contract.EvalResult, error) {
	results := make([]*contract.CaseResult, len(in.Cases))
	if err := workflow.SetQueryHandler(ctx, contract.QueryEvalResults, func() ([]contract.CaseResult, error) {
		return finished(results), nil
	}); err != nil {
		return contract.EvalResult{}, err
	}
	parallel := in.Parallel
	if parallel <= 0 {
		parallel = contract.DefaultEvalParallel
	}
	running := 0
	wg := workflow.NewWaitGroup(ctx)
	for i := range in.Cases {
		if err := workflow.Await(ctx, func() bool { return running < parallel }); err != nil {
			return contract.EvalResult{}, err
		}
		running++
		wg.Add(1)
		workflow.Go(ctx, func(gctx workflow.Context) {
			defer wg.Done()
			res := evalCase(gctx, in, in.Cases[i])
			results[i] = &res
			running--
		})
	}
	wg.Wait(ctx)
	out := contract.EvalResult{Cases: finished(results)}
	for _, c := range out.Cases {
		if c.Pass {
			out.Passed++
		} else {
			out.Failed++
		}
	}
	return out, nil
}

// finished are the results in, in case order.
func finished(results []*contract.CaseResult) []contract.CaseResult {
	out := []contract.CaseResult{}
	for _, r := range results {
		if r != nil {
			out = append(out, *r)
		}
	}
	return out
}

// evalCase replays case c and grades the replay.
func evalCase(ctx workflow.Context, in contract.EvalInput, c contract.EvalCase) contract.CaseResult {
	child := Input{AgentInput: contract.AgentInput{
		Agent:    c.Agent,
		Messages: c.Messages,
		User:     longhaul.User{ID: EvalUser},
		Quiet:    true,
		Metadata: map[string]string{"eval_case": c.ID},
		Pinned:   &contract.Pinned{Calls: c.Calls, Model: in.Model, Models: in.Models},
	}}
	cctx := workflow.WithChildOptions(ctx, replayOptions(ctx, in, c, child.User))
	req := contract.GradeRequest{Case: c, Graders: in.Graders, GradeModel: in.GradeModel}
	if err := workflow.ExecuteChildWorkflow(cctx, contract.AgentWorkflowName, child).Get(ctx, &req.Result); err != nil {
		req.Error = errorMessage(err)
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: gradeTimeout,
		Summary:             "grade case " + c.ID,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3, NonRetryableErrorTypes: []string{longhaul.ErrTypeBadInput}},
	})
	var res contract.CaseResult
	if err := workflow.ExecuteActivity(actx, a.GradeCase, req).Get(ctx, &res); err != nil {
		return contract.CaseResult{Case: c.ID, Error: "grade: " + errorMessage(err), Recorded: c.Usage}
	}
	return res
}

// replayOptions are the options of case c's replay, run as user: it is
// started carrying its owner as any run of the API does (internal/runs
// Temporal.Start), the owner in its memo (contract.MemoOwner) and the user
// and agent search attributes, so that retention, run listings and
// ownership checks take it for a run of user's (AgentWorkflow sets the
// attributes itself too, once it runs).
func replayOptions(ctx workflow.Context, in contract.EvalInput, c contract.EvalCase, user longhaul.User) workflow.ChildWorkflowOptions {
	opts := workflow.ChildWorkflowOptions{
		WorkflowID:    workflow.GetInfo(ctx).WorkflowExecution.ID + "-case-" + c.ID,
		TaskQueue:     in.TaskQueue,
		StaticSummary: "case " + c.ID + " (" + c.Agent + ")",
	}
	if workflow.GetVersion(ctx, versionEvalOwner, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return opts
	}
	owner := user.Key()
	opts.Memo = map[string]any{contract.MemoOwner: owner}
	opts.TypedSearchAttributes = temporal.NewSearchAttributes(
		contract.SearchAttrUser.ValueSet(owner),
		contract.SearchAttrAgent.ValueSet(c.Agent),
	)
	return opts
}
