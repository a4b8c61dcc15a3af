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
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:    workflow.GetInfo(ctx).WorkflowExecution.ID + "-case-" + c.ID,
		TaskQueue:     in.TaskQueue,
		StaticSummary: "case " + c.ID + " (" + c.Agent + ")",
	})
	child := Input{AgentInput: contract.AgentInput{
		Agent:       c.Agent,
		Messages:    c.Messages,
		User:        longhaul.User{ID: EvalUser},
		NotStreamed: true,
		Metadata:    map[string]string{"eval_case": c.ID},
		Pinned:      &contract.Pinned{Calls: c.Calls, Model: in.Model, Models: in.Models},
	}}
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
