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
	"github.com/longhaul-dev/longhaul/internal/window"
	"go.temporal.io/sdk/client"
)

// generateContextHistory makes the run of testdata/context_history.json again
// (see replays) on the embedded server.
func generateContextHistory(t *testing.T) (*testenv.Env, client.WorkflowRun) {
	t.Helper()
	env := testenv.Start(t, testenv.Options{Context: window.Settings{"llmtest": 4096}})
	env.Model.SetWindow(4096, llmtest.BehaviourOpenAI)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env.Model.On(llmtest.AnyMessageContains("You compact a conversation"), llmtest.Text("The user listed films; [tmdb:931285] is the 2026 one."))
	env.Model.SetDefault(llmtest.Text("That is tmdb 931285."))
	var msgs []longhaul.Message
	for i := range 16 {
		msgs = append(msgs,
			longhaul.Message{Role: longhaul.RoleUser, Content: "Tell me about the next film, please."},
			longhaul.Message{Role: longhaul.RoleAssistant, Content: strings.Repeat("A film about a river, a mill and a long summer. ", 20) + string(rune('A'+i))})
	}
	msgs = append(msgs, longhaul.Message{Role: longhaul.RoleUser, Content: "Which was the 2026 one?"})
	var res contract.AgentResult
	run := execute(ctx, t, env, "context-1", contract.AgentWorkflowName,
		contract.AgentInput{Agent: "naked", Messages: msgs, User: longhaul.User{ID: "u1"}}, &res)
	if !strings.Contains(res.Content, "931285") {
		t.Fatalf("workflow: %q", res.Content)
	}
	if cut := env.Model.CutRequests(); len(cut) > 0 {
		t.Fatalf("%d requests over the window", len(cut))
	}
	return env, run
}
