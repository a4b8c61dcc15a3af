package workflows_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/workflows"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
)

// The two ends of a real run that continued as new: its first execution
// (which archives its events and hands over) and its last (which resumes
// and answers).
var (
	continuedFirstFile = filepath.Join("testdata", "continued_first_history.json")
	continuedLastFile  = filepath.Join("testdata", "continued_last_history.json")
)

// TestReplayContinuedHistory replays both ends of a committed run of the
// built-in assistant that continued as new between tool turns.
func TestReplayContinuedHistory(t *testing.T) {
	if *updateHistory {
		generateContinuedHistory(t)
	}
	checkContinuedShape(t, loadHistoryFile(t, continuedFirstFile), loadHistoryFile(t, continuedLastFile))
	replay(t, workflows.AgentWorkflow, contract.AgentWorkflowName, continuedFirstFile, continuedLastFile)
}

func checkContinuedShape(t *testing.T, first, last *historypb.History) {
	t.Helper()
	scheduled := func(h *historypb.History, name string) int {
		n := 0
		for _, e := range h.GetEvents() {
			if e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName() == name {
				n++
			}
		}
		return n
	}
	fe, le := first.GetEvents(), last.GetEvents()
	if len(fe) == 0 || fe[len(fe)-1].GetEventType() != enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW {
		t.Error("the first execution does not end by continuing as new")
	}
	if scheduled(first, "ArchiveEvents") == 0 || scheduled(first, "CallTool") == 0 {
		t.Error("the first execution archives no events or calls no tool")
	}
	if len(le) == 0 || le[len(le)-1].GetEventType() != enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED {
		t.Error("the last execution does not complete")
	}
	if le[0].GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId() == "" {
		t.Error("the last execution was not continued from another")
	}
}

func generateContinuedHistory(t *testing.T) {
	t.Helper()
	env := testenv.Start(t, testenv.Options{})
	const pages = 6
	env.Model.SetDefault(llmtest.CallsUntil(pages, llmtest.ToolCall{Name: "current_time", Arguments: `{}`}, func(n int) llmtest.Reply {
		return llmtest.Text(fmt.Sprintf("Checked the time %d times.", n), llmtest.ChunkSize(4))
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run, err := env.Client.ExecuteWorkflow(ctx,
		client.StartWorkflowOptions{ID: "replay-continued-1", TaskQueue: testenv.TaskQueue},
		contract.AgentWorkflowName,
		contract.AgentInput{
			Agent: "assistant", HistoryLimit: 20,
			Messages: []longhaul.Message{{Role: longhaul.RoleUser, Content: "Check the time six times."}},
		})
	if err != nil {
		t.Fatalf("start workflow: %v", err)
	}
	firstRun := env.Client.GetWorkflow(ctx, run.GetID(), run.GetRunID())
	var res contract.AgentResult
	if err := run.Get(ctx, &res); err != nil {
		t.Fatalf("workflow: %v", err)
	}
	first := fetchHistory(t, env, firstRun)
	desc, err := env.Client.DescribeWorkflowExecution(ctx, run.GetID(), "")
	if err != nil {
		t.Fatal(err)
	}
	lastRun := env.Client.GetWorkflow(ctx, run.GetID(), desc.GetWorkflowExecutionInfo().GetExecution().GetRunId())
	last := fetchHistory(t, env, lastRun)
	checkContinuedShape(t, first, last)
	writeHistory(t, first, continuedFirstFile)
	writeHistory(t, last, continuedLastFile)
}
