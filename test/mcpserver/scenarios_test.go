package mcpserver

import (
	"slices"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
)

// TestMCPServer drives /mcp with the official TypeScript client.
func TestMCPServer(t *testing.T) {
	env, sh := stack(t)

	t.Run("tools per caller", func(t *testing.T) {
		type tool struct {
			Name        string         `json:"name"`
			TaskSupport string         `json:"taskSupport"`
			Schema      map[string]any `json:"schema"`
		}
		names := func(key string) []string {
			var tools []tool
			node(t, env, key, "list").next(t, "tools", &tools)
			var out []string
			for _, tl := range tools {
				if tl.TaskSupport != "optional" || tl.Schema["type"] != "object" {
					t.Errorf("tool %s: task support %q, schema %v; want optional, an object", tl.Name, tl.TaskSupport, tl.Schema)
				}
				out = append(out, tl.Name)
			}
			return out
		}
		alice, bob := names(aliceKey), names(bobKey)
		if !slices.Contains(alice, "assistant") || !slices.Contains(alice, "clerk") || slices.Contains(alice, "ops") {
			t.Errorf("alice's tools = %v, want assistant and clerk, not ops (admins only)", alice)
		}
		if !slices.Contains(bob, "ops") {
			t.Errorf("bob's (an admin's) tools = %v, want ops too", bob)
		}
	})

	t.Run("plain call with progress", func(t *testing.T) {
		env.Model.Enqueue(llmtest.ToolCalls(llmtest.ToolCall{ID: "c1", Name: "current_time", Arguments: `{}`}))
		env.Model.Enqueue(llmtest.Text("It is noon."))
		c := node(t, env, aliceKey, "call", "assistant", "What time is it?")
		var p struct {
			Progress float64 `json:"progress"`
			Message  string  `json:"message"`
		}
		c.next(t, "progress", &p)
		if p.Message != "calling tool current_time" || p.Progress != 1 {
			t.Errorf("first progress = %+v, want 1: calling tool current_time", p)
		}
		var res toolResult
		c.next(t, "result", &res)
		if res.IsError || res.text() != "It is noon." {
			t.Errorf("result = %+v, want the run's answer", res)
		}
	})

	t.Run("task collected by a new session", func(t *testing.T) {
		release := make(chan struct{})
		env.Model.Enqueue(llmtest.Func(func(llmtest.Request) llmtest.Reply {
			<-release
			return llmtest.Text("The long answer.")
		}))
		var tk task
		node(t, env, aliceKey, "start", "assistant", "Think long.").next(t, "task", &tk)
		if tk.Status != "working" || !strings.HasPrefix(tk.TaskID, "run-") {
			t.Fatalf("task = %+v, want a working task named by its run", tk)
		}
		if r := run(t, env, aliceKey, tk.TaskID); r.Door != "mcp" || r.Agent != "assistant" {
			t.Errorf("run %s: door %q agent %q, want mcp, assistant", tk.TaskID, r.Door, r.Agent)
		}
		// The first client has left; bob cannot see alice's task.
		var e rpcErr
		node(t, env, bobKey, "get", tk.TaskID).next(t, "error", &e)
		if e.Code != -32602 {
			t.Errorf("bob's tasks/get of alice's task: %+v, want -32602", e)
		}
		c := node(t, env, aliceKey, "collect", tk.TaskID)
		var got task
		c.next(t, "got", &got)
		if got.TaskID != tk.TaskID || got.Status != "working" {
			t.Errorf("tasks/get = %+v, want the working task", got)
		}
		var listed []string
		c.next(t, "listed", &listed)
		if !slices.Contains(listed, tk.TaskID) {
			t.Errorf("tasks/list = %v, want %s in it", listed, tk.TaskID)
		}
		close(release)
		var res toolResult
		c.next(t, "result", &res)
		if res.IsError || res.text() != "The long answer." {
			t.Errorf("tasks/result = %+v, want the run's answer", res)
		}
		if rt, _ := res.Meta["io.modelcontextprotocol/related-task"].(map[string]any); rt["taskId"] != tk.TaskID {
			t.Errorf("tasks/result _meta = %v, want its related task", res.Meta)
		}
	})

	t.Run("cancel reaches the run", func(t *testing.T) {
		env.Model.Enqueue(llmtest.Hang())
		var tk task
		node(t, env, aliceKey, "start", "assistant", "Never mind.").next(t, "task", &tk)
		var cancelled task
		node(t, env, aliceKey, "cancel", tk.TaskID).next(t, "cancelled", &cancelled)
		if cancelled.Status != "cancelled" {
			t.Errorf("tasks/cancel = %+v, want cancelled", cancelled)
		}
		if r := waitStatus(t, env, aliceKey, tk.TaskID); r.Status != contract.StatusCancelled {
			t.Errorf("run status = %s, want cancelled", r.Status)
		}
		var got task
		node(t, env, aliceKey, "get", tk.TaskID).next(t, "got", &got)
		if got.Status != "cancelled" {
			t.Errorf("tasks/get after the cancel = %+v, want cancelled", got)
		}
		var e rpcErr
		node(t, env, aliceKey, "cancel", tk.TaskID).next(t, "error", &e)
		if e.Code != -32602 || !strings.Contains(e.Message, "terminal status") {
			t.Errorf("second tasks/cancel = %+v, want -32602 already terminal", e)
		}
	})

	t.Run("approval by elicitation", func(t *testing.T) {
		env.Model.Enqueue(llmtest.ToolCalls(llmtest.ToolCall{ID: "o1", Name: "place_order", Arguments: `{"item":"book"}`}))
		env.Model.Enqueue(llmtest.Text("Ordered."))
		c := node(t, env, aliceKey, "approve", "clerk", "Order a book.")
		var msg string
		c.next(t, "elicited", &msg)
		if !strings.Contains(msg, "place_order") || !strings.Contains(msg, `{"item":"book"}`) {
			t.Errorf("elicitation = %q, want the tool call", msg)
		}
		var res toolResult
		c.next(t, "result", &res)
		if res.IsError || res.text() != "Ordered." || sh.count() != 1 {
			t.Errorf("result = %+v with %d orders, want Ordered. and one order", res, sh.count())
		}
	})

	t.Run("input_required without elicitation", func(t *testing.T) {
		before := sh.count()
		env.Model.Enqueue(llmtest.ToolCalls(llmtest.ToolCall{ID: "o2", Name: "place_order", Arguments: `{"item":"pen"}`}))
		env.Model.Enqueue(llmtest.Text("Ordered the pen."))
		var tk task
		node(t, env, aliceKey, "start", "clerk", "Order a pen.").next(t, "task", &tk)
		waitEvent(t, env, aliceKey, tk.TaskID, "approval_required")
		var got task
		node(t, env, aliceKey, "get", tk.TaskID).next(t, "got", &got)
		if got.Status != "input_required" || !strings.Contains(got.StatusMessage, "place_order") {
			t.Errorf("tasks/get of a run waiting for approval = %+v, want input_required naming place_order", got)
		}
		approve(t, env, aliceKey, tk.TaskID)
		c := node(t, env, aliceKey, "collect", tk.TaskID)
		var res toolResult
		c.next(t, "result", &res)
		if res.IsError || res.text() != "Ordered the pen." || sh.count() != before+1 {
			t.Errorf("result = %+v with %d new orders, want the answer and one order", res, sh.count()-before)
		}
	})
}
