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
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
)

// TestReplayConversationHistory: the second turn of a chat whose first
// turn called a tool: it restores that turn and records its own.
func TestReplayConversationHistory(t *testing.T) {
	replayTest{
		file: filepath.Join("testdata", "conversation_history.json"),
		fn:   workflows.AgentWorkflow, name: contract.AgentWorkflowName,
		shape: checkConversationShape, generate: generateConversationHistory,
	}.run(t)
}

// checkConversationShape: the version marker, the restore and record local
// activities (markers), one model call, a completed run.
func checkConversationShape(t *testing.T, h *historypb.History) {
	t.Helper()
	checkScheduledThenCompleted(t, h, []string{"ChatCompletion"})
	checkMarkers(t, h, "conversation-store", "RestoreConversation", "RecordTurn")
}

func generateConversationHistory(t *testing.T) (*testenv.Env, client.WorkflowRun) {
	t.Helper()
	env := testenv.Start(t, testenv.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	turn := func(id string, n int, msgs []longhaul.Message) (client.WorkflowRun, contract.AgentResult) {
		var res contract.AgentResult
		run := execute(ctx, t, env, id, contract.AgentWorkflowName, contract.AgentInput{
			Agent: "assistant", Messages: msgs, User: longhaul.User{ID: "u1"}, ChatID: "u1/chat-1", Turn: n,
		}, &res)
		return run, res
	}
	env.Model.Enqueue(
		llmtest.ToolCalls(llmtest.ToolCall{ID: "call_1", Name: "current_time", Arguments: `{"timezone":"UTC"}`}),
		llmtest.Text("It is 03:04 UTC."),
		llmtest.Text("An hour later it will be 04:04 UTC."),
	)
	q1 := longhaul.Message{Role: longhaul.RoleUser, Content: "What time is it?"}
	_, first := turn("conversation-1", 1, []longhaul.Message{q1})
	run, second := turn("conversation-2", 2, []longhaul.Message{
		q1, {Role: longhaul.RoleAssistant, Content: first.Content}, {Role: longhaul.RoleUser, Content: "And in an hour?"},
	})
	if !strings.Contains(second.Content, "04:04") {
		t.Fatalf("unexpected result: %+v", second)
	}
	return env, run
}
