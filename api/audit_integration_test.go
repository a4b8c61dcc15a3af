package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
	"time"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/internal/identity"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/internal/tools"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// auditSecret is the HTTP tool's credential: it must never reach a client.
const auditSecret = "sk-inventory-secret-42"

// auditOutput is what the inventory tool answers: longer than an audit
// result may be, shorter than a tool_output event keeps, and ending in a
// mark only the whole output has.
var auditOutput = "widget: 7 in stock\n" + strings.Repeat("ok ", 500) + "END-OF-OUTPUT"

// auditStack is a chat agent with one HTTP tool whose header carries a
// secret, served to two principals.
func auditStack(t *testing.T) (*testenv.Env, map[string]string, map[string]string) {
	t.Helper()
	inv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+auditSecret {
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, auditOutput)
	}))
	t.Cleanup(inv.Close)
	layer := fstest.MapFS{
		"inventory.md": {Data: []byte(`---
skill: inventory
description: Stock levels
tools: [stock_level]
http_tools:
  - name: stock_level
    description: How many of an item are in stock
    method: POST
    url: ${INV_URL}/stock
    headers: {Authorization: "Bearer ${INV_KEY}"}
    parameters: {type: object, properties: {item: {type: string}}, required: [item]}
---
Look stock levels up with stock_level.`)},
		"clerk.md": {Data: []byte("---\nagent: clerk\ndescription: Answers stock questions\nmode: chat\nskills: [inventory]\n---\nYou help.\n")},
	}
	env := testenv.Start(t, testenv.Options{
		Layers: []fs.FS{layer},
		Env:    map[string]string{"INV_URL": inv.URL, "INV_KEY": auditSecret},
		API:    api.Config{Keys: []identity.Key{{Name: "ann", Secret: "sk-ann"}, {Name: "bob", Secret: "sk-bob"}}},
	})
	// Every run: the tool, then the answer.
	env.Model.SetDefault(llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		msgs := r.Chat.Messages
		if last := msgs[len(msgs)-1]; last.Role == openai.ChatMessageRoleTool {
			return llmtest.Text("7 widgets in stock.")
		}
		return llmtest.ToolCalls(llmtest.ToolCall{ID: "call_stock", Name: "stock_level", Arguments: `{"item":"widget"}`})
	}))
	return env, map[string]string{"Authorization": "Bearer sk-ann"}, map[string]string{"Authorization": "Bearer sk-bob"}
}

// merged is h with more headers.
func merged(h map[string]string, more ...string) map[string]string {
	out := map[string]string{}
	for k, v := range h {
		out[k] = v
	}
	for i := 0; i+1 < len(more); i += 2 {
		out[more[i]] = more[i+1]
	}
	return out
}

