package activities_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/contract"
)

// server is a model server answering each chat request with one fixed
// status and body, as a real one writes them, and, when ollama, Ollama's
// GET /api/tags. It keeps the chat requests' bodies.
type server struct {
	mu     sync.Mutex
	bodies []map[string]any
}

func newServer(t *testing.T, ollama bool, status int, body string) (*server, string) {
	t.Helper()
	s := &server{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case ollama && r.URL.Path == "/api/tags":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"models":[{"name":"llmtest:latest","model":"llmtest:latest"}]}`)
		case r.URL.Path == "/v1/chat/completions":
			var req map[string]any
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
				t.Errorf("decode chat request: %v", err)
			}
			s.mu.Lock()
			s.bodies = append(s.bodies, req)
			s.mu.Unlock()
			if status == http.StatusOK {
				w.Header().Set("Content-Type", "text/event-stream")
			} else {
				w.Header().Set("Content-Type", "application/json")
			}
			w.WriteHeader(status)
			io.WriteString(w, body)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return s, srv.URL + "/v1"
}

func (s *server) requests() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.bodies...)
}

// TestChatCompletionReadsServerErrors: each server's refusal is read as
// it writes it. vLLM's over-long input (400, code the number 400, "maximum
// context length") is a context error, which a fallback model may take;
// vLLM's refusal of tools names the flags it needs; a model Ollama has not
// pulled is named with `ollama pull`, in either of Ollama's wordings.
func TestChatCompletionReadsServerErrors(t *testing.T) {
	tests := []struct {
		name         string
		ollama       bool
		status       int
		body         string
		typ          string
		nonRetryable bool
		msg          string
	}{
		{"vllm context length", false, 400,
			`{"error":{"message":"This model's maximum context length is 4096 tokens. However, your request has 5000 input tokens.","type":"BadRequestError","param":"input_tokens","code":400}}`,
			longhaul.ErrTypeContextLength, true, "maximum context length is 4096 tokens"},
		{"vllm context length, renderer's words", false, 400,
			`{"error":{"message":"You passed 4097 input tokens and requested 0 output tokens. However, the model's context length is only 4096 tokens, resulting in a maximum input length of 4096 tokens. Please reduce the length of the input prompt.","type":"BadRequestError","param":"input_tokens","code":400}}`,
			longhaul.ErrTypeContextLength, true, "context length is only 4096"},
		{"vllm output over the window", false, 400,
			`{"error":{"message":"max_completion_tokens=9000 cannot be greater than max_model_len=4096. Please request fewer output tokens.","type":"BadRequestError","param":"max_completion_tokens","code":400}}`,
			longhaul.ErrTypeContextLength, true, "max_model_len=4096"},
		{"vllm refuses required", false, 400,
			`{"error":{"message":"tool_choice=\"required\" requires --tool-call-parser to be set","type":"BadRequestError","param":null,"code":400}}`,
			longhaul.ErrTypeModelRejected, true, "the server refuses tool calls"},
		{"openai context length", false, 400,
			`{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
			longhaul.ErrTypeContextLength, true, "8192"},
		{"vllm refuses tools", false, 400,
			`{"error":{"message":"\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set","type":"BadRequestError","param":null,"code":400}}`,
			longhaul.ErrTypeModelRejected, true, "the server refuses tool calls: start vLLM with --enable-auto-tool-choice --tool-call-parser"},
		{"ollama not found", true, 404,
			`{"error":{"message":"model 'qwen3:8b' not found","type":"not_found_error","param":null}}`,
			longhaul.ErrTypeModelRejected, true, "model 'qwen3:8b' not found; pull it on the Ollama host: `ollama pull qwen3:8b`"},
		{"ollama try pulling", true, 404,
			`{"error":{"message":"model \"qwen3:8b\" not found, try pulling it first","type":"not_found_error","param":null}}`,
			longhaul.ErrTypeModelRejected, true, "`ollama pull qwen3:8b`"},
		{"another 400 is the server's alone", false, 400,
			`{"error":{"message":"messages must not be empty","type":"BadRequestError","code":400}}`,
			longhaul.ErrTypeModelRejected, true, "model endpoint answered 400: messages must not be empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, url := newServer(t, tt.ollama, tt.status, tt.body)
			f := newFixture(t, nil, func(c *activities.LLMConfig) { c.BaseURL = url })
			_, err := chat(t, f.activityEnv(), f.acts, contract.ModelRequest{Call: "turn-1", Agent: "assistant", Messages: userMessage("hi"), Tools: []string{"probe"}})
			app := wantAppError(t, err, tt.typ, tt.nonRetryable, tt.msg)
			if tt.typ != longhaul.ErrTypeContextLength && strings.Contains(app.Error(), "ollama pull") != tt.ollama {
				t.Errorf("error %q: ollama pull named = %v, want %v", app.Error(), !tt.ollama, tt.ollama)
			}
		})
	}
}

