package workflows_test

// The real runs on the embedded server that the committed histories of
// replays are made from, with -update-history.

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/memorytest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/internal/window"
	"go.temporal.io/sdk/client"
)

// generateAgenticHistory makes the run of testdata/agentic_history.json again
// (see replays) on the embedded server.
func generateAgenticHistory(t *testing.T) (*testenv.Env, client.WorkflowRun) {
	t.Helper()
	env, pageURL := pelicanResearch(t)
	env.Model.SetDefault(llmtest.Text("Up to 47 cm ["+pageURL+"].", llmtest.ChunkSize(3), llmtest.ChunkDelay(20*time.Millisecond)))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var res contract.AgentResult
	run := execute(ctx, t, env, "replay-agentic-1", contract.AgentWorkflowName,
		contract.AgentInput{Agent: "researcher", Messages: []longhaul.Message{{Role: longhaul.RoleUser, Content: "How long is a pelican's bill?"}}}, &res)
	if !strings.HasPrefix(res.Content, "Up to 47 cm") {
		t.Fatalf("unexpected result: %+v", res)
	}
	return env, run
}

// pelicanResearch starts an environment whose researcher plans to read
// one page about pelicans (served at pageURL) and answer, and whose
// reviewer passes the step; the answer is the caller's to script.
func pelicanResearch(t *testing.T) (env *testenv.Env, pageURL string) {
	t.Helper()
	pageURL, fetch := testenv.Site(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><body><p>The Australian pelican's bill is up to 47 cm long.</p></body></html>")
	}))
	env = testenv.Start(t, testenv.Options{Fetch: fetch})
	env.Model.On(llmtest.HasSchema("plan"), llmtest.JSON(map[string]any{
		"goal": "Give the pelican's bill length with a source",
		"steps": []map[string]any{
			{"kind": "tool", "target": "web_fetch", "title": "Read the page", "arguments": map[string]any{"url": pageURL, "max_chars": nil}, "success": "a length"},
			{"kind": "completion", "title": "Answer", "input": "the length and the URL", "success": "cited"},
		},
	}))
	env.Model.On(llmtest.HasSchema("step_review"), llmtest.JSON(map[string]string{"decision": "ok", "reason": "found"}))
	return env, pageURL
}

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

// generateMemoryHistory makes the run of testdata/memory_history.json again
// (see replays) on the embedded server.
func generateMemoryHistory(t *testing.T) (*testenv.Env, client.WorkflowRun) {
	t.Helper()
	agents := fstest.MapFS{"friend.md": {Data: []byte("---\nagent: friend\ndescription: Remembers you\nmemory: recall\nremember: true\n---\nYou are a friend.\n")}}
	env := testenv.Start(t, testenv.Options{Layers: []fs.FS{agents}, Memory: true})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const fact, cat, question = "The user is allergic to peanuts.", "The user's cat is called Miso.", "My cat Miso wants a snack; what can I give her?"
	env.Model.SetEmbedding(question, memorytest.Similar(llmtest.Embed(fact, 64), 0.8, "snack"))
	env.Model.On(llmtest.HasResponseFormat(), llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		last := r.Chat.Messages[len(r.Chat.Messages)-2].Content + r.Chat.Messages[len(r.Chat.Messages)-1].Content
		switch {
		case strings.Contains(last, "Miso"):
			return llmtest.JSON(map[string]any{"facts": []string{cat}})
		case strings.Contains(last, "allergic"):
			return llmtest.JSON(map[string]any{"facts": []string{fact}})
		}
		return llmtest.JSON(map[string]any{"facts": []string{}})
	}))
	env.Model.SetDefault(llmtest.Text("Noted."))
	turn := func(id, text string) client.WorkflowRun {
		return execute(ctx, t, env, id, contract.AgentWorkflowName, contract.AgentInput{
			Agent: "friend", Messages: []longhaul.Message{{Role: longhaul.RoleUser, Content: text}}, User: longhaul.User{ID: "u1"},
		}, nil)
	}
	turn("memory-1", "I am allergic to peanuts, by the way.")
	return env, turn("memory-2", question)
}

// generateIngestHistory makes the run of testdata/ingest_history.json again
// (see replays) on the embedded server.
func generateIngestHistory(t *testing.T) (*testenv.Env, client.WorkflowRun) {
	t.Helper()
	env := testenv.Start(t, testenv.Options{EmbedBatch: 4})
	run, _ := attach(t, env, "logbook.pdf", "application/pdf", logbookPDF(t, 2), contract.IngestInput{MaxChunkSizeTokens: 200, ChunkOverlapTokens: 50})
	if res := ingestResult(t, run); res.Status != "completed" {
		t.Fatalf("result %+v", res)
	}
	return env, run
}

// generateRetentionHistory makes the run of testdata/retention_history.json again
// (see replays) on the embedded server.
func generateRetentionHistory(t *testing.T) (*testenv.Env, client.WorkflowRun) {
	t.Helper()
	env := testenv.Start(t, testenv.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var res contract.RetentionResult
	run := execute(ctx, t, env, "replay-retention-1", contract.RetentionWorkflowName, contract.RetentionInput{Retention: 24 * time.Hour}, &res)
	return env, run
}