// chatRaw posts a chat request and returns the response's body: the JSON
// of a completion, or the data frames of a stream.
func chatRaw(t *testing.T, env *testenv.Env, body chatBody, headers map[string]string) (*http.Response, []byte, []string) {
	t.Helper()
	resp := do(t, env, "POST", "/v1/chat/completions", body, headers)
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	if body["stream"] == true {
		return resp, nil, sseData(t, resp.Body)
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, raw, nil
}

// checkChatAudit checks the audit trail of a chat-mode run of the clerk.
func checkChatAudit(t *testing.T, env *testenv.Env, a *wire.Audit, run string, headers map[string]string) {
	t.Helper()
	if a == nil {
		t.Fatal("no longhaul object")
	}
	if a.RunID != run || a.Agent != "clerk" || a.Mode != "chat" || a.Status != "completed" || a.Error != "" {
		t.Errorf("audit = run %q agent %q mode %q status %q error %q; want run %q, clerk, chat, completed", a.RunID, a.Agent, a.Mode, a.Status, a.Error, run)
	}
	if a.Plans == nil || len(a.Plans) != 0 || a.Steps == nil || len(a.Steps) != 0 {
		t.Errorf("a chat run has plans %v and steps %v; want [] and []", a.Plans, a.Steps)
	}
	if len(a.ToolCalls) != 1 {
		t.Fatalf("tool calls = %+v, want one", a.ToolCalls)
	}
	c := a.ToolCalls[0]
	if c.ID != "call_stock" || c.Name != "stock_level" || c.Arguments != `{"item":"widget"}` || c.Status != wire.AuditCallOK || c.StepID != "" {
		t.Errorf("tool call = %+v", c)
	}
	if n := utf8.RuneCountInString(c.Result); n != 1000 || !strings.HasPrefix(auditOutput, c.Result) || !c.Truncated || !a.Truncated {
		t.Errorf("result has %d runes (truncated %v, audit truncated %v); want the first 1000 of the output, marked", n, c.Truncated, a.Truncated)
	}
	// The whole output is where output_url says: the run's event stream
	// from the call's tool_output event.
	if !strings.HasPrefix(c.OutputURL, a.EventsURL+"?after=") {
		t.Fatalf("output_url = %q, want the events stream at the output", c.OutputURL)
	}
	resp := do(t, env, "GET", c.OutputURL, nil, headers)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d", c.OutputURL, resp.StatusCode)
	}
	br := bufio.NewReader(resp.Body)
	first, err := br.ReadString('\n')
	for err == nil && !strings.HasPrefix(first, "data: ") {
		first, err = br.ReadString('\n')
	}
	var e longhaul.Event
	var out longhaul.ToolOutputData
	if json.Unmarshal([]byte(strings.TrimPrefix(first, "data: ")), &e) != nil || e.Decode(&out) != nil || out.Output != auditOutput {
		t.Errorf("the first event at output_url is %q; want the whole tool output", first)
	}
}

