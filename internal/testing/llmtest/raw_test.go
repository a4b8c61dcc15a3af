package llmtest_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/ssetest"
)

// readFrames reads a whole SSE body and returns the payloads of its data
// frames, checking that every frame is a single "data: " line followed by a
// blank line.
func readFrames(t *testing.T, resp *http.Response) []string {
	t.Helper()
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status = %d", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type = %q, want text/event-stream", ct)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	events, err := ssetest.ReadAll(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("malformed SSE body %q: %v", body, err)
	}
	var out []string
	var want strings.Builder
	for _, e := range events {
		out = append(out, e.Data)
		want.WriteString("data: " + e.Data + "\n\n")
	}
	if string(body) != want.String() {
		t.Fatalf("SSE body %q: want single data lines, each followed by a blank line", body)
	}
	return out
}

// decodeObject decodes a frame payload into a generic JSON object, failing
// the test if it is not valid JSON.
func decodeObject(t *testing.T, payload string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(payload), &m); err != nil {
		t.Fatalf("frame %q is not valid JSON: %v", payload, err)
	}
	return m
}

func TestRawSSEFrames(t *testing.T) {
	for _, includeUsage := range []bool{false, true} {
		name := "without usage"
		if includeUsage {
			name = "with include_usage"
		}
		t.Run(name, func(t *testing.T) {
			srv := llmtest.New(t)
			srv.Enqueue(llmtest.Text("alpha beta gamma"))
			body := `{"model":"raw-model","stream":true,"messages":[{"role":"user","content":"x"}]}`
			if includeUsage {
				body = `{"model":"raw-model","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"x"}]}`
			}
			resp, err := rawPost(t, srv.URL()+"/chat/completions", "", body)
			if err != nil {
				t.Fatal(err)
			}
			frames := readFrames(t, resp)

			if last := frames[len(frames)-1]; last != "[DONE]" {
				t.Fatalf("last frame = %q, want [DONE]", last)
			}
			frames = frames[:len(frames)-1]
			var objs []map[string]any
			for _, f := range frames {
				if f == "[DONE]" {
					t.Fatal("[DONE] before the end of the stream")
				}
				objs = append(objs, decodeObject(t, f))
			}

			if includeUsage {
				u := objs[len(objs)-1]
				if choices, ok := u["choices"].([]any); !ok || len(choices) != 0 {
					t.Errorf("usage frame choices = %#v, want []", u["choices"])
				}
				want := map[string]any{"prompt_tokens": 1.0, "completion_tokens": 3.0, "total_tokens": 4.0}
				if d := diff(want, u["usage"]); d != "" {
					t.Errorf("usage:\n%s", d)
				}
				objs = objs[:len(objs)-1]
			}

			// role frame + 3 words + finish frame.
			if len(objs) != 5 {
				t.Fatalf("got %d chunk frames, want 5: %v", len(objs), frames)
			}
			var text strings.Builder
			for i, o := range objs {
				if o["object"] != "chat.completion.chunk" || o["model"] != "raw-model" || o["id"] != objs[0]["id"] {
					t.Errorf("frame %d envelope: object %v model %v id %v", i, o["object"], o["model"], o["id"])
				}
				if _, ok := o["created"].(float64); !ok {
					t.Errorf("frame %d has no numeric created", i)
				}
				if u, ok := o["usage"]; ok != includeUsage || u != nil {
					t.Errorf("frame %d usage = %v (present %v); want null exactly when include_usage", i, u, ok)
				}
				choices := o["choices"].([]any)
				if len(choices) != 1 {
					t.Fatalf("frame %d has %d choices", i, len(choices))
				}
				c := choices[0].(map[string]any)
				if c["index"] != 0.0 {
					t.Errorf("frame %d choice index = %v", i, c["index"])
				}
				fr, ok := c["finish_reason"]
				if !ok {
					t.Errorf("frame %d lacks finish_reason (must be null or a reason)", i)
				}
				d := c["delta"].(map[string]any)
				switch {
				case i == 0:
					if d["role"] != "assistant" || fr != nil {
						t.Errorf("first frame delta = %v finish_reason = %v, want role assistant and null", d, fr)
					}
				case i == len(objs)-1:
					if len(d) != 0 || fr != "stop" {
						t.Errorf("finish frame delta = %v finish_reason = %v, want {} and stop", d, fr)
					}
				default:
					if _, has := d["role"]; has || fr != nil {
						t.Errorf("frame %d delta = %v finish_reason = %v, want content only", i, d, fr)
					}
				}
				if s, ok := d["content"].(string); ok {
					text.WriteString(s)
				}
			}
			if text.String() != "alpha beta gamma" {
				t.Errorf("content = %q", text.String())
			}
		})
	}
}

