package workflows_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/safehttp"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/internal/tools"
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
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><body><p>The Australian pelican's bill is up to 47 cm long.</p></body></html>")
	}))
	t.Cleanup(page.Close)
	u, _ := url.Parse(page.URL)
	ap := netip.MustParseAddrPort(u.Host)
	env := testenv.Start(t, testenv.Options{Fetch: tools.WebFetchOptions{
		HTTP: safehttp.Options{AllowAddrs: []netip.AddrPort{ap}}, AllowedPorts: []int{int(ap.Port())},
	}})
	name := func(r llmtest.Request) string {
		if f := r.Chat.ResponseFormat; f != nil && f.JSONSchema != nil {
			return f.JSONSchema.Name
		}
		return ""
	}
	env.Model.On(func(r llmtest.Request) bool { return name(r) == "plan" }, llmtest.JSON(map[string]any{
		"goal": "Give the pelican's bill length with a source",
		"steps": []map[string]any{
			{"kind": "tool", "target": "web_fetch", "title": "Read the page", "arguments": map[string]any{"url": page.URL, "max_chars": nil}, "success": "a length"},
			{"kind": "completion", "title": "Answer", "input": "the length and the URL", "success": "cited"},
		},
	}))
	env.Model.On(func(r llmtest.Request) bool { return name(r) == "step_review" }, llmtest.JSON(map[string]string{"decision": "ok", "reason": "found"}))
	env.Model.SetDefault(llmtest.Text("Up to 47 cm [" + page.URL + "]."))
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