// TestAuditChat: a chat-mode run answers a plain client as before, and a
// client that asks (the body's longhaul.audit, or X-Longhaul-Audit) gets the
// longhaul object beside the answer — non-streamed in the completion,
// streamed on a last chunk of its own before [DONE] — with its tool call,
// the arguments the model sent and a bounded result; never the tool's
// secret header. Only the run's owner reads it.
func TestAuditChat(t *testing.T) {
	env, ann, bob := auditStack(t)
	question := chatBody{"model": "clerk", "messages": userMsg("How many widgets?")}
	with := func(more map[string]any) chatBody {
		b := chatBody{}
		for k, v := range question {
			b[k] = v
		}
		for k, v := range more {
			b[k] = v
		}
		return b
	}

	t.Run("plain completion", func(t *testing.T) {
		start := time.Now()
		_, raw, _ := chatRaw(t, env, question, ann)
		t.Logf("unasked: %d bytes in %v", len(raw), time.Since(start))
		var top map[string]json.RawMessage
		if err := json.Unmarshal(raw, &top); err != nil {
			t.Fatal(err)
		}
		if _, ok := top["longhaul"]; ok {
			t.Errorf("an unasked completion carries longhaul: %s", raw)
		}
		for k := range top {
			if !strings.Contains(" id object created model choices usage ", " "+k+" ") {
				t.Errorf("an unasked completion has the field %q", k)
			}
		}
	})
	t.Run("header off", func(t *testing.T) {
		_, raw, _ := chatRaw(t, env, question, merged(ann, api.HeaderAudit, "0"))
		if strings.Contains(string(raw), `"longhaul"`) {
			t.Errorf("X-Longhaul-Audit: 0 got the audit: %s", raw)
		}
	})
	t.Run("plain stream", func(t *testing.T) {
		_, _, frames := chatRaw(t, env, with(map[string]any{"stream": true, "stream_options": map[string]any{"include_usage": true}}), ann)
		for _, f := range frames {
			if strings.Contains(f, `"longhaul"`) {
				t.Errorf("an unasked stream carries longhaul: %s", f)
			}
		}
		if got := chunkText(t, frames); got != "7 widgets in stock." {
			t.Errorf("answer = %q", got)
		}
	})
	t.Run("asked in the body", func(t *testing.T) {
		start := time.Now()
		resp, raw, _ := chatRaw(t, env, with(map[string]any{"longhaul": map[string]any{"audit": true}}), ann)
		t.Logf("asked: %d bytes in %v", len(raw), time.Since(start))
		if strings.Contains(string(raw), auditSecret) {
			t.Fatalf("the completion holds the tool's secret: %s", raw)
		}
		var cc wire.ChatCompletion
		if err := json.Unmarshal(raw, &cc); err != nil {
			t.Fatal(err)
		}
		if cc.Choices[0].Message.Content != "7 widgets in stock." {
			t.Errorf("answer = %q", cc.Choices[0].Message.Content)
		}
		run := resp.Header.Get(api.HeaderRunID)
		checkChatAudit(t, env, cc.Longhaul, run, ann)

		// GET /v1/runs/{id}/audit is the same object, for its owner only.
		r := do(t, env, "GET", "/v1/runs/"+run+"/audit", nil, ann)
		got := decode[wire.Audit](t, r)
		checkChatAudit(t, env, &got, run, ann)
		if r := do(t, env, "GET", "/v1/runs/"+run+"/audit", nil, bob); r.StatusCode != 404 {
			t.Errorf("another principal reads the audit: %d", r.StatusCode)
		}
		if r := do(t, env, "GET", got.ToolCalls[0].OutputURL, nil, bob); r.StatusCode != 404 {
			t.Errorf("another principal reads the output: %d", r.StatusCode)
		}
	})
	t.Run("asked by header, streamed", func(t *testing.T) {
		resp, _, frames := chatRaw(t, env, with(map[string]any{"stream": true, "stream_options": map[string]any{"include_usage": true}}), merged(ann, api.HeaderAudit, "1"))
		if got := chunkText(t, frames); got != "7 widgets in stock." {
			t.Errorf("answer = %q", got)
		}
		// The last frame before [DONE] carries it, with no choices; no
		// other frame does.
		last := frames[len(frames)-2]
		for _, f := range frames[:len(frames)-2] {
			if strings.Contains(f, `"longhaul"`) {
				t.Errorf("a frame before the last carries longhaul: %s", f)
			}
		}
		if strings.Contains(strings.Join(frames, "\n"), auditSecret) {
			t.Fatal("the stream holds the tool's secret")
		}
		var c wire.ChatChunk
		if err := json.Unmarshal([]byte(last), &c); err != nil {
			t.Fatal(err)
		}
		if c.Object != "chat.completion.chunk" || c.Choices == nil || len(c.Choices) != 0 || c.Usage != nil {
			t.Errorf("audit chunk = %s; want a chunk without choices or usage", last)
		}
		checkChatAudit(t, env, c.Longhaul, resp.Header.Get(api.HeaderRunID), ann)
	})
	t.Run("bad switch", func(t *testing.T) {
		resp := do(t, env, "POST", "/v1/chat/completions", with(map[string]any{"longhaul": "audit"}), ann)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 400 || !strings.Contains(string(body), `longhaul`) || !strings.Contains(string(body), `"invalid_request_error"`) {
			t.Errorf("longhaul: \"audit\" got %d %s; want a 400 naming the field", resp.StatusCode, body)
		}
	})
}

// lookup is a tool a plan step runs.
type lookup struct{}

