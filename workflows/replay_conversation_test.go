package workflows_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"go.temporal.io/sdk/client"
)

// generateConversationHistory makes the run of testdata/conversation_history.json again
// (see replays) on the embedded server.
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
