package llmtest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	openai "github.com/sashabaranov/go-openai"
)

// longChat is a system prompt and n user/assistant exchanges of about 60
// tokens each, then a last question.
func longChat(n int) openai.ChatCompletionRequest {
	req := openai.ChatCompletionRequest{Model: "test-model", Messages: []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: "You are terse."},
	}}
	filler := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 5)
	for i := range n {
		req.Messages = append(req.Messages,
			openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: fmt.Sprintf("turn %d: %s", i, filler)},
			openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: fmt.Sprintf("answer %d", i)})
	}
	req.Messages = append(req.Messages, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: "And the first turn?"})
	return req
}

func TestPromptTokens(t *testing.T) {
	tests := []struct {
		name string
		req  openai.ChatCompletionRequest
		want int
	}{
		// <|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou
		// are terse.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nhi
		// <|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n: 5
		// for the request, 3+1+5 for the system message ("\n\n", "You",
		// " are", " terse" in two, "."), 3+1+2 for the user's.
		{name: "system and user", req: userRequest("hi"), want: 20},
		{name: "tool call and result", req: openai.ChatCompletionRequest{Model: "m", Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleAssistant, ToolCalls: []openai.ToolCall{{ID: "c1", Type: openai.ToolTypeFunction,
				Function: openai.FunctionCall{Name: "web_fetch", Arguments: `{"url":"https://example.com"}`}}}},
			{Role: openai.ChatMessageRoleTool, ToolCallID: "c1", Content: "Example Domain"},
		}}, want: 37},
		{name: "image", req: openai.ChatCompletionRequest{Model: "m", Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleUser, MultiContent: []openai.ChatMessagePart{
				{Type: openai.ChatMessagePartTypeText, Text: "what is this"},
				{Type: openai.ChatMessagePartTypeImageURL, ImageURL: &openai.ChatMessageImageURL{URL: "data:image/png;base64,AAAA"}},
				{Type: openai.ChatMessagePartTypeImageURL, ImageURL: &openai.ChatMessageImageURL{URL: "data:image/png;base64,AAAA", Detail: openai.ImageURLDetailLow}},
			}},
		}}, want: 5 + 3 + 1 + 4 + llmtest.ImageTokens + 85},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := llmtest.PromptTokens(tt.req); got != tt.want {
				t.Errorf("PromptTokens = %d, want %d", got, tt.want)
			}
		})
	}

	t.Run("tools", func(t *testing.T) {
		req := userRequest("hi")
		without := llmtest.PromptTokens(req)
		req.Tools = []openai.Tool{{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: "web_fetch", Description: "Fetch a web page.", Parameters: map[string]any{"type": "object"},
		}}}
		one := llmtest.PromptTokens(req)
		req.Tools = append(req.Tools, req.Tools[0])
		two := llmtest.PromptTokens(req)
		// The preamble is counted once, each definition's JSON again.
		if one-without < 80 || two-one != 26 {
			t.Errorf("tools cost %d then %d more, want the preamble (over 80) then 26 for the second definition", one-without, two-one)
		}
	})
}

func TestWindowUnlimitedByDefault(t *testing.T) {
	srv := llmtest.New(t)
	srv.SetDefault(llmtest.Text("ok"))
	req := longChat(100)
	if _, err := newClient(srv).CreateChatCompletion(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	got := srv.Requests()[0]
	if got.Cut || got.Dropped != 0 || got.PromptTokens != llmtest.PromptTokens(req) || len(srv.CutRequests()) != 0 {
		t.Errorf("request cut %v dropped %d tokens %d, cut requests %d; want nothing cut without a window", got.Cut, got.Dropped, got.PromptTokens, len(srv.CutRequests()))
	}
}

// ollamaReading is a server with an Ollama window of 512 tokens whose
// model answers "ok" and keeps in *seen the messages it last read.
func ollamaReading(t *testing.T, seen *[]openai.ChatCompletionMessage) *llmtest.Server {
	srv := llmtest.New(t)
	srv.SetDefault(llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		*seen = r.Chat.Messages
		return llmtest.Text("ok")
	}))
	srv.SetWindow(512, llmtest.BehaviourOllama)
	return srv
}

