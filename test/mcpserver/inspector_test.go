package mcpserver

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/proctest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
)

// inspector runs the MCP Inspector's command line (mcp-inspector --cli,
// @modelcontextprotocol/inspector 2.12.0, pinned by package-lock.json)
// against env's /mcp as key with args, and decodes what it prints into v.
// The launcher imports the CLI in its own process
// (clients/launcher/build/index.js:54-60), which ends by itself; the
// context kills it if it does not.
func inspector(t *testing.T, env *testenv.Env, key string, v any, args ...string) {
	t.Helper()
	inspectorAt(t, env.URL, key, v, args...)
}

// inspectorAt is inspector against the API at url.
func inspectorAt(t *testing.T, url, key string, v any, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	launcher := filepath.Join(proctest.RepoRoot(t), "test/mcpserver/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js")
	cmd := exec.CommandContext(ctx, "node", append([]string{launcher, "--cli", url + "/mcp",
		"--transport", "http", "--header", "Authorization: Bearer " + key}, args...)...)
	// Its catalog (~/.mcp-inspector) in the test's own home.
	home := t.TempDir()
	cmd.Env = append(cmd.Environ(), "HOME="+home, "MCP_CATALOG_PATH="+filepath.Join(home, "mcp.json"))
	out, err := cmd.Output()
	t.Logf("mcp-inspector --cli %v: %s", args, out)
	if err != nil {
		t.Fatalf("mcp-inspector --cli %v: %v", args, err)
	}
	if err := json.Unmarshal(out, v); err != nil {
		t.Fatalf("mcp-inspector --cli %v printed %s: %v", args, out, err)
	}
}

// TestMCPInspectorCLI lists the tools and calls one through the MCP
// Inspector's command line with a bearer header.
func TestMCPInspectorCLI(t *testing.T) {
	proctest.NeedNode(t, "test/mcpserver", "@modelcontextprotocol/inspector")
	env, _ := stack(t)

	// Ad hoc, the command line negotiates "legacy" (2025-11-25) unless
	// told an era (its --protocol-era, clients/cli/build/index.js:24462);
	// "modern" pins 2026-07-28, with no fallback.
	for _, era := range []string{"legacy", "modern"} {
		t.Run(era, func(t *testing.T) {
			var list struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
			}
			inspector(t, env, aliceKey, &list, "--protocol-era", era, "--method", "tools/list")
			var names []string
			for _, tl := range list.Tools {
				names = append(names, tl.Name)
			}
			if !slices.Contains(names, "assistant") || slices.Contains(names, "ops") {
				t.Errorf("tools = %v, want assistant, not ops (admins only)", names)
			}
			env.Model.Enqueue(llmtest.Text("Hello from the inspector."))
			var res toolResult
			inspector(t, env, aliceKey, &res, "--protocol-era", era, "--method", "tools/call", "--tool-name", "assistant", "--tool-arg", "question=Say hello.")
			if res.IsError || res.text() != "Hello from the inspector." {
				t.Errorf("tools/call = %+v, want the run's answer", res)
			}
		})
	}
}