// twoCalls is a streamed answer with two tool calls in one chunk, as
// Ollama sends them (whole, with call_ ids).
const twoCalls = `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"llmtest","choices":[{"index":0,"delta":{"role":"assistant","content":"","tool_calls":[{"id":"call_first00","index":0,"type":"function","function":{"name":"probe","arguments":"{\"q\":\"one\"}"}},{"id":"call_second0","index":1,"type":"function","function":{"name":"probe","arguments":"{\"q\":\"two\"}"}}]},"finish_reason":null}]}

data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"llmtest","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":"tool_calls"}]}

data: [DONE]

`

// TestChatCompletionEnforcesIgnoredParams: what Ollama ignores, Longhaul
// does itself. tool_choice "none" sends no tools; parallel_tool_calls
// false keeps one call of an answer; max_completion_tokens reaches an
// Ollama as max_tokens, and any other server as itself.
func TestChatCompletionEnforcesIgnoredParams(t *testing.T) {
	no := false
	tests := []struct {
		name      string
		ollama    bool
		opts      longhaul.ModelOptions
		calls     []string
		wantTools bool
		max       map[string]any
	}{
		{"plain", true, longhaul.ModelOptions{}, []string{"call_first00", "call_second0"}, true, map[string]any{}},
		{"tool_choice none", true, longhaul.ModelOptions{ToolChoice: json.RawMessage(`"none"`)}, []string{"call_first00", "call_second0"}, false, map[string]any{}},
		{"tool_choice auto", true, longhaul.ModelOptions{ToolChoice: json.RawMessage(`"auto"`)}, []string{"call_first00", "call_second0"}, true, map[string]any{}},
		{"parallel_tool_calls false", true, longhaul.ModelOptions{ParallelToolCalls: &no}, []string{"call_first00"}, true, map[string]any{}},
		{"max_completion_tokens to ollama", true, longhaul.ModelOptions{MaxCompletionTokens: 300}, []string{"call_first00", "call_second0"}, true, map[string]any{"max_tokens": 300.0}},
		{"max_completion_tokens elsewhere", false, longhaul.ModelOptions{MaxCompletionTokens: 300}, []string{"call_first00", "call_second0"}, true, map[string]any{"max_completion_tokens": 300.0}},
		{"max_tokens stays", true, longhaul.ModelOptions{MaxTokens: 200}, []string{"call_first00", "call_second0"}, true, map[string]any{"max_tokens": 200.0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, url := newServer(t, tt.ollama, http.StatusOK, twoCalls)
			f := newFixture(t, nil, func(c *activities.LLMConfig) { c.BaseURL = url })
			got, err := chat(t, f.activityEnv(), f.acts, contract.ModelRequest{Call: "turn-1", Agent: "assistant", Messages: userMessage("probe"), Tools: []string{"probe"}, Options: tt.opts})
			if err != nil {
				t.Fatalf("ChatCompletion: %v", err)
			}
			var ids []string
			for _, c := range got.Message.ToolCalls {
				ids = append(ids, c.ID)
			}
			diff(t, "tool calls", tt.calls, ids)
			reqs := srv.requests()
			if len(reqs) != 1 {
				t.Fatalf("server got %d chat requests, want 1", len(reqs))
			}
			req := reqs[0]
			if _, has := req["tools"]; has != tt.wantTools {
				t.Errorf("request has tools = %v, want %v", has, tt.wantTools)
			}
			if _, has := req["tool_choice"]; has && !tt.wantTools {
				t.Errorf("request without tools has tool_choice %v", req["tool_choice"])
			}
			gotMax := map[string]any{}
			for _, k := range []string{"max_tokens", "max_completion_tokens"} {
				if v, ok := req[k]; ok {
					gotMax[k] = v
				}
			}
			diff(t, "limits", tt.max, gotMax)
		})
	}
}
