// Package conformance runs the real OpenAI client libraries against
// Longhaul: openai-node, the OpenAI Agents SDK, the Vercel AI SDK and
// LangChain JS, pinned by package-lock.json here and installed by make
// test-deps. Each scenario is a small node script doing what the client's
// own tool-calling or structured-output example does, pointed at a whole
// Longhaul stack (the embedded Temporal and NATS, a worker, the API) whose
// one fake is the scripted model. The script prints what the client saw as
// JSON; the test checks it, and checks what reached the model: the client's
// tools offered beside the agent's own server-side tool, the tool results
// the client sent, the response_format it asked for.
package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/internal/identity"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/proctest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
)

// model is the agent the clients talk to: chat mode, with one server-side
// tool, stock_level, an HTTP tool the clients never see.
const model = "conformance"

// apiKey is the stack's one API key.
const apiKey = "sk-conformance"

// agentFiles declares the agent and its skill.
var agentFiles = fstest.MapFS{
	"stock.md": {Data: []byte(`---
skill: stock
description: Stock levels
tools: [stock_level]
http_tools:
  - name: stock_level
    description: How many of an item are in stock
    method: POST
    url: ${STOCK_URL}/stock
    parameters: {type: object, properties: {item: {type: string}}, required: [item]}
---
Look stock levels up with stock_level.`)},
	"conformance.md": {Data: []byte("---\nagent: conformance\ndescription: The conformance suite's agent\nmode: chat\nskills: [stock, documents]\n---\nYou help.\n")},
}

// stack is the Longhaul the scripts talk to and the stock server behind its
// server-side tool.
type stack struct {
	env *testenv.Env
	// stockCalls counts the calls of the server-side tool.
	stockCalls atomic.Int32
}

func startStack(t *testing.T) *stack {
	t.Helper()
	s := &stack{}
	stock := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.stockCalls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"item":"widget","count":7}`))
	}))
	t.Cleanup(stock.Close)
	s.env = testenv.Start(t, testenv.Options{
		Layers: []fs.FS{agentFiles},
		Env:    map[string]string{"STOCK_URL": stock.URL},
		API: api.Config{
			Keys: []identity.Key{{Name: "conformance", Secret: apiKey}},
			// A non-streaming answer waits for the whole run.
			RequestTimeout: 3 * time.Minute,
		},
	})
	return s
}

// run runs a node script against the stack with extra environment and
// decodes the JSON it prints into out. It returns the model requests the
// script caused.
func (s *stack) run(t *testing.T, script string, env map[string]string, out any) []llmtest.Request {
	t.Helper()
	before := len(s.env.Model.Requests())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script)
	cmd.WaitDelay = 10 * time.Second
	cmd.Env = scriptEnv(map[string]string{
		"OPENAI_BASE_URL": s.env.URL + "/v1",
		"OPENAI_API_KEY":  apiKey,
		"LONGHAUL_MODEL":  model,
		// The Agents SDK's default model, and its traces kept at home.
		"OPENAI_DEFAULT_MODEL":          model,
		"OPENAI_AGENTS_DISABLE_TRACING": "1",
	}, env)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node %s: %v\nstdout:\n%s\nstderr:\n%s\nmodel requests:\n%s", script, err, stdout.String(), stderr.String(),
			describe(s.env.Model.Requests()[before:]))
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		t.Fatalf("node %s printed %q: %v\nstderr:\n%s", script, stdout.String(), err, stderr.String())
	}
	if err := s.env.Model.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if n := s.env.Model.Pending(); n != 0 {
		t.Errorf("%d scripted replies were never asked for", n)
	}
	return s.env.Model.Requests()[before:]
}

// scriptEnv is the process environment without the caller's own OpenAI
// settings, plus the settings given.
func scriptEnv(sets ...map[string]string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OPENAI_") && !strings.HasPrefix(kv, "LONGHAUL_") {
			out = append(out, kv)
		}
	}
	for _, set := range sets {
		for k, v := range set {
			out = append(out, k+"="+v)
		}
	}
	return out
}

// describe lists model requests for a failure message.
func describe(reqs []llmtest.Request) string {
	var b strings.Builder
	for _, r := range reqs {
		fmt.Fprintf(&b, "  #%d %s\n", r.N, r.Body)
	}
	return b.String()
}

// toolNames are the names of the tools offered in a model request.
func toolNames(r llmtest.Request) []string {
	var names []string
	for _, tl := range r.Chat.Tools {
		if tl.Function != nil {
			names = append(names, tl.Function.Name)
		}
	}
	slices.Sort(names)
	return names
}

// toolResults are the contents of a model request's tool messages.
func toolResults(r llmtest.Request) []string {
	var out []string
	for _, m := range r.Chat.Messages {
		if m.Role == "tool" {
			out = append(out, llmtest.MessageText(m))
		}
	}
	return out
}

// offered checks that every request offered the client's tool beside the
// agent's own.
func offered(t *testing.T, reqs []llmtest.Request, clientTool string) {
	t.Helper()
	want := []string{clientTool, "stock_level"}
	slices.Sort(want)
	for _, r := range reqs {
		if got := toolNames(r); !slices.Equal(got, want) {
			t.Errorf("model request %d offered %v, want %v", r.N, got, want)
		}
	}
}

// streams names the two ways every scenario runs.
var streams = []struct {
	name  string
	value string
}{{"not streamed", "0"}, {"streamed", "1"}}

func TestClients(t *testing.T) {
	proctest.NeedNode(t, "test/conformance", "openai")
	s := startStack(t)
	s.script()
	for _, st := range streams {
		t.Run("openai-node tools/"+st.name, func(t *testing.T) { s.openaiTools(t, st.value) })
		t.Run("openai-node parse/"+st.name, func(t *testing.T) { s.openaiParse(t, st.value) })
		t.Run("agents chat_completions/"+st.name, func(t *testing.T) { s.agents(t, "chat_completions", st.value) })
		t.Run("agents responses/"+st.name, func(t *testing.T) { s.agents(t, "responses", st.value) })
		t.Run("ai-sdk/"+st.name, func(t *testing.T) { s.aiSDK(t, st.value) })
		t.Run("langchain/"+st.name, func(t *testing.T) { s.langchain(t, st.value) })
	}
	t.Run("openai-node audit", s.openaiAudit)
	t.Run("documents", s.documents)
}
