package workflows_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/workflows"
	"go.temporal.io/sdk/client"
)

// forkReplay is the committed history of a fork: a researcher run forked
// at its first step reads the old run (ReadFork), runs the step again,
// has it reviewed and answers, drafting no plan.
var forkReplay = replayTest{
	file: filepath.Join("testdata", "fork_history.json"),
	fn:   workflows.AgentWorkflow, name: contract.AgentWorkflowName,
	scheduled: []string{"ReadFork", "CallTool", "ReviewStep", "ChatCompletion"},
	generate:  generateForkHistory,
}

// TestReplayForkHistory replays the committed history of a fork.
func TestReplayForkHistory(t *testing.T) { forkReplay.run(t) }

// generateForkHistory makes the run of testdata/fork_history.json again on
// the embedded server: a researcher run, then its fork at step 1.
func generateForkHistory(t *testing.T) (*testenv.Env, client.WorkflowRun) {
	t.Helper()
	env, pageURL := pelicanResearch(t)
	env.Model.SetDefault(llmtest.Text("Up to 47 cm [" + pageURL + "]."))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	q := []longhaul.Message{{Role: longhaul.RoleUser, Content: "How long is a pelican's bill?"}}
	execute(ctx, t, env, "replay-fork-old", contract.AgentWorkflowName, contract.AgentInput{Agent: "researcher", Messages: q}, nil)
	var res contract.AgentResult
	run := execute(ctx, t, env, "replay-fork-1", contract.AgentWorkflowName, contract.AgentInput{
		Agent: "researcher", Messages: q, Fork: &contract.Fork{Run: "replay-fork-old", At: "step-1", Step: "1"},
	}, &res)
	if !strings.HasPrefix(res.Content, "Up to 47 cm") {
		t.Fatalf("unexpected result: %+v", res)
	}
	return env, run
}

// forkDecidedReplay is the committed history of a fork whose point the
// API decided (versionForkDecided): the old run's fork query answered
// once, its plan cut at step 1 handed to the fork in its input; the fork
// reads nothing more of the old run (no ReadFork), runs the step again,
// has it reviewed and answers.
var forkDecidedReplay = replayTest{
	file: filepath.Join("testdata", "fork_decided_history.json"),
	fn:   workflows.AgentWorkflow, name: contract.AgentWorkflowName,
	scheduled: []string{"CallTool", "ReviewStep", "ChatCompletion"},
	markers:   []string{"fork-decided"},
	generate:  generateForkDecidedHistory,
}

// TestReplayForkDecidedHistory replays the committed history of a fork
// whose point the API decided.
func TestReplayForkDecidedHistory(t *testing.T) { forkDecidedReplay.run(t) }

// generateForkDecidedHistory makes the run of
// testdata/fork_decided_history.json again on the embedded server: a
// researcher run, its fork query, then its fork at step 1 with the plan
// cut as the API cuts it.
func generateForkDecidedHistory(t *testing.T) (*testenv.Env, client.WorkflowRun) {
	t.Helper()
	env, pageURL := pelicanResearch(t)
	env.Model.SetDefault(llmtest.Text("Up to 47 cm [" + pageURL + "]."))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	q := []longhaul.Message{{Role: longhaul.RoleUser, Content: "How long is a pelican's bill?"}}
	execute(ctx, t, env, "replay-fork-decided-old", contract.AgentWorkflowName, contract.AgentInput{Agent: "researcher", Messages: q}, nil)
	v, err := env.Client.QueryWorkflow(ctx, "replay-fork-decided-old", "", contract.QueryFork)
	var src contract.ForkSource
	if err == nil {
		err = v.Get(&src)
	}
	if err != nil || src.Request == nil || len(src.Events) == 0 {
		t.Fatalf("fork query: %+v, %v", src, err)
	}
	plans, reviews, ok := contract.ForkPlans(src.State.Plans, src.State.Reviews, "1")
	if !ok {
		t.Fatalf("step 1 is no point of %+v", src.State.Plans)
	}
	var res contract.AgentResult
	run := execute(ctx, t, env, "replay-fork-decided-1", contract.AgentWorkflowName, contract.AgentInput{
		Agent: "researcher", Messages: src.Request.Messages, Fork: &contract.Fork{Run: "replay-fork-decided-old", At: "step-1", Step: "1", State: &contract.ForkState{
			Mode: src.State.Mode, Plans: plans, Reviews: reviews, StepSeq: contract.ForkStepSeq(plans),
		}},
	}, &res)
	if !strings.HasPrefix(res.Content, "Up to 47 cm") {
		t.Fatalf("unexpected result: %+v", res)
	}
	return env, run
}
