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
	"github.com/longhaul-dev/longhaul/internal/endpoints"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/workflows"
	"go.temporal.io/sdk/client"
)

// The fallback history replays beside the others (TestReplayHistories): a
// chat turn whose agent names a model list, the first model down (503),
// the second answering: two ChatCompletion activities behind the
// model-fallbacks marker.
func init() {
	replays = append(replays, replayTest{
		file: filepath.Join("testdata", "fallback_history.json"),
		fn:   workflows.AgentWorkflow, name: contract.AgentWorkflowName,
		scheduled: []string{"ChatCompletion", "ChatCompletion"},
		markers:   []string{"model-fallbacks"},
		generate:  generateFallbackHistory,
	})
}

// generateFallbackHistory makes the run of testdata/fallback_history.json
// again on the embedded server.
func generateFallbackHistory(t *testing.T) (*testenv.Env, client.WorkflowRun) {
	t.Helper()
	down := llmtest.New(t)
	down.SetDefault(llmtest.Status(503, "overloaded"))
	layer := fstest.MapFS{"steady.md": {Data: []byte("---\nagent: steady\ndescription: Falls back\nmodel: [down:big, llmtest]\n---\nYou answer briefly.\n")}}
	env := testenv.Start(t, testenv.Options{
		Layers:    []fs.FS{layer},
		Endpoints: []endpoints.Endpoint{{Name: "down", BaseURL: down.URL()}},
	})
	env.Model.SetDefault(llmtest.Text("Answered by the second model."))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var res contract.AgentResult
	run := execute(ctx, t, env, "fallback-1", contract.AgentWorkflowName, contract.AgentInput{
		Agent: "steady", Messages: []longhaul.Message{{Role: longhaul.RoleUser, Content: "Hello?"}},
	}, &res)
	if res.Content != "Answered by the second model." || len(down.Requests()) != 2 {
		t.Fatalf("result %q after %d requests to the first model", res.Content, len(down.Requests()))
	}
	return env, run
}
