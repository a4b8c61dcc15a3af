package llmtest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	openai "github.com/sashabaranov/go-openai"
)

// flavoured starts a server speaking f.
func flavoured(t *testing.T, f llmtest.Flavour) *llmtest.Server {
	t.Helper()
	srv := llmtest.New(t)
	srv.SetFlavour(f)
	return srv
}

// postFrames posts body to the chat route and returns its data frames,
// with the stream's created value written as CREATED so frames compare
// as strings.
func postFrames(t *testing.T, srv *llmtest.Server, body string) []string {
	t.Helper()
	resp, err := rawPost(t, srv.URL()+"/chat/completions", "", body)
	if err != nil {
		t.Fatal(err)
	}
	frames := readFrames(t, resp)
	if len(frames) == 0 {
		t.Fatal("no frames")
	}
	created := fmt.Sprint(int64(decodeObject(t, frames[0])["created"].(float64)))
	for i, f := range frames {
		frames[i] = strings.Replace(f, `"created":`+created+",", `"created":CREATED,`, 1)
	}
	return frames
}

// postRaw posts body and returns the status, Content-Type and body.
func postRaw(t *testing.T, srv *llmtest.Server, body string) (int, string, string) {
	t.Helper()
	resp, err := rawPost(t, srv.URL()+"/chat/completions", "", body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

func compareFrames(t *testing.T, got, want []string) {
	t.Helper()
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Errorf("frame %d:\n got %s\nwant %s", i, g, w)
		}
	}
}

