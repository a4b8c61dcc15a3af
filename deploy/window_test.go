package deploy_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/longhaul-dev/longhaul/internal/testing/composetest"
	"github.com/longhaul-dev/longhaul/internal/testing/proctest"
	"github.com/longhaul-dev/longhaul/internal/testing/tooltest"
	"github.com/longhaul-dev/longhaul/internal/window"
	openai "github.com/sashabaranov/go-openai"
)

// TestComposeModelWindow: the stack's Ollama runs its model with a window
// of OLLAMA_CONTEXT_LENGTH (16,384 by default, with flash attention and a
// q8_0 KV cache to keep it in a consumer GPU), and Longhaul's API and
// workers are told the same window for the same model; an operator's
// LONGHAUL_LLM_CONTEXT stands over it, and an empty one leaves the window
// to discovery.
func TestComposeModelWindow(t *testing.T) {
	for _, c := range []struct {
		name          string
		env           map[string]string
		ollama, model string // want: Ollama's OLLAMA_CONTEXT_LENGTH, Longhaul's LONGHAUL_LLM_CONTEXT
	}{
		{".env.example", secretEnv(t), "16384", "llama3.1:8b=16384"},
		{"no window in .env", composetest.Without(secretEnv(t), "OLLAMA_CONTEXT_LENGTH", "OLLAMA_FLASH_ATTENTION", "OLLAMA_KV_CACHE_TYPE"), "16384", "llama3.1:8b=16384"},
		{"another model and window", composetest.With(secretEnv(t), "LONGHAUL_LLM_MODEL=qwen3:8b", "OLLAMA_CONTEXT_LENGTH=32768"), "32768", "qwen3:8b=32768"},
		{"the operator's setting", composetest.With(secretEnv(t), "LONGHAUL_LLM_CONTEXT=remote:gpt-4o=128000"), "16384", "remote:gpt-4o=128000"},
		{"asked of the endpoint", composetest.With(secretEnv(t), "LONGHAUL_LLM_CONTEXT="), "16384", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := composetest.Load(t, c.env)
			o := composetest.Env(p.Services["ollama"])
			if o["OLLAMA_CONTEXT_LENGTH"] != c.ollama || o["OLLAMA_FLASH_ATTENTION"] != "1" || o["OLLAMA_KV_CACHE_TYPE"] != "q8_0" {
				t.Errorf("ollama runs with OLLAMA_CONTEXT_LENGTH %q, OLLAMA_FLASH_ATTENTION %q, OLLAMA_KV_CACHE_TYPE %q; want %s, 1, q8_0",
					o["OLLAMA_CONTEXT_LENGTH"], o["OLLAMA_FLASH_ATTENTION"], o["OLLAMA_KV_CACHE_TYPE"], c.ollama)
			}
			for _, name := range []string{"longhaul-api", "longhaul-worker", "longhaul-setup"} {
				got := composetest.Env(p.Services[name])["LONGHAUL_LLM_CONTEXT"]
				if got != c.model {
					t.Errorf("%s: LONGHAUL_LLM_CONTEXT %q, want %q", name, got, c.model)
				}
				if _, err := window.ParseSettings(got); err != nil {
					t.Errorf("%s: %v", name, err)
				}
			}
			// The dev profile talks to the Docker host's Ollama, whose
			// window the stack does not set: it asks.
			if got, ok := composetest.Env(p.Services["longhaul-dev"])["LONGHAUL_LLM_CONTEXT"]; ok {
				t.Errorf("longhaul-dev: LONGHAUL_LLM_CONTEXT %q, want it unset", got)
			}
		})
	}
}

// TestComposeWindowFitsAgents: the stack's default window holds each
// shipped agent's first model call (its file as the system prompt and
// every built-in tool, as window.Request counts them, with the
// activities' 1/16 margin) and two fetched pages of
// LONGHAUL_MAX_TOOL_CHARS (16,000 characters), with 1,024 tokens left for
// the answer: the research headroom docker-compose.yml promises (older
// pages beyond that are compacted).
func TestComposeWindowFitsAgents(t *testing.T) {
	root := proctest.RepoRoot(t)
	ctx := composetest.Env(composetest.Load(t, secretEnv(t)).Services["ollama"])["OLLAMA_CONTEXT_LENGTH"]
	settings, err := window.ParseSettings("m=" + ctx)
	if err != nil {
		t.Fatal(err)
	}
	win := settings["m"]

	tools := tooltest.Builtin(t)
	page, err := os.ReadFile(filepath.Join(root, "docs", "deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	for len(page) < 16000 {
		page = append(page, page...)
	}
	pageTokens := window.Text(string(page[:16000]))

	for _, agent := range []string{"assistant", "researcher", "media-agent"} {
		system, err := os.ReadFile(filepath.Join(root, "skills", "builtin", agent+".md"))
		if err != nil {
			t.Fatal(err)
		}
		first := window.Request(openai.ChatCompletionRequest{Tools: tools, Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleSystem, Content: string(system)},
			{Role: openai.ChatMessageRoleUser, Content: "Find what the 2026 reports say about context windows and compare them."},
		}})
		need := (first+2*pageTokens)*17/16 + 1024
		t.Logf("%s: first call %d tokens, a 16,000-character page %d; with two pages and the answer %d of %d", agent, first, pageTokens, need, win)
		if need > win {
			t.Errorf("%s needs %d tokens for its first call, two pages and an answer; the stack's window is %d", agent, need, win)
		}
	}
}
