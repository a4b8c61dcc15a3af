package workflows_test

import (
	"context"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"testing/fstest"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/workflows"
	"go.temporal.io/sdk/client"
)

// A run whose asked agent waits for an approval, answered through the
// run, replays beside the others (TestReplayHistories), and so does the
// child: the child signals the wait to its parent and takes the answer
// the parent signals back (askwait.go); the order tool runs with the
// parent's update as its approval.
func init() {
	replays = append(replays,
		replayTest{
			file: askWaitHistoryFile,
			fn:   workflows.AgentWorkflow, name: contract.AgentWorkflowName,
			scheduled: []string{"ChatCompletion", "ChatCompletion"},
			markers:   []string{"ask-agents", "ask-approval"},
			generate:  func(t *testing.T) (*testenv.Env, client.WorkflowRun) { return generateAskWaitHistory(t, false) },
			id:        askWaitReplayID,
		},
		replayTest{
			file: askWaitChildHistoryFile,
			fn:   workflows.AgentWorkflow, name: contract.AgentWorkflowName,
			scheduled: []string{"ChatCompletion", "CallTool", "ChatCompletion"},
			markers:   []string{"ask-approval"},
			generate:  func(t *testing.T) (*testenv.Env, client.WorkflowRun) { return generateAskWaitHistory(t, true) },
			id:        askWaitReplayID + "-ask-1",
		})
}

var (
	askWaitHistoryFile      = filepath.Join("testdata", "ask_approval_history.json")
	askWaitChildHistoryFile = filepath.Join("testdata", "ask_approval_child_history.json")
)

const askWaitReplayID = "replay-ask-approval-1"

// askWaitLayer is an agent that asks one whose HTTP order tool needs a
// person's approval.
var askWaitLayer = fstest.MapFS{
	"desk.md":   {Data: []byte("---\nagent: desk\ndescription: Asks the shop\nagents: [shop]\n---\nAsk the shop.\n")},
	"shop.md":   {Data: []byte("---\nagent: shop\ndescription: Orders things\nskills: [orders]\n---\nOrder things.\n")},
	"orders.md": {Data: []byte("---\nskill: orders\ndescription: Places orders\ntools: [place_order]\nhttp_tools:\n  - name: place_order\n    description: Orders an item\n    method: post\n    url: ${ORDERS_URL}/order\n    parameters: {type: object, properties: {item: {type: string}}, required: [item]}\n    approval: required\n---\nOrder only what is asked.\n")},
}

// generateAskWaitHistory makes the run of testdata/ask_approval_history.json
// (child false) or of its child (true) again on the embedded server: the
// desk asks the shop, the shop's order waits, the test approves it
// through the desk's input update once the desk's state shows the wait.
func generateAskWaitHistory(t *testing.T, child bool) (*testenv.Env, client.WorkflowRun) {
	t.Helper()
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, `{"order":"ord-1"}`)
	}))
	t.Cleanup(svc.Close)
	env := testenv.Start(t, testenv.Options{Layers: []fs.FS{askWaitLayer}, Env: map[string]string{"ORDERS_URL": svc.URL}})
	env.Model.Enqueue(
		llmtest.ToolCalls(llmtest.ToolCall{ID: "call_1", Name: "ask_shop", Arguments: `{"question":"Order the book"}`}),
		llmtest.ToolCalls(llmtest.ToolCall{ID: "call_2", Name: "place_order", Arguments: `{"item":"book"}`}),
		llmtest.Text("Ordered: ord-1."),
		llmtest.Text("The shop ordered it: ord-1."),
	)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: askWaitReplayID, TaskQueue: testenv.TaskQueue}, contract.AgentWorkflowName, contract.AgentInput{
		Agent: "desk", User: longhaul.User{ID: "u1"},
		Messages: []longhaul.Message{{Role: longhaul.RoleUser, Content: "Order the book."}},
	})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	for {
		v, err := env.Client.QueryWorkflow(ctx, askWaitReplayID, "", contract.QueryState)
		if err != nil {
			t.Fatalf("query: %v", err)
		}
		var st contract.RunState
		if err := v.Get(&st); err != nil {
			t.Fatal(err)
		}
		if st.Waiting != nil && st.Waiting.Run == askWaitReplayID+"-ask-1" {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the desk never showed the shop's wait")
		case <-time.After(50 * time.Millisecond):
		}
	}
	yes := true
	h, err := env.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: askWaitReplayID, UpdateName: contract.UpdateInput, UpdateID: "approve-1",
		Args: []any{contract.InputRequest{Approve: &yes}}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		t.Fatalf("approve: %v", err)
	}
	var res contract.InputResult
	if err := h.Get(ctx, &res); err != nil || res.Approved == nil {
		t.Fatalf("approve: %+v %v", res, err)
	}
	var out contract.AgentResult
	if err := run.Get(ctx, &out); err != nil || out.Content != "The shop ordered it: ord-1." {
		t.Fatalf("the desk ended %+v %v", out, err)
	}
	if child {
		return env, env.Client.GetWorkflow(ctx, askWaitReplayID+"-ask-1", "")
	}
	return env, run
}