func TestOllamaReasoningFrames(t *testing.T) {
	srv := flavoured(t, llmtest.FlavourOllama)
	srv.Enqueue(llmtest.Text("Yes it is", llmtest.Reasoning("I think so")))
	frames := postFrames(t, srv, `{"model":"qwen3","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"x"}]}`)
	head := `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":CREATED,"model":"qwen3","system_fingerprint":"fp_ollama","choices":`
	compareFrames(t, frames, []string{
		head + `[{"index":0,"delta":{"role":"assistant","content":"","reasoning":"I"},"finish_reason":null}]}`,
		head + `[{"index":0,"delta":{"content":"","reasoning":" think"},"finish_reason":null}]}`,
		head + `[{"index":0,"delta":{"content":"","reasoning":" so"},"finish_reason":null}]}`,
		head + `[{"index":0,"delta":{"content":"Yes"},"finish_reason":null}]}`,
		head + `[{"index":0,"delta":{"content":" it"},"finish_reason":null}]}`,
		head + `[{"index":0,"delta":{"content":" is"},"finish_reason":null}]}`,
		head + `[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
		head + `[],"usage":{"prompt_tokens":1,"completion_tokens":6,"total_tokens":7}}`,
		"[DONE]",
	})
}

func TestOllamaToolCallsWhole(t *testing.T) {
	srv := flavoured(t, llmtest.FlavourOllama)
	srv.Enqueue(llmtest.ToolCalls(
		llmtest.ToolCall{Name: "lookup", Arguments: `{ "query": "a<b", "n": 2 }`},
		llmtest.ToolCall{Name: "fetch", Arguments: `{"url":"https://example.com"}`},
	).WithText("Let me check."))
	frames := postFrames(t, srv, `{"model":"llama3.1:8b","stream":true,"messages":[{"role":"user","content":"x"}]}`)
	head := `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":CREATED,"model":"llama3.1:8b","system_fingerprint":"fp_ollama","choices":`
	compareFrames(t, frames, []string{
		head + `[{"index":0,"delta":{"role":"assistant","content":"Let"},"finish_reason":null}]}`,
		head + `[{"index":0,"delta":{"content":" me"},"finish_reason":null}]}`,
		head + `[{"index":0,"delta":{"content":" check."},"finish_reason":null}]}`,
		head + `[{"index":0,"delta":{"content":"","tool_calls":[{"id":"call_00000001","index":0,"type":"function","function":{"name":"lookup","arguments":"{\"query\":\"a\\u003cb\",\"n\":2}"}}]},"finish_reason":null}]}`,
		head + `[{"index":0,"delta":{"content":"","tool_calls":[{"id":"call_00000002","index":1,"type":"function","function":{"name":"fetch","arguments":"{\"url\":\"https://example.com\"}"}}]},"finish_reason":null}]}`,
		head + `[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		"[DONE]",
	})

	// go-openai reads them as two whole calls.
	srv.Enqueue(llmtest.ToolCalls(llmtest.ToolCall{Name: "lookup", Arguments: `{"q":1}`}))
	req := streamRequest("x")
	chunks, err := streamChat(t, newClient(srv), req)
	if err != nil {
		t.Fatal(err)
	}
	calls, _ := accumulateToolCalls(t, chunks)
	if len(calls) != 1 || !regexp.MustCompile(`^call_[a-z0-9]{8}$`).MatchString(calls[0].ID) || calls[0].Function.Arguments != `{"q":1}` {
		t.Errorf("calls = %+v, want one whole call with an Ollama id", calls)
	}
}

func TestOllamaToolCallSilence(t *testing.T) {
	const silence = 300 * time.Millisecond
	srv := flavoured(t, llmtest.FlavourOllama)
	srv.Enqueue(llmtest.ToolCalls(llmtest.ToolCall{Name: "lookup", Arguments: `{}`}).
		WithText("Hm.").With(llmtest.ToolCallSilence(silence)))
	start := time.Now()
	s, err := newClient(srv).CreateChatCompletionStream(waitCtx(t), streamRequest("x"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	first, err := s.Recv()
	if err != nil || first.Choices[0].Delta.Content != "Hm." {
		t.Fatalf("first chunk = %+v, %v", first, err)
	}
	call, err := s.Recv()
	if err != nil || len(call.Choices[0].Delta.ToolCalls) != 1 {
		t.Fatalf("second chunk = %+v, %v; want the tool call", call, err)
	}
	if gap := time.Since(start); gap < silence {
		t.Errorf("the tool call came %v after the request, want a silence of at least %v before it", gap, silence)
	}
}

func TestOllamaWholeAnswer(t *testing.T) {
	srv := flavoured(t, llmtest.FlavourOllama)
	srv.Enqueue(llmtest.ToolCalls(llmtest.ToolCall{ID: "call_fixed123", Name: "lookup", Arguments: `{"q":"x"}`}).
		With(llmtest.Reasoning("Need data.")))
	status, ct, body := postRaw(t, srv, `{"model":"gpt-oss:20b","messages":[{"role":"user","content":"x"}]}`)
	if status != http.StatusOK || ct != "application/json" {
		t.Fatalf("status %d, Content-Type %q", status, ct)
	}
	created := fmt.Sprint(int64(decodeObject(t, body)["created"].(float64)))
	want := `{"id":"chatcmpl-1","object":"chat.completion","created":` + created + `,"model":"gpt-oss:20b","system_fingerprint":"fp_ollama",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"","reasoning":"Need data.",` +
		`"tool_calls":[{"id":"call_fixed123","index":0,"type":"function","function":{"name":"lookup","arguments":"{\"q\":\"x\"}"}}]},` +
		`"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":13,"total_tokens":14}}` + "\n"
	if body != want {
		t.Errorf("body:\n got %s\nwant %s", body, want)
	}
}

func TestOllamaErrorEnvelopes(t *testing.T) {
	for _, tt := range []struct {
		code int
		typ  string
	}{
		{http.StatusBadRequest, "invalid_request_error"},
		{http.StatusNotFound, "not_found_error"},
		{http.StatusServiceUnavailable, "api_error"},
		{http.StatusInternalServerError, "api_error"},
	} {
		srv := flavoured(t, llmtest.FlavourOllama)
		srv.Enqueue(llmtest.Status(tt.code, "server busy"))
		status, ct, body := postRaw(t, srv, `{"model":"m","messages":[{"role":"user","content":"x"}]}`)
		want := `{"error":{"message":"server busy","type":"` + tt.typ + `","param":null,"code":null}}` + "\n"
		if status != tt.code || ct != "application/json" || body != want {
			t.Errorf("Status(%d) = %d %q %s, want %s", tt.code, status, ct, body, want)
		}
	}
}

func TestOllamaPulled(t *testing.T) {
	srv := flavoured(t, llmtest.FlavourOllama)
	srv.SetPulled("llama3.1:8b", "qwen3")
	srv.SetDefault(llmtest.Text("ok"))

	_, tags := getJSON(t, srv, http.MethodGet, "/api/tags", "")
	models, _ := tags["models"].([]any)
	var names []string
	for _, m := range models {
		e := m.(map[string]any)
		names = append(names, e["name"].(string))
		if e["model"] != e["name"] || e["digest"] == "" || e["details"].(map[string]any)["format"] != "gguf" {
			t.Errorf("/api/tags entry %v", e)
		}
	}
	if fmt.Sprint(names) != "[llama3.1:8b qwen3:latest]" {
		t.Errorf("/api/tags names = %v", names)
	}

	status, ct, body := postRaw(t, srv, `{"model":"mistral","stream":true,"messages":[{"role":"user","content":"x"}]}`)
	want := `{"error":{"message":"model 'mistral' not found","type":"not_found_error","param":null,"code":null}}` + "\n"
	if status != http.StatusNotFound || ct != "application/json" || body != want {
		t.Errorf("unpulled model: %d %q %s, want 404 %s", status, ct, body, want)
	}
	for _, m := range []string{"qwen3", "qwen3:latest", "llama3.1:8b"} {
		if status, _, body := postRaw(t, srv, `{"model":"`+m+`","messages":[{"role":"user","content":"x"}]}`); status != http.StatusOK {
			t.Errorf("pulled model %s: %d %s", m, status, body)
		}
	}
	if code, show := getJSON(t, srv, http.MethodPost, "/api/show", `{"model":"mistral"}`); code != http.StatusNotFound || show["error"] != "model 'mistral' not found" {
		t.Errorf("/api/show of an unpulled model: %d %v", code, show)
	}
	if n := len(srv.Requests()); n != 4 {
		t.Errorf("recorded %d requests, want 4 (the refused one too)", n)
	}
}

func TestOllamaStreamError(t *testing.T) {
	srv := flavoured(t, llmtest.FlavourOllama)
	srv.Enqueue(llmtest.Text("one two three four", llmtest.StreamError(2, "llama runner process has terminated")))
	frames := postFrames(t, srv, `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`)
	head := `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":CREATED,"model":"m","system_fingerprint":"fp_ollama","choices":`
	compareFrames(t, frames, []string{
		head + `[{"index":0,"delta":{"role":"assistant","content":"one"},"finish_reason":null}]}`,
		head + `[{"index":0,"delta":{"content":" two"},"finish_reason":null}]}`,
		// The error, as Ollama's OpenAI route writes it: its words lost.
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":CREATED,"model":"","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":{"content":""},"finish_reason":null}]}`,
	})

	// Before the first chunk: HTTP 500 with the message.
	srv.Enqueue(llmtest.Text("x", llmtest.StreamError(0, "llama runner process has terminated")))
	status, _, body := postRaw(t, srv, `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`)
	if want := `{"error":{"message":"llama runner process has terminated","type":"api_error","param":null,"code":null}}` + "\n"; status != 500 || body != want {
		t.Errorf("error before the first chunk: %d %s, want 500 %s", status, body, want)
	}
}

func TestOllamaInvalidToolArguments(t *testing.T) {
	history := func(args string) string {
		return `{"model":"m","messages":[{"role":"user","content":"x"},` +
			`{"role":"assistant","content":"","tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":` + args + `}}]},` +
			`{"role":"tool","tool_call_id":"call_1","content":"r"}]}`
	}
	srv := flavoured(t, llmtest.FlavourOllama)
	srv.SetDefault(llmtest.Text("ok"))
	// ChatMiddleware answers it through gin's own JSON renderer.
	want := `{"error":{"message":"invalid tool call arguments","type":"invalid_request_error","param":null,"code":null}}`
	for _, args := range []string{`"{\"a\": 1"`, `""`, `"[1,2]"`, `"not json"`} {
		if status, ct, body := postRaw(t, srv, history(args)); status != http.StatusBadRequest || ct != "application/json; charset=utf-8" || body != want {
			t.Errorf("arguments %s: %d %q %s, want 400 %s", args, status, ct, body, want)
		}
	}
	for _, args := range []string{`"{\"a\":1}"`, `"null"`, `"{}"`} {
		if status, _, body := postRaw(t, srv, history(args)); status != http.StatusOK {
			t.Errorf("arguments %s: %d %s, want 200", args, status, body)
		}
	}
}

func TestOllamaLoadDelay(t *testing.T) {
	srv := flavoured(t, llmtest.FlavourOllama)
	srv.SetOllamaModel(llmtest.OllamaModel{Name: "big:70b", LoadDelay: time.Hour})
	srv.SetDefault(llmtest.Text("ok"))
	body := `{"model":"big:70b","stream":true,"messages":[{"role":"user","content":"x"}]}`

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL()+"/chat/completions", strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			err = fmt.Errorf("headers arrived: %d", resp.StatusCode)
		}
		done <- err
	}()
	if err := srv.WaitRequests(waitCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	// The model is loading: nothing comes until the client gives up.
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("first request: %v, want no response before the client gave up", err)
	}
	// Loaded now: the next request is answered at once.
	frames := postFrames(t, srv, body)
	if frames[len(frames)-1] != "[DONE]" {
		t.Errorf("second request frames %v", frames)
	}
}