func (lookup) Name() string        { return "lookup" }
func (lookup) Description() string { return "Looks a fact up" }
func (lookup) Parameters() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"topic":{"type":"string"}},"required":["topic"]}`)
}
func (lookup) Call(_ context.Context, c tools.Call) (tools.Result, error) {
	return tools.Result{Content: "Pelicans: bills up to 47 cm."}, nil
}

// TestAuditAgentic: an agentic run's audit trail holds the plan with its
// revisions, each step's outcome and the tool call of the tool step, placed
// in that step — non-streamed and streamed alike — and is the plan GET
// /v1/runs/{id} shows.
func TestAuditAgentic(t *testing.T) {
	layer := fstest.MapFS{
		"facts.md":   {Data: []byte("---\nskill: facts\ndescription: Looks facts up\ntools: [lookup]\n---\nUse lookup.\n")},
		"planner.md": {Data: []byte("---\nagent: planner\ndescription: Plans\nmode: agentic\nskills: [facts]\n---\nYou plan.\n")},
	}
	env := testenv.Start(t, testenv.Options{Layers: []fs.FS{layer}, Tools: []tools.Tool{lookup{}}})
	scriptPlan(env, "Say how long a pelican's bill is", []map[string]any{
		{"kind": "tool", "target": "lookup", "title": "Look pelicans up", "arguments": map[string]any{"topic": "pelican"}, "success": "a length"},
		{"kind": "completion", "title": "Answer", "input": "the length", "success": "answered"},
	}, "fine")
	env.Model.SetDefault(llmtest.Text("Up to 47 cm."))

	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("unasked/stream=%v", stream), func(t *testing.T) {
			body := chatBody{"model": "planner", "messages": userMsg("How long is a pelican's bill?"), "stream": stream}
			_, raw, frames := chatRaw(t, env, body, nil)
			if all := string(raw) + strings.Join(frames, "\n"); strings.Contains(all, `"longhaul"`) || !strings.Contains(all, "47 cm") {
				t.Errorf("an unasked agentic answer: %s", all)
			}
		})
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			body := chatBody{"model": "planner", "messages": userMsg("How long is a pelican's bill?"), "longhaul": map[string]any{"audit": true}}
			if stream {
				body["stream"] = true
			}
			resp, raw, frames := chatRaw(t, env, body, nil)
			var a *wire.Audit
			if stream {
				var c wire.ChatChunk
				if err := json.Unmarshal([]byte(frames[len(frames)-2]), &c); err != nil {
					t.Fatal(err)
				}
				a = c.Longhaul
			} else {
				var cc wire.ChatCompletion
				if err := json.Unmarshal(raw, &cc); err != nil {
					t.Fatal(err)
				}
				a = cc.Longhaul
			}
			if a == nil {
				t.Fatal("no longhaul object")
			}
			run := resp.Header.Get(api.HeaderRunID)
			if a.RunID != run || a.Mode != "agentic" || a.Status != "completed" {
				t.Errorf("audit = run %q mode %q status %q", a.RunID, a.Mode, a.Status)
			}
			if len(a.Plans) != 1 || a.Plans[0].Revision != 1 || a.Plans[0].Status != "done" || len(a.Steps) != 2 {
				raw, _ := json.MarshalIndent(a, "", " ")
				t.Fatalf("plans and steps:\n%s", raw)
			}
			s := a.Steps[0]
			if s.Kind != "tool" || s.Target != "lookup" || s.Status != longhaul.StepDone || !strings.Contains(s.Result, "47 cm") || a.Steps[1].Status != longhaul.StepDone {
				t.Errorf("steps = %+v", a.Steps)
			}
			if len(a.ToolCalls) != 1 {
				t.Fatalf("tool calls = %+v, want one", a.ToolCalls)
			}
			c := a.ToolCalls[0]
			if c.Name != "lookup" || c.StepID != s.ID || c.Status != wire.AuditCallOK || c.Result != "Pelicans: bills up to 47 cm." || c.Truncated || c.OutputURL != "" {
				t.Errorf("tool call = %+v (step %s)", c, s.ID)
			}
			var args map[string]any
			if json.Unmarshal([]byte(c.Arguments), &args) != nil || args["topic"] != "pelican" {
				t.Errorf("arguments = %q", c.Arguments)
			}
			if len(a.Reviews) == 0 {
				t.Error("no reviews")
			}
			// The same plan GET /v1/runs/{id} shows.
			r := decode[wire.Run](t, do(t, env, "GET", "/v1/runs/"+run, nil, nil))
			gotPlan, _ := json.Marshal(r.Plans)
			wantPlan, _ := json.Marshal(a.Plans)
			if string(gotPlan) != string(wantPlan) {
				t.Errorf("the audit's plans differ from GET /v1/runs/{id}'s:\n%s\n%s", wantPlan, gotPlan)
			}
		})
	}
}
