package mcpserver

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/proctest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
)

// node2 runs client2.mjs (the 2.x client line with ext-tasks) in
// negotiation mode mode ("legacy", the client's default, or "auto").
func node2(t *testing.T, env *testenv.Env, key, mode string, args ...string) *client {
	t.Helper()
	return script(t, "client2.mjs", append([]string{env.URL, key, mode}, args...)...)
}

// TestMCPServerClient2 drives /mcp with the official TypeScript client's
// 2.x line, @modelcontextprotocol/client 2.3.1, and its Tasks package,
// @modelcontextprotocol/ext-tasks 0.2.2.
func TestMCPServerClient2(t *testing.T) {
	proctest.NeedNode(t, "test/mcpserver", "@modelcontextprotocol/client", "@modelcontextprotocol/ext-tasks")
	env, _ := stack(t)

	for _, mode := range []string{"legacy", "auto"} {
		t.Run("negotiates 2025-11-25 with Tasks ("+mode+")", func(t *testing.T) {
			c := node2(t, env, aliceKey, mode, "list")
			var neg struct {
				Version, Era string
				Sent         []string
			}
			c.next(t, "negotiated", &neg)
			// auto probes with server/discover first: the Go SDK's stateful
			// handler offers no 2026-07-28 (server.go:920-960 discover, the
			// session's versions), so the client falls back to initialize
			// (index.mjs:2438-2449 classifyResult).
			want := []string{"initialize", "notifications/initialized"}
			if mode == "auto" {
				want = append([]string{"server/discover"}, want...)
			}
			if neg.Version != "2025-11-25" || neg.Era != "legacy" || !slices.Equal(neg.Sent, want) {
				t.Errorf("negotiated %+v, want 2025-11-25, legacy era, after sending %v", neg, want)
			}
			var caps struct {
				Inventory    string `json:"inventory"`
				Execution    bool   `json:"execution"`
				Cancellation bool   `json:"cancellation"`
			}
			c.next(t, "taskCapabilities", &caps)
			if caps.Inventory != "server-list" || !caps.Execution || !caps.Cancellation {
				t.Errorf("ext-tasks' view of the server's Tasks = %+v, want tasks/list, task tool calls, tasks/cancel", caps)
			}
			var tools []struct {
				Name        string `json:"name"`
				TaskSupport string `json:"taskSupport"`
			}
			c.next(t, "tools", &tools)
			i := slices.IndexFunc(tools, func(tl struct {
				Name        string `json:"name"`
				TaskSupport string `json:"taskSupport"`
			}) bool {
				return tl.Name == "assistant"
			})
			if i < 0 || tools[i].TaskSupport != "optional" {
				t.Errorf("tools = %+v, want assistant, task support optional", tools)
			}
		})
	}

	t.Run("2026-07-28 pinned is refused", func(t *testing.T) {
		// The stateful server's server/discover offers 2025-11-25 and older
		// only (streamable.go:871-876), and a pinned client has no fallback:
		// UnsupportedProtocolVersionError, -32022 (index.mjs:2438-2456).
		var e rpcErr
		node2(t, env, aliceKey, "modern", "list").next(t, "error", &e)
		if e.Code != -32022 || !strings.Contains(e.Message, "2026-07-28") {
			t.Errorf("a client pinned to 2026-07-28: %+v, want -32022 unsupported protocol version", e)
		}
	})

	t.Run("plain call", func(t *testing.T) {
		env.Model.Enqueue(llmtest.ToolCalls(llmtest.ToolCall{ID: "c2", Name: "current_time", Arguments: `{}`}))
		env.Model.Enqueue(llmtest.Text("It is one o'clock."))
		c := node2(t, env, aliceKey, "auto", "call", "assistant", "What time is it?")
		var p struct {
			Message string `json:"message"`
		}
		c.next(t, "progress", &p)
		if p.Message != "calling tool current_time" {
			t.Errorf("first progress = %+v, want calling tool current_time", p)
		}
		var res toolResult
		c.next(t, "result", &res)
		if res.IsError || res.text() != "It is one o'clock." {
			t.Errorf("result = %+v, want the run's answer", res)
		}
	})

	t.Run("task resumed by a new client", func(t *testing.T) {
		release := make(chan struct{})
		env.Model.Enqueue(llmtest.Func(func(llmtest.Request) llmtest.Reply {
			<-release
			return llmtest.Text("The answer, later.")
		}))
		first := node2(t, env, aliceKey, "legacy", "start", "assistant", "Take your time.")
		var kind string
		first.next(t, "kind", &kind)
		var ref json.RawMessage
		first.next(t, "reference", &ref)
		var r struct {
			Generation string `json:"generation"`
			TaskID     string `json:"taskId"`
		}
		if err := json.Unmarshal(ref, &r); err != nil || kind != "task" || r.Generation != "v1" || !strings.HasPrefix(r.TaskID, "run-") {
			t.Fatalf("execution %q, reference %s: want a v1 task named by its run", kind, ref)
		}
		for range first.lines {
			// The first client has left once its output ends.
		}
		if got := run(t, env, aliceKey, r.TaskID); got.Door != "mcp" || got.Status != contract.StatusRunning {
			t.Errorf("run %s: door %q status %q, want mcp, running", r.TaskID, got.Door, got.Status)
		}
		c := node2(t, env, aliceKey, "auto", "collect", string(ref))
		var listed []string
		c.next(t, "listed", &listed)
		if !slices.Contains(listed, r.TaskID) {
			t.Errorf("tasks/list = %v, want %s in it", listed, r.TaskID)
		}
		var status string
		c.next(t, "status", &status)
		if status != "working" {
			t.Errorf("first status = %q, want working", status)
		}
		close(release)
		var outcome string
		c.next(t, "outcome", &outcome)
		var res toolResult
		c.next(t, "result", &res)
		if outcome != "completed" || res.IsError || res.text() != "The answer, later." {
			t.Errorf("outcome %q, result %+v, want completed with the run's answer", outcome, res)
		}
	})

	t.Run("approval through the runs API", func(t *testing.T) {
		// ext-tasks' V1 driver polls tasks/get until the task ends and only
		// then calls tasks/result (task-protocol-v1.js:27-54), so it never
		// opens the stream an elicitation would come on: it sees
		// input_required, and the approval comes through /v1.
		env.Model.Enqueue(llmtest.ToolCalls(llmtest.ToolCall{ID: "o3", Name: "place_order", Arguments: `{"item":"lamp"}`}))
		env.Model.Enqueue(llmtest.Text("Ordered the lamp."))
		var ref json.RawMessage
		node2(t, env, aliceKey, "legacy", "start", "clerk", "Order a lamp.").next(t, "reference", &ref)
		var r struct {
			TaskID string `json:"taskId"`
		}
		if err := json.Unmarshal(ref, &r); err != nil {
			t.Fatal(err)
		}
		waitEvent(t, env, aliceKey, r.TaskID, "approval_required")
		c := node2(t, env, aliceKey, "legacy", "collect", string(ref))
		var status string
		c.next(t, "status", &status)
		if status != "input_required" {
			t.Errorf("status of a run waiting for approval = %q, want input_required", status)
		}
		approve(t, env, aliceKey, r.TaskID)
		var res toolResult
		c.next(t, "result", &res)
		if res.IsError || res.text() != "Ordered the lamp." {
			t.Errorf("result = %+v, want the run's answer", res)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		env.Model.Enqueue(llmtest.Hang())
		first := node2(t, env, aliceKey, "legacy", "start", "assistant", "Forget it.")
		var r struct {
			TaskID string `json:"taskId"`
		}
		first.next(t, "reference", &r)
		var cancelled string
		node2(t, env, aliceKey, "legacy", "cancel", r.TaskID).next(t, "cancelled", &cancelled)
		if got := waitStatus(t, env, aliceKey, r.TaskID); got.Status != contract.StatusCancelled {
			t.Errorf("run status = %s, want cancelled", got.Status)
		}
		var got struct {
			TaskID string `json:"taskId"`
			Status string `json:"status"`
		}
		node2(t, env, aliceKey, "legacy", "get", r.TaskID).next(t, "got", &got)
		if got.TaskID != r.TaskID || got.Status != "cancelled" {
			t.Errorf("task after tasks/cancel = %+v, want cancelled", got)
		}
		var e rpcErr
		node2(t, env, aliceKey, "legacy", "cancel", r.TaskID).next(t, "error", &e)
		if e.Code != -32602 || !strings.Contains(e.Message, "terminal status") {
			t.Errorf("second tasks/cancel = %+v, want -32602 already terminal", e)
		}
		node2(t, env, bobKey, "legacy", "get", r.TaskID).next(t, "error", &e)
		if e.Code != -32602 || !strings.Contains(e.Message, "Task not found") {
			t.Errorf("bob's tasks/get of alice's task: %+v, want not found", e)
		}
	})
}