func TestRawToolCallFrames(t *testing.T) {
	srv := llmtest.New(t)
	srv.Enqueue(llmtest.ToolCalls(
		llmtest.ToolCall{ID: "call_a", Name: "lookup", Arguments: `{"query":"longhaul"}`},
		llmtest.ToolCall{ID: "call_b", Name: "fetch", Arguments: `{"url":"https://example.com"}`},
	).With(llmtest.ChunkSize(5)))
	resp, err := rawPost(t, srv.URL()+"/chat/completions", "", `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	frames := readFrames(t, resp)
	if frames[len(frames)-1] != "[DONE]" {
		t.Fatalf("last frame = %q", frames[len(frames)-1])
	}

	type seen struct{ headers, pieces int }
	calls := map[float64]*seen{}
	var finish any
	for i, f := range frames[:len(frames)-1] {
		c := decodeObject(t, f)["choices"].([]any)[0].(map[string]any)
		d := c["delta"].(map[string]any)
		if c["finish_reason"] != nil {
			finish = c["finish_reason"]
		}
		tcs, ok := d["tool_calls"].([]any)
		if !ok {
			continue
		}
		if len(tcs) != 1 {
			t.Fatalf("frame %d carries %d tool-call deltas, want 1", i, len(tcs))
		}
		tc := tcs[0].(map[string]any)
		idx, ok := tc["index"].(float64)
		if !ok {
			t.Fatalf("frame %d tool-call delta without index: %v", i, tc)
		}
		if calls[idx] == nil {
			calls[idx] = &seen{}
		}
		fn := tc["function"].(map[string]any)
		if _, first := tc["id"]; first {
			if calls[idx].headers > 0 || calls[idx].pieces > 0 {
				t.Errorf("frame %d: id for call %v after its first delta", i, idx)
			}
			if tc["type"] != "function" || fn["name"] == nil || fn["arguments"] != "" {
				t.Errorf("frame %d: first delta of call %v = %v, want type, name and empty arguments", i, idx, tc)
			}
			calls[idx].headers++
			continue
		}
		if len(tc) != 2 || len(fn) != 1 || fn["arguments"] == nil {
			t.Errorf("frame %d: argument delta = %v, want only index and function.arguments", i, tc)
		}
		calls[idx].pieces++
	}
	if len(calls) != 2 {
		t.Fatalf("saw calls %v, want indexes 0 and 1", calls)
	}
	for idx, s := range calls {
		if s.headers != 1 || s.pieces < 2 {
			t.Errorf("call %v: %d header deltas and %d argument deltas, want 1 and several", idx, s.headers, s.pieces)
		}
	}
	if finish != "tool_calls" {
		t.Errorf("finish_reason = %v, want tool_calls", finish)
	}
}

func TestRawNonStreamShape(t *testing.T) {
	srv := llmtest.New(t)
	srv.Enqueue(llmtest.ToolCalls(llmtest.ToolCall{ID: "call_x", Name: "f", Arguments: "{}"}))
	resp, err := rawPost(t, srv.URL()+"/chat/completions", "", `{"model":"m","messages":[{"role":"user","content":"x"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	o := decodeObject(t, string(b))
	msg := o["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	if c, ok := msg["content"]; !ok || c != nil {
		t.Errorf("content = %v (present %v), want null for a tool-call-only message", c, ok)
	}
	want := []any{map[string]any{"id": "call_x", "type": "function", "function": map[string]any{"name": "f", "arguments": "{}"}}}
	if d := diff(want, msg["tool_calls"]); d != "" {
		t.Errorf("tool_calls:\n%s", d)
	}
	if o["object"] != "chat.completion" || o["usage"] == nil {
		t.Errorf("object %v usage %v", o["object"], o["usage"])
	}
}

func TestRawMalformedFrame(t *testing.T) {
	srv := llmtest.New(t)
	srv.Enqueue(llmtest.Text("one two", llmtest.MalformedChunk()))
	resp, err := rawPost(t, srv.URL()+"/chat/completions", "", `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	frames := readFrames(t, resp)
	var invalid []int
	for i, f := range frames {
		if f != "[DONE]" && !json.Valid([]byte(f)) {
			invalid = append(invalid, i)
		}
	}
	// role, "one", broken, " two", finish, [DONE]
	if d := diff([]int{2}, invalid); d != "" || len(frames) != 6 {
		t.Errorf("invalid frames at %v of %d frames, want only frame 2 of 6:\n%s", invalid, len(frames), d)
	}
}
