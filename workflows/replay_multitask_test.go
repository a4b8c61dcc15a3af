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
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
)

// The multitask history replays beside the others (TestReplayHistories):
// a run queued after another of its chat (it waited for it, AwaitRun, and
// started from its conversation) that took a steered message while its
// first model call ran, and called the model again for it.
func init() {
	replays = append(replays, replayTest{
		file: filepath.Join("testdata", "multitask_history.json"),
		fn:   workflows.AgentWorkflow, name: contract.AgentWorkflowName,
		scheduled: []string{"AwaitRun", "ChatCompletion", "ChatCompletion"},
		generate:  generateMultitaskHistory,
	})
}

// generateMultitaskHistory makes the run of testdata/multitask_history.json
// again on the embedded server.
func generateMultitaskHistory(t *testing.T) (*testenv.Env, client.WorkflowRun) {
	t.Helper()
	env := testenv.Start(t, testenv.Options{})
	gate := make(chan struct{})
	env.Model.SetDefault(llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		q := r.LastUserMessage()
		if q == "And MySQL?" {
			<-gate
			return llmtest.Text("MySQL is popular.")
		}
		return llmtest.Text("Answer to: " + q)
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	user := longhaul.User{ID: "u1"}
	execute(ctx, t, env, "replay-multitask-0", contract.AgentWorkflowName, contract.AgentInput{
		Agent: "assistant", User: user, Messages: []longhaul.Message{{Role: longhaul.RoleUser, Content: "Compare SQLite and PostgreSQL"}},
	}, nil)
	run, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "replay-multitask-1", TaskQueue: testenv.TaskQueue}, contract.AgentWorkflowName, contract.AgentInput{
		Agent: "assistant", User: user, Messages: []longhaul.Message{{Role: longhaul.RoleUser, Content: "And MySQL?"}},
		Follows: &contract.Follow{Run: "replay-multitask-0", Prepend: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Model.WaitRequests(ctx, 2); err != nil {
		t.Fatal(err)
	}
	h, err := env.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: "replay-multitask-1", UpdateName: contract.UpdateSteer,
		Args: []any{contract.SteerRequest{Text: "In one sentence."}}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(ctx, nil)
	}
	if err != nil {
		t.Fatalf("steer: %v", err)
	}
	close(gate)
	var res contract.AgentResult
	if err := run.Get(ctx, &res); err != nil || res.Content != "Answer to: In one sentence." {
		t.Fatalf("run: %+v %v", res, err)
	}
	return env, run
}

// cancelledTurnHistoryFile is a chat turn cancelled while its answer
// streamed: it recorded its partial answer in the conversation store
// behind the record-cancelled-turn version marker.
var cancelledTurnHistoryFile = filepath.Join("testdata", "cancelled_turn_history.json")

// TestReplayCancelledTurn replays the committed cancelled chat turn (with
// -update-history, made again first) after checking it recorded its turn
// behind the marker and ended cancelled.
func TestReplayCancelledTurn(t *testing.T) {
	if *updateHistory {
		env, run := generateCancelledTurnHistory(t)
		writeHistory(t, fetchHistory(t, env, run), cancelledTurnHistoryFile)
	}
	h := loadHistoryFile(t, cancelledTurnHistoryFile)
	checkMarkers(t, h, "record-cancelled-turn", "RecordTurn")
	events := h.GetEvents()
	if n := len(events); n == 0 || events[n-1].GetEventType() != enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED {
		t.Error("the history does not end with the run's cancellation")
	}
	replay(t, workflows.AgentWorkflow, contract.AgentWorkflowName, cancelledTurnHistoryFile)
}

// generateCancelledTurnHistory makes the run of
// testdata/cancelled_turn_history.json again on the embedded server.
func generateCancelledTurnHistory(t *testing.T) (*testenv.Env, client.WorkflowRun) {
	t.Helper()
	env := testenv.Start(t, testenv.Options{})
	env.Model.Enqueue(llmtest.Text("The first words of a long answer", llmtest.ChunkSize(3), llmtest.StallAfter(2)))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "replay-cancelled-turn-1", TaskQueue: testenv.TaskQueue}, contract.AgentWorkflowName, contract.AgentInput{
		Agent: "assistant", User: longhaul.User{ID: "u1"}, ChatID: "u1/chat-cancelled", Turn: 1,
		Messages: []longhaul.Message{{Role: longhaul.RoleUser, Content: "Tell me everything"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Model.WaitRequests(ctx, 1); err != nil {
		t.Fatal(err)
	}
	// Let a chunk or two reach the activity before the cancellation.
	for {
		v, err := env.Client.QueryWorkflow(ctx, run.GetID(), "", contract.QueryState)
		var st contract.RunState
		if err == nil && v.Get(&st) == nil && st.Turns > 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the run never called the model")
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := env.Client.CancelWorkflow(ctx, run.GetID(), ""); err != nil {
		t.Fatal(err)
	}
	if err := run.Get(ctx, nil); !temporal.IsCanceledError(err) {
		t.Fatalf("run ended with %v, want cancelled", err)
	}
	return env, run
}
