package workflows_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/safehttp"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/internal/tools"
	"go.temporal.io/sdk/client"
)

// generateAgenticHistory makes the run of testdata/agentic_history.json again
// (see replays) on the embedded server.
func generateAgenticHistory(t *testing.T) (*testenv.Env, client.WorkflowRun) {
	t.Helper()
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><body><p>The Australian pelican's bill is up to 47 cm long.</p></body></html>")
	}))
	defer page.Close()
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
	env.Model.SetDefault(llmtest.Text("Up to 47 cm ["+page.URL+"].", llmtest.ChunkSize(3), llmtest.ChunkDelay(20*time.Millisecond)))
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
