package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/internal/identity"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/runsfake"
	"github.com/longhaul-dev/longhaul/internal/testing/ssetest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/internal/testing/webtest"
	"github.com/longhaul-dev/longhaul/internal/wire"
	"github.com/sashabaranov/go-openai"
)

// sseData reads an SSE body into its data payloads, in order, and checks
// every frame is well formed: one data line, a blank line after it, JSON or
// [DONE], and [DONE] last.
func sseData(t *testing.T, r io.Reader) []string {
	t.Helper()
	events, err := ssetest.ReadAll(r)
	if err != nil {
		t.Fatalf("read SSE: %v", err)
	}
	var frames []string
	for _, e := range events {
		if !slices.Equal(e.Fields, []string{"data"}) {
			t.Fatalf("frame %+v: want one data line", e)
		}
		if e.Data != ssetest.Done && !json.Valid([]byte(e.Data)) {
			t.Fatalf("frame is not JSON: %q", e.Data)
		}
		frames = append(frames, e.Data)
	}
	if len(frames) == 0 || frames[len(frames)-1] != ssetest.Done {
		t.Fatalf("stream does not end with [DONE]: %q", frames)
	}
	return frames
}

// chunkText concatenates the content deltas of chunk frames.
func chunkText(t *testing.T, frames []string) string {
	t.Helper()
	var b strings.Builder
	for _, f := range frames {
		var c wire.ChatChunk
		if f == "[DONE]" || json.Unmarshal([]byte(f), &c) != nil {
			continue
		}
		for _, ch := range c.Choices {
			b.WriteString(ch.Delta.Content)
		}
	}
	return b.String()
}

type chatBody map[string]any

// within is a context that ends after d, or when the test does.
func within(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func userMsg(s string) []map[string]string {
	return []map[string]string{{"role": "user", "content": s}}
}

func do(t *testing.T, env *testenv.Env, method, path string, body any, headers map[string]string) *http.Response {
	t.Helper()
	return doAt(t, env.URL, method, path, body, headers)
}

// doAt sends a request to the API at base.
func doAt(t *testing.T, base, method, path string, body any, headers map[string]string) *http.Response {
	t.Helper()
	req := webtest.NewRequest(method, base+path, body, headers)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// doWant is doAt that fails the test, with the answer's body, unless the
// answer has status want.
func doWant(t *testing.T, base, method, path string, body any, headers map[string]string, want int) *http.Response {
	t.Helper()
	resp := doAt(t, base, method, path, body, headers)
	if resp.StatusCode != want {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s %s = %d %s", method, path, resp.StatusCode, b)
	}
	return resp
}

func decode[T any](t *testing.T, resp *http.Response) T {
	t.Helper()
	var v T
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("decode: %v", err)
	}
	return v
}

var owui = map[string]string{
	"X-OpenWebUI-User-Id": "u1", "X-OpenWebUI-User-Email": "ann@example.com",
	"X-OpenWebUI-User-Name": "Ann", "X-OpenWebUI-User-Role": "user",
}

func withChat(h map[string]string, chat string) map[string]string {
	out := map[string]string{"X-OpenWebUI-Chat-Id": chat}
	for k, v := range h {
		out[k] = v
	}
	return out
}

func TestErrorStatuses(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Runs: runsfake.New(), API: api.Config{Keys: []identity.Key{{Name: "good", Secret: "sk-good"}}, MaxBodyBytes: 4096}})
	auth := map[string]string{"Authorization": "Bearer sk-good"}
	big := `{"model":"assistant","messages":[{"role":"user","content":"` + strings.Repeat("x", 5000) + `"}]}`
	tests := []struct {
		name    string
		method  string
		path    string
		body    any
		headers map[string]string
		status  int
		code    string
		message string
	}{
		{"no key", "GET", "/v1/models", nil, nil, 401, "invalid_api_key", "missing API key"},
		{"wrong key", "GET", "/v1/models", nil, map[string]string{"Authorization": "Bearer sk-bad"}, 401, "invalid_api_key", "invalid API key"},
		{"invalid JSON", "POST", "/v1/chat/completions", `{"model":`, auth, 400, "invalid_request", "invalid JSON body"},
		{"wrong type", "POST", "/v1/chat/completions", `{"model":3}`, auth, 400, "invalid_request", `field "model"`},
		{"no messages", "POST", "/v1/chat/completions", chatBody{"model": "assistant"}, auth, 400, "invalid_request", "messages: must not be empty"},
		{"unknown model", "POST", "/v1/chat/completions", chatBody{"model": "gpt-9", "messages": userMsg("hi")}, auth, 404, "model_not_found", `"gpt-9" does not exist`},
		{"too large", "POST", "/v1/chat/completions", big, auth, 413, "request_too_large", "LONGHAUL_MAX_BODY_BYTES"},
		{"unknown route", "GET", "/v1/nothing", nil, auth, 404, "not_found", "no route"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			webtest.WantCode(t, do(t, env, tt.method, tt.path, tt.body, tt.headers), tt.status, tt.code, tt.message)
		})
	}
	if n := len(env.Model.Requests()); n != 0 {
		t.Errorf("the model was called %d times for bad requests", n)
	}
	// Health checks need no key.
	if resp := do(t, env, "GET", "/healthz", nil, nil); resp.StatusCode != 200 {
		t.Errorf("healthz = %d", resp.StatusCode)
	}
	if resp := do(t, env, "GET", "/readyz", nil, nil); resp.StatusCode != 200 {
		t.Errorf("readyz = %d", resp.StatusCode)
	}
}