func TestOllamaMaxTokens(t *testing.T) {
	srv := flavoured(t, llmtest.FlavourOllama)
	reply := llmtest.Text("five six", llmtest.Reasoning("one two three four"))
	srv.SetDefault(reply)
	c := newClient(srv)
	req := userRequest("x")
	req.Model = "qwen3"

	// num_predict counts the thinking: three tokens, all spent thinking.
	req.MaxTokens = 3
	resp, err := c.CreateChatCompletion(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if ch := resp.Choices[0]; ch.Message.Content != "" || ch.FinishReason != openai.FinishReasonLength || resp.Usage.CompletionTokens != 3 {
		t.Errorf("max_tokens 3: content %q finish %q completion %d, want \"\" length 3", ch.Message.Content, ch.FinishReason, resp.Usage.CompletionTokens)
	}
	req.MaxTokens = 5
	req.Stream = true
	chunks, err := streamChat(t, c, req)
	if err != nil {
		t.Fatal(err)
	}
	if content(chunks) != "five" || finishReason(chunks) != openai.FinishReasonLength {
		t.Errorf("max_tokens 5 streamed: %q %q, want five and length", content(chunks), finishReason(chunks))
	}

	// max_completion_tokens, tool_choice and parallel_tool_calls are not
	// in Ollama's request: ignored.
	status, _, body := postRaw(t, srv, `{"model":"qwen3","max_completion_tokens":2,"tool_choice":"none","parallel_tool_calls":false,"messages":[{"role":"user","content":"x"}]}`)
	if status != http.StatusOK || !strings.Contains(body, `"content":"five six"`) || !strings.Contains(body, `"finish_reason":"stop"`) {
		t.Errorf("max_completion_tokens: %d %s, want the whole answer", status, body)
	}
}

func TestRequestReasoningRecorded(t *testing.T) {
	srv := flavoured(t, llmtest.FlavourOllama)
	srv.SetDefault(llmtest.Text("ok"))
	postRaw(t, srv, `{"model":"m","messages":[{"role":"user","content":"x"},{"role":"assistant","content":"a","reasoning":"I thought"},{"role":"user","content":"y"}]}`)
	if got := srv.Requests()[0].Reasoning; fmt.Sprint(got) != "[ I thought ]" || len(got) != 3 {
		t.Errorf("Reasoning = %q", got)
	}
}

func TestVLLMReasoningFrames(t *testing.T) {
	srv := flavoured(t, llmtest.FlavourVLLM)
	srv.Enqueue(llmtest.Text("Yes", llmtest.Reasoning("I think")))
	frames := postFrames(t, srv, `{"model":"qwen3","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"x"}]}`)
	head := `{"id":"chatcmpl-llmtest-1","object":"chat.completion.chunk","created":CREATED,"model":"qwen3","system_fingerprint":"fp_llmtest","choices":`
	compareFrames(t, frames, []string{
		head + `[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":null}`,
		head + `[{"index":0,"delta":{"reasoning":"I"},"logprobs":null,"finish_reason":null}],"usage":null}`,
		head + `[{"index":0,"delta":{"reasoning":" think"},"logprobs":null,"finish_reason":null}],"usage":null}`,
		head + `[{"index":0,"delta":{"content":"Yes"},"logprobs":null,"finish_reason":null}],"usage":null}`,
		head + `[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}`,
		head + `[],"usage":{"prompt_tokens":1,"completion_tokens":3,"total_tokens":4,"completion_tokens_details":{"reasoning_tokens":2}}}`,
		"[DONE]",
	})

	srv.Enqueue(llmtest.Text("Yes", llmtest.Reasoning("I think")))
	_, _, body := postRaw(t, srv, `{"model":"qwen3","messages":[{"role":"user","content":"x"}]}`)
	if !strings.Contains(body, `"message":{"role":"assistant","content":"Yes","reasoning":"I think","refusal":null}`) {
		t.Errorf("whole answer %s lacks message.reasoning", body)
	}
}

func TestVLLMErrors(t *testing.T) {
	srv := flavoured(t, llmtest.FlavourVLLM)
	srv.Enqueue(llmtest.Status(http.StatusBadRequest, "bad"), llmtest.Status(http.StatusServiceUnavailable, "later"))
	for _, want := range []struct {
		code int
		body string
	}{
		{400, `{"error":{"message":"bad","type":"BadRequestError","param":null,"code":400}}`},
		{503, `{"error":{"message":"later","type":"Service Unavailable","param":null,"code":503}}`},
	} {
		if status, ct, body := postRaw(t, srv, `{"model":"m","messages":[{"role":"user","content":"x"}]}`); status != want.code || ct != "application/json" || body != want.body {
			t.Errorf("got %d %q %s, want %d %s", status, ct, body, want.code, want.body)
		}
	}
}

func TestVLLMContextRefusal(t *testing.T) {
	srv := flavoured(t, llmtest.FlavourVLLM)
	srv.SetWindow(50, llmtest.BehaviourOpenAI)
	srv.SetDefault(llmtest.Text("ok"))
	long := strings.Repeat("word ", 100)
	status, _, body := postRaw(t, srv, `{"model":"m","messages":[{"role":"user","content":"`+long+`"}]}`)
	want := `{"error":{"message":"You passed 51 input tokens and requested 0 output tokens. However, the model's context length is only 50 tokens, resulting in a maximum input length of 50 tokens. Please reduce the length of the input prompt.","type":"BadRequestError","param":"input_tokens","code":400}}`
	if status != http.StatusBadRequest || body != want {
		t.Errorf("over-long input: %d %s\nwant %s", status, body, want)
	}
	status, _, body = postRaw(t, srv, `{"model":"m","max_tokens":40,"messages":[{"role":"user","content":"hello there"}]}`)
	if !strings.Contains(body, "and requested 40 output tokens. However, the model's context length is only 50 tokens, resulting in a maximum input length of 10 tokens.") || status != 400 {
		t.Errorf("input over the window less max_tokens: %d %s", status, body)
	}
	if len(srv.CutRequests()) != 2 {
		t.Errorf("CutRequests = %d, want 2", len(srv.CutRequests()))
	}
}

func TestVLLMAutoToolChoice(t *testing.T) {
	srv := flavoured(t, llmtest.FlavourVLLM)
	srv.SetDefault(llmtest.Text("ok"))
	tools := `"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]`
	// Started with the flags (the default): served.
	if status, _, body := postRaw(t, srv, `{"model":"m",`+tools+`,"messages":[{"role":"user","content":"x"}]}`); status != 200 {
		t.Fatalf("with auto tool choice: %d %s", status, body)
	}
	srv.SetAutoToolChoice(false)
	want := `{"error":{"message":"\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set","type":"BadRequestError","param":null,"code":400}}`
	for _, choice := range []string{``, `"tool_choice":"auto",`} {
		if status, _, body := postRaw(t, srv, `{"model":"m",`+choice+tools+`,"messages":[{"role":"user","content":"x"}]}`); status != 400 || body != want {
			t.Errorf("tool_choice %q: %d %s, want 400 %s", choice, status, body, want)
		}
	}
	// Without a tool parser, "required" and a named function are refused
	// too.
	for choice, msg := range map[string]string{
		`"required"`: `tool_choice=\"required\" requires --tool-call-parser to be set`,
		`{"type":"function","function":{"name":"f"}}`: `tool_choice=function \"f\" requires --tool-call-parser to be set`,
	} {
		want := `{"error":{"message":"` + msg + `","type":"BadRequestError","param":null,"code":400}}`
		if status, _, body := postRaw(t, srv, `{"model":"m","tool_choice":`+choice+`,`+tools+`,"messages":[{"role":"user","content":"x"}]}`); status != 400 || body != want {
			t.Errorf("tool_choice %s: %d %s, want 400 %s", choice, status, body, want)
		}
	}
	// An explicit null stays None, which vLLM serves.
	for _, ok := range []string{`{"model":"m","tool_choice":"none",` + tools + `,"messages":[{"role":"user","content":"x"}]}`,
		`{"model":"m","tool_choice":null,` + tools + `,"messages":[{"role":"user","content":"x"}]}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}]}`} {
		if status, _, body := postRaw(t, srv, ok); status != 200 {
			t.Errorf("%s: %d %s, want 200", ok, status, body)
		}
	}
}

func TestVLLMMaxTokens(t *testing.T) {
	srv := flavoured(t, llmtest.FlavourVLLM)
	srv.SetDefault(llmtest.Text("five six seven", llmtest.Reasoning("one two")))
	_, _, body := postRaw(t, srv, `{"model":"m","max_tokens":9,"max_completion_tokens":3,"messages":[{"role":"user","content":"x"}]}`)
	if !strings.Contains(body, `"content":"five","reasoning":"one two"`) || !strings.Contains(body, `"finish_reason":"length"`) {
		t.Errorf("max_completion_tokens 3: %s", body)
	}
}

func TestThinkTags(t *testing.T) {
	srv := flavoured(t, llmtest.FlavourThinkTags)
	srv.Enqueue(llmtest.Text("Paris.", llmtest.Reasoning("The capital.")))
	chunks, err := streamChat(t, newClient(srv), streamRequest("x"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := content(chunks), "<think>\nThe capital.\n</think>\n\nParis."; got != want {
		t.Errorf("content = %q, want %q", got, want)
	}
	for _, c := range chunks {
		for _, ch := range c.Choices {
			if ch.Delta.ReasoningContent != "" {
				t.Errorf("reasoning_content %q from a server without a parser", ch.Delta.ReasoningContent)
			}
		}
	}
}

func TestOpenAIReasoningUnchanged(t *testing.T) {
	srv := llmtest.New(t)
	srv.Enqueue(llmtest.Text("Yes", llmtest.Reasoning("Hm")))
	frames := postFrames(t, srv, `{"model":"m","stream":true,"max_tokens":1,"messages":[{"role":"user","content":"x"}]}`)
	if len(frames) != 5 || !strings.Contains(frames[1], `"delta":{"reasoning_content":"Hm"}`) || !strings.Contains(frames[2], `"delta":{"content":"Yes"}`) || !strings.Contains(frames[3], `"finish_reason":"stop"`) {
		t.Errorf("frames %v", frames)
	}
}

func TestVLLMStreamError(t *testing.T) {
	srv := flavoured(t, llmtest.FlavourVLLM)
	srv.Enqueue(llmtest.Text("one two", llmtest.StreamError(2, "engine died")))
	frames := postFrames(t, srv, `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`)
	if len(frames) != 4 {
		t.Fatalf("frames %v, want role, one chunk, the error and [DONE]", frames)
	}
	if want := `{"error":{"message":"engine died","type":"InternalServerError","param":null,"code":500}}`; frames[2] != want || frames[3] != "[DONE]" {
		t.Errorf("after the error: %v, want %s and [DONE]", frames[2:], want)
	}
}

func TestOllamaEmptyAnswer(t *testing.T) {
	srv := flavoured(t, llmtest.FlavourOllama)
	srv.Enqueue(llmtest.Text(""))
	frames := postFrames(t, srv, `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`)
	head := `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":CREATED,"model":"m","system_fingerprint":"fp_ollama","choices":`
	compareFrames(t, frames, []string{
		head + `[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
		head + `[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
		"[DONE]",
	})
}

func TestOllamaMaxTokensLosesCall(t *testing.T) {
	srv := flavoured(t, llmtest.FlavourOllama)
	srv.Enqueue(llmtest.ToolCalls(llmtest.ToolCall{Name: "lookup", Arguments: `{"q":"x"}`}).With(llmtest.Reasoning("Need data.")))
	_, _, body := postRaw(t, srv, `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`)
	if strings.Contains(body, "tool_calls") || !strings.Contains(body, `"finish_reason":"length"`) || !strings.Contains(body, `"reasoning":"Need data."`) {
		t.Errorf("a call cut by max_tokens: %s, want the thinking, no call, finish_reason length", body)
	}
}

func TestToolCallSilenceOpenAI(t *testing.T) {
	const silence = 200 * time.Millisecond
	srv := llmtest.New(t)
	srv.Enqueue(llmtest.ToolCalls(llmtest.ToolCall{Name: "f", Arguments: `{}`}).With(llmtest.ToolCallSilence(silence)))
	start := time.Now()
	chunks, err := streamChat(t, newClient(srv), streamRequest("x"))
	if err != nil {
		t.Fatal(err)
	}
	if calls, _ := accumulateToolCalls(t, chunks); len(calls) != 1 || time.Since(start) < silence {
		t.Errorf("calls %v after %v, want one after a silence of %v", calls, time.Since(start), silence)
	}
}

func TestVLLMContextRefusalReadsCompletionTokensFirst(t *testing.T) {
	srv := flavoured(t, llmtest.FlavourVLLM)
	srv.SetWindow(50, llmtest.BehaviourOpenAI)
	srv.SetDefault(llmtest.Text("ok"))
	// max_completion_tokens wins over max_tokens: 3 fits where 45 would not.
	if status, _, body := postRaw(t, srv, `{"model":"m","max_tokens":45,"max_completion_tokens":3,"messages":[{"role":"user","content":"hello there"}]}`); status != 200 {
		t.Errorf("max_completion_tokens 3: %d %s, want 200", status, body)
	}
	status, _, body := postRaw(t, srv, `{"model":"m","max_completion_tokens":60,"messages":[{"role":"user","content":"hello"}]}`)
	want := `{"error":{"message":"max_completion_tokens=60 cannot be greater than max_model_len=50. Please request fewer output tokens.","type":"BadRequestError","param":"max_completion_tokens","code":400}}`
	if status != 400 || body != want {
		t.Errorf("output over the window: %d %s\nwant %s", status, body, want)
	}
	if n := len(srv.CutRequests()); n != 1 {
		t.Errorf("CutRequests = %d, want 1", n)
	}
}

func TestOllamaFaults(t *testing.T) {
	srv := flavoured(t, llmtest.FlavourOllama)
	// No role chunk of its own: the first chunk counts.
	srv.Enqueue(llmtest.Text("one two three", llmtest.CutAfter(1)))
	s, err := newClient(srv).CreateChatCompletionStream(waitCtx(t), streamRequest("x"))
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := readStream(s)
	if err == nil || content(chunks) != "one" {
		t.Errorf("CutAfter(1): %q, %v; want one chunk and an error", content(chunks), err)
	}

	srv.Enqueue(llmtest.Text("one two", llmtest.MalformedChunk()))
	resp, err := rawPost(t, srv.URL()+"/chat/completions", "", `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	frames := readFrames(t, resp)
	if len(frames) != 5 || !strings.HasSuffix(frames[1], `"delta":{"content":"`) || frames[4] != "[DONE]" {
		t.Errorf("MalformedChunk frames %q, want the broken one second", frames)
	}
}
