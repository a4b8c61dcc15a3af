//go:build unix

package mcpserver

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/proctest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
)

// TestMCPDev drives a real `longhaul dev` with the official MCP
// TypeScript client (client.mjs) and the MCP Inspector's command line:
// the binary built from ./cmd/longhaul (with -race when the test has it;
// LONGHAUL_DEV_BIN names another), run as one process in a temporary
// folder as the README's MCP section runs it, with an agent in a folder
// of its own (LONGHAUL_SKILLS_DIR), the two keys (LONGHAUL_API_KEYS) and
// the scripted model served by the test. It lists the tools, calls one,
// and starts a long task whose client leaves; `longhaul dev` is stopped
// with SIGTERM mid model call and started again on the same folder, and
// a new client collects the task's answer.
func TestMCPDev(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	proctest.NeedNode(t, "test/mcpserver", "@modelcontextprotocol/sdk", "@modelcontextprotocol/inspector")
	model := llmtest.New(t)
	bin := proctest.Binary(t, "LONGHAUL_DEV_BIN")
	dir := t.TempDir()
	agents := filepath.Join(dir, "agents")
	if err := os.CopyFS(agents, opsAgent); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d, err := proctest.StartDev(ctx, t, bin, dir, model.URL(), []string{
		"LONGHAUL_SKILLS_DIR=" + agents,
		"LONGHAUL_API_KEYS=alice:" + aliceKey + ",bob:" + bobKey + ":role=admin",
	}, func() string { return testenv.FreeAddr(t) })
	if err != nil {
		t.Fatal(err)
	}

	t.Run("tools per caller", func(t *testing.T) {
		names := func(key string) []string {
			var tools []struct {
				Name        string `json:"name"`
				TaskSupport string `json:"taskSupport"`
			}
			nodeAt(t, d.URL, key, "list").next(t, "tools", &tools)
			var out []string
			for _, tl := range tools {
				if tl.TaskSupport != "optional" {
					t.Errorf("tool %s: task support %q, want optional", tl.Name, tl.TaskSupport)
				}
				out = append(out, tl.Name)
			}
			return out
		}
		if alice := names(aliceKey); !slices.Contains(alice, "assistant") || slices.Contains(alice, "ops") {
			t.Errorf("alice's tools = %v, want assistant, not ops (admins only)", alice)
		}
		if bob := names(bobKey); !slices.Contains(bob, "ops") {
			t.Errorf("bob's (an admin's) tools = %v, want ops too", bob)
		}
	})

	t.Run("plain call with progress", func(t *testing.T) {
		model.Enqueue(llmtest.ToolCalls(llmtest.ToolCall{ID: "c1", Name: "current_time", Arguments: `{}`}))
		model.Enqueue(llmtest.Text("It is noon."))
		c := nodeAt(t, d.URL, aliceKey, "call", "assistant", "What time is it?")
		var p struct {
			Message string `json:"message"`
		}
		c.next(t, "progress", &p)
		if p.Message != "calling tool current_time" {
			t.Errorf("first progress = %+v, want calling tool current_time", p)
		}
		var res toolResult
		c.next(t, "result", &res)
		if res.IsError || res.text() != "It is noon." {
			t.Errorf("result = %+v, want the run's answer", res)
		}
	})

	t.Run("inspector", func(t *testing.T) {
		var list struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		inspectorAt(t, d.URL, aliceKey, &list, "--method", "tools/list")
		if !slices.ContainsFunc(list.Tools, func(tl struct {
			Name string `json:"name"`
		}) bool {
			return tl.Name == "assistant"
		}) {
			t.Errorf("tools = %+v, want assistant", list.Tools)
		}
		model.Enqueue(llmtest.Text("Hello from the inspector."))
		var res toolResult
		inspectorAt(t, d.URL, aliceKey, &res, "--method", "tools/call", "--tool-name", "assistant", "--tool-arg", "question=Say hello.")
		if res.IsError || res.text() != "Hello from the inspector." {
			t.Errorf("tools/call = %+v, want the run's answer", res)
		}
	})

	t.Run("the README's command", func(t *testing.T) { devReadme(t, d, model) })

	t.Run("long task collected after a restart", func(t *testing.T) { devLongTask(t, d, model) })

	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := model.WaitIdle(ctx); err != nil || model.Pending() != 0 {
		t.Errorf("the model: %v, %d scripted replies never asked for", err, model.Pending())
	}
	if !d.Alive() {
		t.Errorf("longhaul dev exited by itself:\n%s", proctest.Tail(d.Log, 40))
	}
}

