package workflows_test

import (
	"context"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/memorytest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"go.temporal.io/sdk/client"
)

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
