package workflows_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/workflows"
	"go.temporal.io/sdk/client"
)

// An evaluation replays beside the others (TestReplayHistories): one case
// replayed as a child run and graded. The committed history was recorded
// before replays were started with their owner (no eval-replay-owner
// marker), as an evaluation in flight across that upgrade was; one
// regenerated now has the marker, and must replay as well.
func init() {
	replays = append(replays, replayTest{
		file: filepath.Join("testdata", "eval_history.json"),
		fn:   workflows.EvaluationWorkflow, name: contract.EvaluationWorkflowName,
		scheduled: []string{"GradeCase"},
		generate:  generateEvalHistory,
		id:        evalReplayID,
	})
}

// evalReplayID is the committed evaluation's workflow id, which its
// children's ids start with.
const evalReplayID = "replay-eval-1"

// generateEvalHistory makes the evaluation of testdata/eval_history.json
// again on the embedded server: one case of the assistant, which answers
// as recorded.
func generateEvalHistory(t *testing.T) (*testenv.Env, client.WorkflowRun) {
	t.Helper()
	env := testenv.Start(t, testenv.Options{})
	env.Model.Enqueue(llmtest.Text("Hello."))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var res contract.EvalResult
	run := execute(ctx, t, env, evalReplayID, contract.EvaluationWorkflowName, contract.EvalInput{Cases: []contract.EvalCase{{
		ID: "hello", Agent: "assistant", Answer: "Hello.",
		Messages: []longhaul.Message{{Role: longhaul.RoleUser, Content: "Hi"}},
	}}}, &res)
	if res.Passed != 1 {
		t.Fatalf("evaluation = %+v, want its case passed", res)
	}
	return env, run
}
