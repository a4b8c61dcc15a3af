package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	openai "github.com/sashabaranov/go-openai"

	"github.com/longhaul-dev/longhaul/internal/mcp"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/proctest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/internal/tools"
)

// mcpServer returns the entry script of a reference MCP server installed by
// make test-deps.
func mcpServer(t *testing.T, pkg string) string {
	t.Helper()
	p := filepath.Join(proctest.RepoRoot(t), "test", "mcp", "node_modules", "@modelcontextprotocol", pkg, "dist", "index.js")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is not installed (%v): run make test-deps", pkg, err)
	}
	return p
}

// orders is an HTTP service with a side effect per Idempotency-Key. Its first
// answer to each key is lost (a 503 after the effect), so the caller must
// retry, and the retry must not repeat the effect.
type orders struct {
	mu       sync.Mutex
	requests int
	effects  map[string]int
	missing  int
}

func (o *orders) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.requests++
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		o.missing++
		http.Error(w, `{"message":"Idempotency-Key required"}`, http.StatusBadRequest)
		return
	}
	var body struct {
		Item string `json:"item"`
	}
	_ = json.NewDecoder(r.Body).Decode(&body)
	if _, seen := o.effects[key]; !seen {
		o.effects[key] = 1
		// The order is placed, but the answer is lost.
		http.Error(w, "upstream hiccup", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"order":"ord-%d","item":%q,"status":"placed"}`, len(o.effects), body.Item)
}

// TestToolsThroughAPI is the tools issue's acceptance run: an agent whose
// skills list a tool of the everything MCP server, a tool of the filesystem
// MCP server and a declared HTTP tool answers through the OpenAI API with
// all three results, and the HTTP tool's forced retry has one effect.
func TestToolsThroughAPI(t *testing.T) {
	shop := &orders{effects: map[string]int{}}
	srv := httptest.NewServer(shop)
	t.Cleanup(srv.Close)
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("The launch code is PELICAN."), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := mcp.ParseConfig(fmt.Appendf(nil, `{"mcpServers": {
		"everything": {"command": "node", "args": [%q, "stdio"]},
		"files": {"command": "node", "args": [%q, %q]}
	}}`, mcpServer(t, "server-everything"), mcpServer(t, "server-filesystem"), root))
	if err != nil {
		t.Fatal(err)
	}
	layer := fstest.MapFS{
		"ops.md": {Data: []byte(`---
skill: ops
description: Adds numbers, reads notes and places orders
tools: [everything__get-sum, files__read_text_file, place_order]
http_tools:
  - name: place_order
    description: Place an order for an item
    method: POST
    url: ${SHOP_URL}/orders
    headers: {Authorization: "Bearer ${SHOP_KEY}"}
    parameters: {type: object, properties: {item: {type: string}}, required: [item]}
---
Use the tools.`)},
		"opsbot.md": {Data: []byte("---\nagent: opsbot\ndescription: Operations\nmode: chat\nskills: [ops]\n---\nYou run operations.\n")},
	}
	env := testenv.Start(t, testenv.Options{
		Layers: []fs.FS{layer},
		MCP:    &cfg,
		Env:    map[string]string{"SHOP_URL": srv.URL, "SHOP_KEY": "sk-shop-secret"},
	})
	for _, name := range []string{"everything__get-sum", "files__read_text_file", "place_order"} {
		if !env.Tools.Has(name) {
			t.Fatalf("tool %s is not registered (have %v)", name, env.Tools.Names())
		}
	}
	env.Model.Enqueue(
		llmtest.ToolCalls(
			llmtest.ToolCall{ID: "c1", Name: "everything__get-sum", Arguments: `{"a":2,"b":40}`},
			llmtest.ToolCall{ID: "c2", Name: "files__read_text_file", Arguments: fmt.Sprintf(`{"path":%q}`, filepath.Join(root, "notes.txt"))},
			llmtest.ToolCall{ID: "c3", Name: "place_order", Arguments: `{"item":"book"}`},
		),
		llmtest.Func(func(r llmtest.Request) llmtest.Reply {
			results := map[string]string{}
			for _, m := range r.ToolResults() {
				results[m.ToolCallID] = m.Content
			}
			return llmtest.Text(fmt.Sprintf("sum: %s | notes: %s | order: %s", results["c1"], results["c2"], results["c3"]))
		}),
	)
	resp := do(t, env, "POST", "/v1/chat/completions", chatBody{"model": "opsbot", "messages": userMsg("do it all")}, nil)
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	out := decode[openai.ChatCompletionResponse](t, resp)
	answer := out.Choices[0].Message.Content
	for _, want := range []string{"The sum of 2 and 40 is 42", "PELICAN", `"order": "ord-1"`} {
		if !strings.Contains(answer, want) {
			t.Errorf("answer %q lacks %q", answer, want)
		}
	}
	if strings.Contains(answer, "sk-shop-secret") {
		t.Errorf("answer leaks the HTTP tool's secret: %q", answer)
	}
	shop.mu.Lock()
	defer shop.mu.Unlock()
	if len(shop.effects) != 1 || shop.requests != 2 || shop.missing != 0 {
		t.Errorf("shop saw %d requests, %d keys without Idempotency-Key and %d distinct orders; want 2 requests (one retry), 0, 1", shop.requests, shop.missing, len(shop.effects))
	}
	// The run's third tool call: c1 and c2 came first.
	want := resp.Header.Get("X-Longhaul-Run-Id") + "/call-3"
	for key := range shop.effects {
		if key != want {
			t.Errorf("Idempotency-Key = %q, want %q (run id / the call's number in the run)", key, want)
		}
	}
}

// bigPage is a tool whose output is far longer than the model may read.
type bigPage struct{}

func (bigPage) Name() string                { return "big_page" }
func (bigPage) Description() string         { return "Returns a very long page" }
func (bigPage) Parameters() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (bigPage) Call(context.Context, tools.Call) (tools.Result, error) {
	return tools.Result{Content: strings.Repeat("lorem ipsum ", 5000) + "THE-END-MARKER"}, nil
}

// TestBigOutputStaysOutOfHistory checks the claim check: the model reads an
// excerpt, the whole output is in the store and readable through the runs
// API by the run's user only, and workflow history holds no more than the
// excerpt.
func TestBigOutputStaysOutOfHistory(t *testing.T) {
	layer := fstest.MapFS{
		"big.md":    {Data: []byte("---\nskill: big\ndescription: Big pages\ntools: [big_page]\n---\nRead big pages.\n")},
		"reader.md": {Data: []byte("---\nagent: reader\ndescription: Reads\nmode: chat\nskills: [big]\n---\nYou read.\n")},
	}
	env := testenv.Start(t, testenv.Options{Layers: []fs.FS{layer}, Tools: []tools.Tool{bigPage{}}, MaxToolOutput: 1000})
	var toolMsg string
	env.Model.Enqueue(
		llmtest.ToolCalls(llmtest.ToolCall{ID: "p1", Name: "big_page", Arguments: `{}`}),
		llmtest.Func(func(r llmtest.Request) llmtest.Reply {
			for _, m := range r.ToolResults() {
				toolMsg = m.Content
			}
			return llmtest.Text("read it")
		}),
	)
	resp := do(t, env, "POST", "/v1/chat/completions", chatBody{"model": "reader", "messages": userMsg("read")}, owui)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	runID := resp.Header.Get("X-Longhaul-Run-Id")
	if strings.Contains(toolMsg, "THE-END-MARKER") || len(toolMsg) > 1300 {
		t.Fatalf("the model read %d characters, including the end: the output was not cut", len(toolMsg))
	}
	ref := regexp.MustCompile(`sha256:[0-9a-f]+`).FindString(toolMsg)
	if ref == "" {
		t.Fatalf("the excerpt names no stored output: %q", toolMsg[len(toolMsg)-200:])
	}

	// History holds the excerpt, never the whole page.
	var size int
	iter := env.Client.GetWorkflowHistory(context.Background(), runID, "", false, 0)
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(ev)
		if strings.Contains(string(raw), "THE-END-MARKER") {
			t.Fatalf("history event %d (%s) holds the whole output", ev.GetEventId(), ev.GetEventType())
		}
		size += len(raw)
	}
	if size > 40000 {
		t.Errorf("history is %d bytes; the page alone is 60000", size)
	}

	get := do(t, env, "GET", "/v1/runs/"+runID+"/outputs/"+ref, nil, owui)
	body, _ := io.ReadAll(get.Body)
	if get.StatusCode != 200 || !strings.HasSuffix(string(body), "THE-END-MARKER") || len(body) != 60014 {
		t.Fatalf("GET stored output: status %d, %d bytes", get.StatusCode, len(body))
	}
	other := map[string]string{"X-OpenWebUI-User-Id": "u2"}
	for name, path := range map[string]string{
		"another user": "/v1/runs/" + runID + "/outputs/" + ref,
		"another run":  "/v1/runs/no-such-run/outputs/" + ref,
		"unknown ref":  "/v1/runs/" + runID + "/outputs/sha256:00",
	} {
		h := owui
		if name == "another user" {
			h = other
		}
		if r := do(t, env, "GET", path, nil, h); r.StatusCode != 404 {
			t.Errorf("%s: status %d, want 404", name, r.StatusCode)
		}
	}
}