func TestModelsListsAgents(t *testing.T) {
	layer := fstest.MapFS{"ops/helper.md": {Data: []byte("---\nagent: helper\ndescription: An operator's agent\nskills: [clock]\n---\nYou help.\n")}}
	env := testenv.Start(t, testenv.Options{Runs: runsfake.New(), Layers: []fs.FS{layer}})
	list := decode[wire.ModelList](t, do(t, env, "GET", "/v1/models", nil, nil))
	var ids []string
	for _, m := range list.Data {
		ids = append(ids, m.ID)
		if m.Object != "model" || m.OwnedBy == "" {
			t.Errorf("model entry %+v", m)
		}
	}
	if diff := cmp.Diff([]string{"assistant", "helper", "media-agent", "naked", "researcher"}, ids); diff != "" {
		t.Errorf("models (-want +got):\n%s", diff)
	}
}

func TestNonStreaming(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	t.Run("plain", func(t *testing.T) {
		env.Model.Enqueue(llmtest.ToolCalls(llmtest.ToolCall{Name: "current_time", Arguments: `{"timezone":"UTC"}`}))
		env.Model.Enqueue(llmtest.Text("It is Sunday."))
		resp := do(t, env, "POST", "/v1/chat/completions", chatBody{"model": "assistant", "messages": userMsg("what day is it?")}, nil)
		if resp.StatusCode != 200 || resp.Header.Get(api.HeaderRunID) == "" {
			t.Fatalf("status %d, run id %q", resp.StatusCode, resp.Header.Get(api.HeaderRunID))
		}
		c := decode[wire.ChatCompletion](t, resp)
		if c.Object != "chat.completion" || len(c.Choices) != 1 || c.Choices[0].Message.Content != "It is Sunday." ||
			c.Choices[0].FinishReason != "stop" || c.Usage == nil || c.Usage.TotalTokens == 0 || c.Model != "assistant" {
			t.Fatalf("completion = %+v", c)
		}
		// The model saw its own tool call and the result on the second call.
		reqs := env.Model.Requests()
		second := reqs[len(reqs)-1].Chat.Messages
		last := second[len(second)-1]
		if last.Role != "tool" || last.ToolCallID == "" || !strings.Contains(last.Content, "weekday") {
			t.Fatalf("second model call ends with %+v", last)
		}
		if prev := second[len(second)-2]; prev.Role != "assistant" || len(prev.ToolCalls) != 1 || prev.ToolCalls[0].Function.Name != "current_time" {
			t.Fatalf("second model call lacks the tool call: %+v", prev)
		}
	})
	t.Run("open webui gets tool cards", func(t *testing.T) {
		env.Model.Enqueue(llmtest.ToolCalls(llmtest.ToolCall{Name: "current_time", Arguments: `{}`}))
		env.Model.Enqueue(llmtest.Text("Sunday."))
		resp := do(t, env, "POST", "/v1/chat/completions", chatBody{"model": "assistant", "messages": userMsg("day?")}, owui)
		if resp.StatusCode != 200 {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		c := decode[wire.ChatCompletion](t, resp)
		content := c.Choices[0].Message.Content
		if !strings.HasPrefix(content, "\n<details type=\"tool_calls\" done=\"true\"") || !strings.HasSuffix(content, "</details>\nSunday.") {
			t.Fatalf("content = %q", content)
		}
	})
}

func TestStreaming(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	answer := "Durable streams arrive in pieces and add up to the whole answer."
	t.Run("plain frames", func(t *testing.T) {
		env.Model.Enqueue(llmtest.Text(answer, llmtest.ChunkSize(7), llmtest.ChunkDelay(5*time.Millisecond)))
		resp := do(t, env, "POST", "/v1/chat/completions", chatBody{
			"model": "naked", "stream": true, "stream_options": map[string]bool{"include_usage": true}, "messages": userMsg("hi"),
		}, nil)
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
			t.Fatalf("content type %q", ct)
		}
		frames := sseData(t, resp.Body)
		var chunks []wire.ChatChunk
		for _, f := range frames[:len(frames)-1] {
			var c wire.ChatChunk
			if err := json.Unmarshal([]byte(f), &c); err != nil || c.Object != "chat.completion.chunk" {
				t.Fatalf("plain client got a non-chunk frame %s", f)
			}
			chunks = append(chunks, c)
		}
		if got := chunkText(t, frames); got != answer {
			t.Fatalf("text = %q, want %q", got, answer)
		}
		if len(chunks) < 4 {
			t.Fatalf("answer arrived in %d chunks; want it streamed", len(chunks))
		}
		for i, c := range chunks {
			hasRole := len(c.Choices) > 0 && c.Choices[0].Delta.Role != ""
			if hasRole != (i == 0) {
				t.Fatalf("chunk %d role = %v", i, hasRole)
			}
		}
		fin := chunks[len(chunks)-2]
		if *fin.Choices[0].FinishReason != "stop" || fin.Choices[0].Delta.Content != "" {
			t.Fatalf("finish chunk %+v", fin)
		}
		if u := chunks[len(chunks)-1]; len(u.Choices) != 0 || u.Usage == nil || u.Usage.TotalTokens == 0 {
			t.Fatalf("usage chunk %+v", u)
		}
	})
	t.Run("go-openai client", func(t *testing.T) {
		env.Model.Enqueue(llmtest.ToolCalls(llmtest.ToolCall{Name: "current_time", Arguments: `{}`}))
		env.Model.Enqueue(llmtest.Text(answer, llmtest.ChunkSize(5)))
		cfg := openai.DefaultConfig("")
		cfg.BaseURL = env.URL + "/v1"
		s, err := openai.NewClientWithConfig(cfg).CreateChatCompletionStream(context.Background(), openai.ChatCompletionRequest{
			Model: "assistant", Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "what time is it?"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var got strings.Builder
		for {
			c, err := s.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, ch := range c.Choices {
				if len(ch.Delta.ToolCalls) > 0 {
					t.Fatal("server-side tool calls leaked to the client")
				}
				got.WriteString(ch.Delta.Content)
			}
		}
		if got.String() != answer {
			t.Fatalf("text = %q", got.String())
		}
	})
	t.Run("open webui frames", func(t *testing.T) {
		env.Model.Enqueue(llmtest.ToolCalls(llmtest.ToolCall{Name: "current_time", Arguments: `{"timezone":"Europe/Paris"}`}))
		env.Model.Enqueue(llmtest.Text("Paris time.", llmtest.ChunkSize(3)))
		resp := do(t, env, "POST", "/v1/chat/completions", chatBody{"model": "assistant", "stream": true, "messages": userMsg("time in Paris?")}, withChat(owui, "chat-owui"))
		frames := sseData(t, resp.Body)
		var statuses []string
		for _, f := range frames {
			var s wire.StatusFrame
			if json.Unmarshal([]byte(f), &s) == nil && s.Event.Type == "status" {
				statuses = append(statuses, s.Event.Data.Description)
			}
		}
		if diff := cmp.Diff([]string{"Running current_time · Europe/Paris", "Used 1 tool call"}, statuses); diff != "" {
			t.Errorf("status frames (-want +got):\n%s", diff)
		}
		text := chunkText(t, frames)
		if !strings.HasPrefix(text, "\n<details type=\"tool_calls\" done=\"true\"") || !strings.HasSuffix(text, "</details>\nParis time.") {
			t.Fatalf("content = %q", text)
		}
		// The card comes back in the next turn's history and is stripped;
		// the model sees clean text.
		env.Model.Enqueue(llmtest.Text("You're welcome."))
		msgs := []map[string]string{{"role": "user", "content": "time in Paris?"}, {"role": "assistant", "content": text}, {"role": "user", "content": "thanks"}}
		do(t, env, "POST", "/v1/chat/completions", chatBody{"model": "assistant", "messages": msgs}, withChat(owui, "chat-owui"))
		reqs := env.Model.Requests()
		seen := reqs[len(reqs)-1].Chat.Messages
		for _, m := range seen {
			if strings.Contains(m.Content, "<details") {
				t.Fatalf("the model saw a tool card: %q", m.Content)
			}
		}
	})
}

// TestModelFailures: the model endpoint's 400 fails the run at once (a
// 502 with its message), its 500 is retried. How a failed run is written
// to a stream is chatapi's table.
func TestModelFailures(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	t.Run("400 fails at once as 502", func(t *testing.T) {
		env.Model.Enqueue(llmtest.Status(400, "context length exceeded"))
		resp := do(t, env, "POST", "/v1/chat/completions", chatBody{"model": "naked", "messages": userMsg("hi")}, nil)
		if resp.StatusCode != 502 {
			t.Fatalf("status = %d", resp.StatusCode)
		}
		e := decode[wire.ErrorBody](t, resp)
		if !strings.Contains(e.Error.Message, "context length exceeded") {
			t.Fatalf("message %q lacks the endpoint's", e.Error.Message)
		}
		if n := len(env.Model.Requests()); n != 1 {
			t.Fatalf("a 400 was retried: %d requests", n)
		}
	})
	t.Run("500 is retried", func(t *testing.T) {
		inputAt := len(env.Model.Requests())
		env.Model.Enqueue(llmtest.FailTimes(1, 500, llmtest.Text("recovered")))
		resp := do(t, env, "POST", "/v1/chat/completions", chatBody{"model": "naked", "messages": userMsg("hi")}, nil)
		c := decode[wire.ChatCompletion](t, resp)
		if resp.StatusCode != 200 || c.Choices[0].Message.Content != "recovered" {
			t.Fatalf("status %d, %+v", resp.StatusCode, c)
		}
		if n := len(env.Model.Requests()) - inputAt; n != 2 {
			t.Fatalf("requests = %d, want 2", n)
		}
	})
}

// TestWorkerStoppedMidStream stops the worker while the answer streams and
// starts a new one: the turn completes and the client sees the answer once,
// with nothing lost or repeated.
func TestWorkerStoppedMidStream(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	words := strings.Repeat("steady words keep coming ", 12)
	answer := strings.TrimSpace(words)
	env.Model.On(func(llmtest.Request) bool { return true }, llmtest.Text(answer, llmtest.ChunkDelay(20*time.Millisecond)))
	resp := do(t, env, "POST", "/v1/chat/completions", chatBody{"model": "naked", "stream": true, "messages": userMsg("talk")}, nil)
	rd := ssetest.NewReader(resp.Body)
	var seen strings.Builder
	var frames []string
	for {
		e, err := rd.Next()
		if err != nil {
			t.Fatalf("stream broke: %v (seen %q)", err, seen.String())
		}
		frames = append(frames, e.Data)
		if e.Data == ssetest.Done {
			break
		}
		seen.Reset()
		seen.WriteString(chunkText(t, frames))
		if len(frames) == 5 {
			env.StopWorker()
			env.StartWorker()
		}
	}
	if got := chunkText(t, frames); got != answer {
		t.Fatalf("client saw %q\nwant %q", got, answer)
	}
	if n := len(env.Model.Requests()); n < 2 {
		t.Fatalf("model called %d times; the stop did not interrupt the call", n)
	}
}
