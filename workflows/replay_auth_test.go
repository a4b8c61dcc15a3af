package workflows_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"path/filepath"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/internal/tools"
	"github.com/longhaul-dev/longhaul/workflows"
	"go.temporal.io/sdk/client"
)

// authWaitReplay is the auth-wait history's replay: a run whose tool
// call found its user's account not connected waited (behind the
// auth-wait version marker) until told the user connected it, and called
// again. It replays beside the others (TestReplayHistories).
func init() { replays = append(replays, authWaitReplay) }

var authWaitReplay = replayTest{
	file: filepath.Join("testdata", "auth_wait_history.json"),
	fn:   workflows.AgentWorkflow, name: contract.AgentWorkflowName,
	scheduled: []string{"ChatCompletion", "CallTool", "CallTool", "ChatCompletion"},
	markers:   []string{"auth-wait"},
	generate:  generateAuthWaitHistory,
}

// oauthTool stands for an OAuth MCP server's tool: its first call finds
// the user's account not connected (as internal/mcp's connectFirst
// answers), the next ones run.
type oauthTool struct{ calls atomic.Int32 }

func (*oauthTool) Name() string        { return "mail__search" }
func (*oauthTool) Description() string { return "Search the user's mail." }
func (*oauthTool) Parameters() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{}}`)
}
func (o *oauthTool) Call(context.Context, tools.Call) (tools.Result, error) {
	if o.calls.Add(1) == 1 {
		link := "https://lh.example/oauth/connect/REPLAY"
		return tools.Result{Content: "NOT CONNECTED: open " + link, Connect: &tools.Connect{Server: "mail", URL: link}}, nil
	}
	return tools.Result{Content: "invoice 42 from ACME"}, nil
}

// generateAuthWaitHistory makes the run of testdata/auth_wait_history.json
// again: it waits as auth once the tool finds no connection, the test
// tells it the user connected (as the OAuth callback does), and it calls
// again and answers.
func generateAuthWaitHistory(t *testing.T) (*testenv.Env, client.WorkflowRun) {
	t.Helper()
	env := testenv.Start(t, testenv.Options{
		Tools: []tools.Tool{&oauthTool{}},
		Layers: []fs.FS{fstest.MapFS{
			"mail.md":   {Data: []byte("---\nskill: mail\ndescription: Reads mail\ntools: [mail__search]\n---\nSearch the user's mail.\n")},
			"mailer.md": {Data: []byte("---\nagent: mailer\ndescription: Reads mail\nmode: chat\nskills: [mail]\n---\nYou read mail.\n")},
		}},
	})
	env.Model.Enqueue(llmtest.ToolCalls(llmtest.ToolCall{ID: "call_m", Name: "mail__search", Arguments: `{}`}))
	env.Model.Enqueue(llmtest.Text("Found it."))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "replay-auth-wait-1", TaskQueue: testenv.TaskQueue}, contract.AgentWorkflowName, contract.AgentInput{
		Agent: "mailer", User: longhaul.User{ID: "u1"}, AuthWait: true, ApprovalTimeout: time.Hour,
		Messages: []longhaul.Message{{Role: longhaul.RoleUser, Content: "Find the invoice"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for {
		v, err := env.Client.QueryWorkflow(ctx, run.GetID(), "", contract.QueryState)
		var st contract.RunState
		if err == nil && v.Get(&st) == nil && st.Waiting != nil && st.Waiting.Kind == contract.WaitAuth {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the run never waited for the connection")
		case <-time.After(20 * time.Millisecond):
		}
	}
	h, err := env.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: run.GetID(), UpdateID: "connected-1", UpdateName: contract.UpdateInput,
		Args: []any{contract.InputRequest{Connected: "mail"}}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(ctx, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	var res contract.AgentResult
	if err := run.Get(ctx, &res); err != nil || res.Content != "Found it." {
		t.Fatalf("run = %+v, %v", res, err)
	}
	return env, run
}
