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
// negotiation mode mode: "legacy" (the client's default: 2025-11-25),
// "auto" (server/discover first) or "modern" (2026-07-28 pinned).
func node2(t *testing.T, env *testenv.Env, key, mode string, args ...string) *client {
	t.Helper()
	return script(t, "client2.mjs", append([]string{env.URL, key, mode}, args...)...)
}

// TestMCPServerClient2 drives /mcp with the official TypeScript client's
// 2.x line, @modelcontextprotocol/client 2.3.1, and its Tasks package,
// @modelcontextprotocol/ext-tasks 0.2.2.
func TestMCPServerClient2(t *testing.T) {
	proctest.NeedNode(t, "test/mcpserver", "@modelcontextprotocol/client", "@modelcontextprotocol/ext-tasks")
	env, sh := stack(t)

	t.Run("negotiation", func(t *testing.T) {
		for _, c := range []struct {
			mode, version, era string
			sent               []string
			inventory          string
			inputResponses     bool
		}{
			// The client's default: the 2025 handshake, Tasks of 2025-11-25
			// (ext-tasks' V1).
			{"legacy", "2025-11-25", "legacy", []string{"initialize", "notifications/initialized"}, "server-list", false},
			// auto probes with server/discover, which the stateless handler
			// answers with 2026-07-28 among its versions (streamable.go:871-876,
			// server.go:920-960), and the Tasks extension among its
			// capabilities: the stateless revision, ext-tasks' V2, which has
			// no tasks/list (ext-tasks client/internal.js:176-202).
			{"auto", "2026-07-28", "modern", []string{"server/discover"}, "known-handles", true},
			{"modern", "2026-07-28", "modern", []string{"server/discover"}, "known-handles", true},
		} {
			negotiates(t, env, c.mode, c.version, c.era, c.sent, c.inventory, c.inputResponses)
		}
	})

	for _, mode := range []string{"legacy", "modern"} {
		t.Run("plain call ("+mode+")", func(t *testing.T) {
			env.Model.Enqueue(llmtest.ToolCalls(llmtest.ToolCall{ID: "c2", Name: "current_time", Arguments: `{}`}))
			env.Model.Enqueue(llmtest.Text("It is one o'clock."))
			c := node2(t, env, aliceKey, mode, "call", "assistant", "What time is it?")
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
	}

	for _, g := range []struct{ mode, generation string }{{"legacy", "v1"}, {"modern", "v2"}} {
		t.Run("task resumed by a new client ("+g.generation+")", func(t *testing.T) {
			resumed(t, env, g.mode, g.generation)
		})
		t.Run("cancel ("+g.generation+")", func(t *testing.T) {
			cancels(t, env, g.mode)
		})
	}

	t.Run("approval through the runs API (v1)", func(t *testing.T) {
		// ext-tasks' V1 driver polls tasks/get until the task ends and only
		// then calls tasks/result (task-protocol-v1.js:27-54), so it never
		// opens the stream an elicitation would come on: it sees
		// input_required, and the approval comes through /v1.
		env.Model.Enqueue(llmtest.ToolCalls(llmtest.ToolCall{ID: "o3", Name: "place_order", Arguments: `{"item":"lamp"}`}))
		env.Model.Enqueue(llmtest.Text("Ordered the lamp."))
		var ref json.RawMessage
		node2(t, env, aliceKey, "legacy", "start", "clerk", "Order a lamp.").next(t, "reference", &ref)
		id := taskIDOf(t, ref)
		waitEvent(t, env, aliceKey, id, "approval_required")
		c := node2(t, env, aliceKey, "legacy", "collect", string(ref))
		var status string
		c.next(t, "status", &status)
		if status != "input_required" {
			t.Errorf("status of a run waiting for approval = %q, want input_required", status)
		}
		approve(t, env, aliceKey, id)
		var res toolResult
		c.next(t, "result", &res)
		if res.IsError || res.text() != "Ordered the lamp." {
			t.Errorf("result = %+v, want the run's answer", res)
		}
	})

	t.Run("approval of a plain call by inputRequests (modern)", func(t *testing.T) {
		before := sh.count()
		env.Model.Enqueue(llmtest.ToolCalls(llmtest.ToolCall{ID: "o5", Name: "place_order", Arguments: `{"item":"chair"}`}))
		env.Model.Enqueue(llmtest.Text("Ordered the chair."))
		c := node2(t, env, aliceKey, "modern", "ask", "clerk", "Order a chair.")
		var msg string
		c.next(t, "elicited", &msg)
		if !strings.Contains(msg, "place_order") || !strings.Contains(msg, `{"item":"chair"}`) {
			t.Errorf("elicitation = %q, want the tool call", msg)
		}
		var res toolResult
		c.next(t, "result", &res)
		if res.IsError || res.text() != "Ordered the chair." || sh.count() != before+1 {
			t.Errorf("result = %+v with %d new orders, want the answer and one order", res, sh.count()-before)
		}
		// The call, then its retry with the answer (the client lists the
		// tools first, for their routing headers).
		var sent []string
		c.next(t, "sent", &sent)
		calls := 0
		for _, m := range sent {
			if m == "tools/call" {
				calls++
			}
		}
		if calls != 2 || slices.Contains(sent, "initialize") {
			t.Errorf("the client sent %v, want the call twice on 2026-07-28", sent)
		}
	})

	t.Run("approval by inputRequests and tasks/update (v2)", func(t *testing.T) {
		before := sh.count()
		env.Model.Enqueue(llmtest.ToolCalls(llmtest.ToolCall{ID: "o4", Name: "place_order", Arguments: `{"item":"desk"}`}))
		env.Model.Enqueue(llmtest.Text("Ordered the desk."))
		c := node2(t, env, aliceKey, "modern", "approve", "clerk", "Order a desk.")
		var asked struct{ Kind, Message string }
		c.next(t, "elicited", &asked)
		if asked.Kind != "elicitation" || !strings.Contains(asked.Message, "place_order") || !strings.Contains(asked.Message, `{"item":"desk"}`) {
			t.Errorf("input request = %+v, want an elicitation naming the tool call", asked)
		}
		var outcome string
		c.next(t, "outcome", &outcome)
		var res toolResult
		c.next(t, "result", &res)
		if outcome != "completed" || res.IsError || res.text() != "Ordered the desk." || sh.count() != before+1 {
			t.Errorf("outcome %q, result %+v, %d new orders; want completed, the answer, one order", outcome, res, sh.count()-before)
		}
		var sent []string
		c.next(t, "sent", &sent)
		if !slices.Contains(sent, "tasks/update") {
			t.Errorf("the client sent %v, want a tasks/update", sent)
		}
	})
}

// negotiates checks what client2.mjs in mode negotiates and what
// ext-tasks makes of the server's Tasks.
func negotiates(t *testing.T, env *testenv.Env, mode, version, era string, sent []string, inventory string, inputResponses bool) {
	t.Helper()
	out := node2(t, env, aliceKey, mode, "list")
	var neg struct {
		Version, Era string
		Sent         []string
	}
	out.next(t, "negotiated", &neg)
	if neg.Version != version || neg.Era != era || !slices.Equal(neg.Sent, sent) {
		t.Errorf("%s: negotiated %+v, want %s, %s era, after sending %v", mode, neg, version, era, sent)
	}
	var caps struct {
		Inventory      string `json:"inventory"`
		Execution      bool   `json:"execution"`
		Cancellation   bool   `json:"cancellation"`
		InputResponses bool   `json:"inputResponses"`
	}
	out.next(t, "taskCapabilities", &caps)
	if caps.Inventory != inventory || !caps.Execution || !caps.Cancellation || caps.InputResponses != inputResponses {
		t.Errorf("%s: ext-tasks' view of the server's Tasks = %+v, want inventory %s, task tool calls, cancel, input responses %v", mode, caps, inventory, inputResponses)
	}
	var tools []struct {
		Name string `json:"name"`
	}
	out.next(t, "tools", &tools)
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	if !slices.Contains(names, "assistant") || slices.Contains(names, "ops") {
		t.Errorf("%s: tools = %v, want assistant, not ops (admins only)", mode, names)
	}
}

// taskIDOf is the task id of a serialized ext-tasks task reference.
func taskIDOf(t *testing.T, ref json.RawMessage) string {
	t.Helper()
	var r struct {
		TaskID string `json:"taskId"`
	}
	if err := json.Unmarshal(ref, &r); err != nil {
		t.Fatalf("reference %s: %v", ref, err)
	}
	return r.TaskID
}

// resumed starts a long call as a task with one client, which leaves, and
// resumes it with a new one, which collects the answer.
func resumed(t *testing.T, env *testenv.Env, mode, generation string) {
	release := make(chan struct{})
	env.Model.Enqueue(llmtest.Func(func(llmtest.Request) llmtest.Reply {
		<-release
		return llmtest.Text("The answer, later.")
	}))
	first := node2(t, env, aliceKey, mode, "start", "assistant", "Take your time.")
	var kind string
	first.next(t, "kind", &kind)
	var ref json.RawMessage
	first.next(t, "reference", &ref)
	var r struct {
		Generation string `json:"generation"`
		TaskID     string `json:"taskId"`
	}
	if err := json.Unmarshal(ref, &r); err != nil || kind != "task" || r.Generation != generation || !strings.HasPrefix(r.TaskID, "run-") {
		t.Fatalf("execution %q, reference %s: want a %s task named by its run", kind, ref, generation)
	}
	for range first.lines {
		// The first client has left once its output ends.
	}
	if got := run(t, env, aliceKey, r.TaskID); got.Door != "mcp" || got.Status != contract.StatusRunning {
		t.Errorf("run %s: door %q status %q, want mcp, running", r.TaskID, got.Door, got.Status)
	}
	c := node2(t, env, aliceKey, mode, "collect", string(ref))
	if generation == "v1" {
		var listed []string
		c.next(t, "listed", &listed)
		if !slices.Contains(listed, r.TaskID) {
			t.Errorf("tasks/list = %v, want %s in it", listed, r.TaskID)
		}
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
}

// cancels cancels a task, reads it cancelled, and is refused a second
// cancel; another principal does not find it.
func cancels(t *testing.T, env *testenv.Env, mode string) {
	env.Model.Enqueue(llmtest.Hang())
	var ref json.RawMessage
	node2(t, env, aliceKey, mode, "start", "assistant", "Forget it.").next(t, "reference", &ref)
	id := taskIDOf(t, ref)
	var cancelled string
	node2(t, env, aliceKey, mode, "cancel", id).next(t, "cancelled", &cancelled)
	if got := waitStatus(t, env, aliceKey, id); got.Status != contract.StatusCancelled {
		t.Errorf("run status = %s, want cancelled", got.Status)
	}
	var got struct {
		TaskID string `json:"taskId"`
		Status string `json:"status"`
	}
	node2(t, env, aliceKey, mode, "get", id).next(t, "got", &got)
	if got.TaskID != id || got.Status != "cancelled" {
		t.Errorf("task after tasks/cancel = %+v, want cancelled", got)
	}
	var e rpcErr
	node2(t, env, aliceKey, mode, "cancel", id).next(t, "error", &e)
	if e.Code != -32602 || !strings.Contains(e.Message, "terminal status") {
		t.Errorf("second tasks/cancel = %+v, want -32602 already terminal", e)
	}
	node2(t, env, bobKey, mode, "get", id).next(t, "error", &e)
	if e.Code != -32602 || !strings.Contains(e.Message, "Task not found") {
		t.Errorf("bob's tasks/get of alice's task: %+v, want not found", e)
	}
}