func TestWindowOllamaDropsOldestSilently(t *testing.T) {
	var seen []openai.ChatCompletionMessage
	srv := ollamaReading(t, &seen)
	req := longChat(20) // about 1,400 tokens
	full := llmtest.PromptTokens(req)

	resp, err := newClient(srv).CreateChatCompletion(context.Background(), req)
	if err != nil {
		t.Fatalf("Ollama answers a request over its window: %v", err)
	}
	got := srv.Requests()[0]
	if !got.Cut || got.PromptTokens != full || got.Dropped == 0 {
		t.Fatalf("recorded cut %v tokens %d dropped %d, want cut, %d tokens, some dropped", got.Cut, got.PromptTokens, got.Dropped, full)
	}
	// What the model read: the system prompt, then the newest messages
	// that fit, in order, ending with the last.
	kept := append([]openai.ChatCompletionMessage{req.Messages[0]}, req.Messages[1+got.Dropped:]...)
	if d := cmp.Diff(kept, seen); d != "" {
		t.Errorf("the script saw (-want +got):\n%s", d)
	}
	read := llmtest.PromptTokens(openai.ChatCompletionRequest{Messages: kept})
	if resp.Usage.PromptTokens != read || read > 512 {
		t.Errorf("usage.prompt_tokens = %d, want %d (what was kept, within 512)", resp.Usage.PromptTokens, read)
	}
	// One message more would not have fitted.
	more := append([]openai.ChatCompletionMessage{req.Messages[0]}, req.Messages[got.Dropped:]...)
	if n := llmtest.PromptTokens(openai.ChatCompletionRequest{Messages: more}); n <= 512 {
		t.Errorf("keeping one more message is %d tokens, within the window: the cut dropped too much", n)
	}
	if len(srv.CutRequests()) != 1 || len(srv.Requests()[0].Chat.Messages) != len(req.Messages) {
		t.Errorf("CutRequests %d, recorded messages %d: want the request as sent, listed as cut", len(srv.CutRequests()), len(srv.Requests()[0].Chat.Messages))
	}
}

func TestWindowOllamaKeepsSystemMessages(t *testing.T) {
	var seen []openai.ChatCompletionMessage
	srv := ollamaReading(t, &seen)
	req := longChat(20)
	// A system message in the middle of the dropped part stays.
	mid := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: "Summary: turn 0 listed tmdb:931285."}
	req.Messages = append(req.Messages[:5:5], append([]openai.ChatCompletionMessage{mid}, req.Messages[5:]...)...)
	if _, err := newClient(srv).CreateChatCompletion(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if len(seen) < 3 || seen[0].Content != req.Messages[0].Content || seen[1].Content != mid.Content {
		t.Errorf("the model read %d messages starting %q, %q; want both system messages first", len(seen), seen[0].Content, seen[1].Content)
	}
}

func TestWindowOllamaContextShift(t *testing.T) {
	srv := llmtest.New(t)
	srv.SetDefault(llmtest.Text("ok"))
	srv.SetWindow(512, llmtest.BehaviourOllama)
	req := userRequest(strings.Repeat("word ", 2000))
	resp, err := newClient(srv).CreateChatCompletion(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	got := srv.Requests()[0]
	// Nothing to drop, but the runner's context shift keeps 512 -
	// (512-5)/2 tokens.
	if !got.Cut || got.Dropped != 0 || resp.Usage.PromptTokens != 512-(512-5)/2 {
		t.Errorf("cut %v dropped %d usage %d, want cut by the context shift to %d", got.Cut, got.Dropped, resp.Usage.PromptTokens, 512-(512-5)/2)
	}
}

func TestWindowOpenAIRefuses(t *testing.T) {
	req := longChat(20)
	full := llmtest.PromptTokens(req)
	tests := []struct {
		name      string
		window    int
		maxTokens int
		wantMsg   string // "" = fits
	}{
		{name: "over", window: 512,
			wantMsg: fmt.Sprintf("This model's maximum context length is 512 tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", full)},
		{name: "exactly the window", window: full},
		{name: "the answer's reserve over", window: full + 100, maxTokens: 101,
			wantMsg: fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, 101 in the completion). Please reduce the length of the messages or completion.", full+100, full+101, full)},
		{name: "the answer's reserve within", window: full + 100, maxTokens: 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.New(t)
			srv.Enqueue(llmtest.Text("ok"))
			srv.SetWindow(tt.window, llmtest.BehaviourOpenAI)
			r := req
			r.MaxTokens = tt.maxTokens
			resp, err := newClient(srv).CreateChatCompletion(context.Background(), r)
			cut := srv.Requests()[0].Cut
			if tt.wantMsg == "" {
				if err != nil || cut || resp.Usage.PromptTokens != full {
					t.Fatalf("err %v cut %v usage %d, want an answer with usage %d", err, cut, resp.Usage.PromptTokens, full)
				}
				return
			}
			var apiErr *openai.APIError
			if !errors.As(err, &apiErr) {
				t.Fatalf("err = %v, want an APIError", err)
			}
			param := ""
			if apiErr.Param != nil {
				param = *apiErr.Param
			}
			got := [5]any{apiErr.HTTPStatusCode, apiErr.Type, apiErr.Code, param, apiErr.Message}
			want := [5]any{http.StatusBadRequest, "invalid_request_error", "context_length_exceeded", "messages", tt.wantMsg}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("error (-want +got):\n%s", d)
			}
			if !cut || srv.Pending() != 1 || len(srv.CutRequests()) != 1 {
				t.Errorf("cut %v pending %d: want the request marked cut and the script untouched", cut, srv.Pending())
			}
		})
	}
}

