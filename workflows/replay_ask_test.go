package workflows_test

import (
	"context"
	"io/fs"
	"path/filepath"
	"testing"
	"testing/fstest"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/workflows"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

// A run that asks an agent replays beside the others (TestReplayHistories):
// its agent (agents: [naked]) calls ask_naked, the child run answers, and
// the run answers with the child's answer. The parent's history holds the
// version marker, the child's start and end, and its own two model calls
// (the child's are in the child's history).
func init() {
	replays = append(replays, replayTest{
		file: askHistoryFile,
		fn:   workflows.AgentWorkflow, name: contract.AgentWorkflowName,
		scheduled: []string{"ChatCompletion", "ChatCompletion"},
		markers:   []string{"ask-agents"},
		generate:  generateAskHistory,
		id:        askReplayID,
	})
}

var askHistoryFile = filepath.Join("testdata", "ask_history.json")

// askReplayID is the committed run's workflow id, which its child's id
// starts with.
const askReplayID = "replay-ask-1"

// askerLayer is an agent that asks the built-in naked agent.
var askerLayer = fstest.MapFS{"asker.md": &fstest.MapFile{Data: []byte(
	"---\nagent: asker\ndescription: Asks the bare model\nagents: [naked]\n---\nAsk naked when in doubt.\n")}}

// generateAskHistory makes the run of testdata/ask_history.json again on
// the embedded server.
func generateAskHistory(t *testing.T) (*testenv.Env, client.WorkflowRun) {
	t.Helper()
	env := testenv.Start(t, testenv.Options{Layers: []fs.FS{askerLayer}})
	env.Model.Enqueue(
		llmtest.ToolCalls(llmtest.ToolCall{ID: "call_1", Name: "ask_naked", Arguments: `{"question":"What is six times seven?"}`}),
		llmtest.Text("42."),
		llmtest.Text("Naked says 42."),
	)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var res contract.AgentResult
	run := execute(ctx, t, env, askReplayID, contract.AgentWorkflowName, contract.AgentInput{
		Agent:    "asker",
		User:     longhaul.User{ID: "u1"},
		Messages: []longhaul.Message{{Role: longhaul.RoleUser, Content: "What is six times seven? Ask."}},
	}, &res)
	if res.Content != "Naked says 42." || len(res.Messages) != 3 || res.Messages[1].Content != "42." {
		t.Fatalf("unexpected result: %+v", res)
	}
	return env, run
}

// The committed history starts the child as the call's: its id made of the
// run's and the call's number, cancelled with its parent.
func TestAskHistoryStartsChild(t *testing.T) {
	var started int
	for _, e := range loadHistoryFile(t, askHistoryFile).GetEvents() {
		if e.GetEventType() != enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED {
			continue
		}
		started++
		a := e.GetStartChildWorkflowExecutionInitiatedEventAttributes()
		if a.GetWorkflowId() != askReplayID+"-ask-1" || a.GetParentClosePolicy() != enumspb.PARENT_CLOSE_POLICY_REQUEST_CANCEL ||
			a.GetWorkflowType().GetName() != contract.AgentWorkflowName {
			t.Errorf("child started as %s (%s), close policy %s", a.GetWorkflowId(), a.GetWorkflowType().GetName(), a.GetParentClosePolicy())
		}
	}
	if started != 1 {
		t.Fatalf("%d children started, want 1", started)
	}
}