// devReadme runs the README's MCP command as written (but for the address
// d serves on): npx runs the Inspector test/mcpserver installed, and it
// prints the call's result.
func devReadme(t *testing.T, d *proctest.Dev, model *llmtest.Server) {
	const readmeURL = "http://127.0.0.1:8080"
	block := proctest.ReadmeBlock(t, "**As an MCP server.**", "sh")
	// The first line starts Longhaul with a key, as the test started it.
	start, commands, _ := strings.Cut(block, "\n")
	if start != "LONGHAUL_API_KEYS=me:$KEY longhaul dev" || !strings.Contains(commands, readmeURL) {
		t.Fatalf("the README's MCP commands are not the ones the test runs:\n%s", block)
	}
	model.Enqueue(llmtest.Text("Hello from the README."))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-c", strings.ReplaceAll(commands, readmeURL, d.URL))
	// npx runs the inspector test/mcpserver installed, never one from
	// the registry; its catalog goes in the test's own home.
	cmd.Dir = filepath.Join(proctest.RepoRoot(t), "test/mcpserver")
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "KEY="+aliceKey, "npm_config_offline=true", "MCP_CATALOG_PATH="+filepath.Join(home, "mcp.json"))
	out, err := cmd.Output()
	var res toolResult
	if err != nil || json.Unmarshal(out, &res) != nil || res.IsError || res.text() != "Hello from the README." {
		t.Errorf("the README's MCP command: %v, printed %s; want the run's answer", err, out)
	}
}

// devLongTask: a task-augmented call whose run is mid model call when its
// client leaves; `longhaul dev` restarts (SIGTERM, again on the same
// folder); a new client reads the task working, lists it, and collects
// the answer of the model call that the restart made Temporal retry.
func devLongTask(t *testing.T, d *proctest.Dev, model *llmtest.Server) {
	asked := len(model.Requests())
	model.Enqueue(llmtest.Hang())
	c := nodeAt(t, d.URL, aliceKey, "start", "assistant", "Think long.")
	var tk task
	c.next(t, "task", &tk)
	if tk.Status != "working" || !strings.HasPrefix(tk.TaskID, "run-") {
		t.Fatalf("task = %+v, want a working task named by its run", tk)
	}
	c.wait(t) // the client has left
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := model.WaitRequests(ctx, asked+1); err != nil {
		t.Fatal(err)
	}
	// The run is mid model call; the call after the restart answers
	// once the new client has seen the task working.
	release := make(chan struct{})
	var once sync.Once
	answer := func() { once.Do(func() { close(release) }) }
	defer answer()
	model.Enqueue(llmtest.Func(func(llmtest.Request) llmtest.Reply {
		<-release
		return llmtest.Text("The long answer.")
	}))
	if err := d.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	c = nodeAt(t, d.URL, aliceKey, "collect", tk.TaskID)
	var got task
	c.next(t, "got", &got)
	if got.TaskID != tk.TaskID || got.Status != "working" {
		t.Errorf("tasks/get after the restart = %+v, want the working task", got)
	}
	var listed []string
	c.next(t, "listed", &listed)
	if !slices.Contains(listed, tk.TaskID) {
		t.Errorf("tasks/list = %v, want %s in it", listed, tk.TaskID)
	}
	answer()
	var res toolResult
	c.next(t, "result", &res)
	if res.IsError || res.text() != "The long answer." {
		t.Errorf("tasks/result = %+v, want the run's answer", res)
	}
	if n := len(model.Requests()); n != asked+2 {
		t.Errorf("%d model calls, want 2: the one the restart cut, and its retry", n-asked)
	}
}