func TestWindowStreamUsage(t *testing.T) {
	srv := llmtest.New(t)
	srv.SetDefault(llmtest.Text("ok"))
	srv.SetWindow(512, llmtest.BehaviourOllama)
	req := longChat(20)
	req.Stream = true
	req.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	chunks, err := streamChat(t, newClient(srv), req)
	if err != nil {
		t.Fatal(err)
	}
	u := chunks[len(chunks)-1].Usage
	if u == nil || u.PromptTokens > 512 || u.PromptTokens < 400 {
		t.Errorf("stream usage %+v, want the kept prompt's tokens (400 to 512)", u)
	}
}

// getJSON does one request to srv and decodes the answer.
func getJSON(t *testing.T, srv *llmtest.Server, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, strings.TrimSuffix(srv.URL(), "/v1")+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func TestNativeEndpoints(t *testing.T) {
	t.Run("openai has none", func(t *testing.T) {
		srv := llmtest.New(t)
		srv.SetWindow(8192, llmtest.BehaviourOpenAI)
		for _, p := range []string{"/api/ps", "/api/show"} {
			if code, _ := getJSON(t, srv, http.MethodGet, p, ""); code != http.StatusNotFound {
				t.Errorf("%s: %d, want 404", p, code)
			}
		}
	})
	t.Run("ollama", func(t *testing.T) {
		srv := llmtest.New(t)
		srv.SetFlavour(llmtest.FlavourOllama)
		srv.SetWindow(8192, llmtest.BehaviourOllama)
		if _, ps := getJSON(t, srv, http.MethodGet, "/api/ps", ""); fmt.Sprint(ps["models"]) != "[]" {
			t.Errorf("/api/ps before any request = %v, want no model loaded", ps)
		}
		_, show := getJSON(t, srv, http.MethodPost, "/api/show", `{"model":"llama3.1:8b"}`)
		info, _ := show["model_info"].(map[string]any)
		if show["parameters"] != `stop                           "<|eot_id|>"`+"\n"+`num_ctx                        8192` || info["llama.context_length"] != 131072.0 {
			t.Errorf("/api/show = parameters %q, model_info %v", show["parameters"], info)
		}
		if fmt.Sprint(show["capabilities"]) != "[completion tools]" {
			t.Errorf("/api/show capabilities = %v, want [completion tools]", show["capabilities"])
		}
		srv.SetOllamaModel(llmtest.OllamaModel{Name: "qwen3:8b", Thinking: true})
		if _, show := getJSON(t, srv, http.MethodPost, "/api/show", `{"model":"qwen3:8b"}`); fmt.Sprint(show["capabilities"]) != "[completion tools thinking]" {
			t.Errorf("/api/show of a thinking model: capabilities = %v, want [completion tools thinking]", show["capabilities"])
		}
		srv.SetDefault(llmtest.Text("ok"))
		if _, err := newClient(srv).CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{
			Model: "llama3.1:8b", Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "hi"}}}); err != nil {
			t.Fatal(err)
		}
		_, ps := getJSON(t, srv, http.MethodGet, "/api/ps", "")
		models, _ := ps["models"].([]any)
		if len(models) != 1 || models[0].(map[string]any)["name"] != "llama3.1:8b" || models[0].(map[string]any)["context_length"] != 8192.0 {
			t.Errorf("/api/ps after a request = %v, want llama3.1:8b loaded with 8192", ps)
		}
		if code, _ := getJSON(t, srv, http.MethodPost, "/api/show", `{}`); code != http.StatusBadRequest {
			t.Errorf("/api/show without a model: %d, want 400", code)
		}
	})
	t.Run("vllm", func(t *testing.T) {
		srv := llmtest.New(t)
		srv.SetFlavour(llmtest.FlavourVLLM)
		srv.SetWindow(32768, llmtest.BehaviourOpenAI)
		_, list := getJSON(t, srv, http.MethodGet, "/v1/models", "")
		data, _ := list["data"].([]any)
		if len(data) != 1 || data[0].(map[string]any)["id"] != "llmtest" || data[0].(map[string]any)["max_model_len"] != 32768.0 {
			t.Errorf("/v1/models = %v, want llmtest with max_model_len 32768", list)
		}
	})
}
