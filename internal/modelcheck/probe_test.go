package modelcheck

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// fakeServer is an Ollama (GET /api/tags, POST /api/show with
// capabilities) or a vLLM (GET /v1/models with vLLM's ModelCard, POST
// /v1/chat/completions refusing tools unless tools is set) or a plain
// OpenAI-compatible list; chats counts the chat requests it got.
type fakeServer struct {
	ollama, vllm, tools bool
	models              []string
	// capable are the Ollama models whose capabilities list tools,
	// thinkers those whose capabilities list thinking.
	capable, thinkers []string
	chats             atomic.Int32
	lastMax           atomic.Int32
}

func (f *fakeServer) start(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case f.ollama && r.URL.Path == "/api/tags":
			ms := []map[string]string{}
			for _, m := range f.models {
				ms = append(ms, map[string]string{"name": m, "model": m})
			}
			json.NewEncoder(w).Encode(map[string]any{"models": ms})
		case f.ollama && r.URL.Path == "/api/show":
			var req struct{ Model string }
			json.NewDecoder(r.Body).Decode(&req)
			caps := []string{"completion"}
			if slices.Contains(f.capable, req.Model) {
				caps = append(caps, "tools")
			}
			if slices.Contains(f.thinkers, req.Model) {
				caps = append(caps, "thinking")
			}
			json.NewEncoder(w).Encode(map[string]any{"capabilities": caps})
		case !f.ollama && r.URL.Path == "/v1/models":
			var cards []map[string]any
			for _, m := range f.models {
				c := map[string]any{"id": m, "object": "model", "owned_by": "openai"}
				if f.vllm {
					c["owned_by"], c["max_model_len"] = "vllm", 32768
				}
				cards = append(cards, c)
			}
			json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": cards})
		case r.URL.Path == "/v1/chat/completions":
			f.chats.Add(1)
			var req struct {
				MaxTokens int               `json:"max_tokens"`
				Tools     []json.RawMessage `json:"tools"`
			}
			json.NewDecoder(r.Body).Decode(&req)
			f.lastMax.Store(int32(req.MaxTokens))
			if len(req.Tools) > 0 && !f.tools {
				w.WriteHeader(http.StatusBadRequest)
				io.WriteString(w, `{"error":{"message":"\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set","type":"BadRequestError","param":null,"code":400}}`)
				return
			}
			io.WriteString(w, `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"p"},"finish_reason":"length"}]}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

func TestProbe(t *testing.T) {
	tests := []struct {
		name    string
		server  *fakeServer
		models  []string
		problem string
		fix     string
		tools   string
		chats   int32
		// thinking are the models reported thinking.
		thinking []string
	}{
		{"ollama has all, with tools", &fakeServer{ollama: true, models: []string{"qwen3:8b", "llama3.1:latest"}, capable: []string{"qwen3:8b", "llama3.1"}},
			[]string{"qwen3:8b", "llama3.1"}, "", "", ToolsAccepted, 0, nil},
		{"ollama model that thinks", &fakeServer{ollama: true, models: []string{"qwen3:8b", "llama3.1:latest"}, capable: []string{"qwen3:8b", "llama3.1"}, thinkers: []string{"qwen3:8b"}},
			[]string{"llama3.1", "qwen3:8b"}, "", "", ToolsAccepted, 0, []string{"qwen3:8b"}},
		{"ollama lacks two", &fakeServer{ollama: true, models: []string{"qwen3:8b"}, capable: []string{"qwen3:8b"}},
			[]string{"qwen3:8b", "gpt-oss:20b", "deepseek-r1:8b"}, "Ollama has no gpt-oss:20b, deepseek-r1:8b (it has qwen3:8b)", "ollama pull gpt-oss:20b && ollama pull deepseek-r1:8b", ToolsAccepted, 0, nil},
		{"ollama model without tools", &fakeServer{ollama: true, models: []string{"gemma2:2b", "qwen3:8b"}, capable: []string{"qwen3:8b"}, thinkers: []string{"qwen3:8b"}},
			[]string{"qwen3:8b", "gemma2:2b"}, "", "", "not supported by gemma2:2b (Ollama's capabilities); give its agents a model that lists tools", 0, []string{"qwen3:8b"}},
		{"vllm refuses tools", &fakeServer{vllm: true, models: []string{"Qwen/Qwen3-8B"}},
			[]string{"Qwen/Qwen3-8B"}, "", "", "refused; " + AutoToolChoiceFix, 1, nil},
		{"vllm takes tools", &fakeServer{vllm: true, tools: true, models: []string{"Qwen/Qwen3-8B"}},
			[]string{"Qwen/Qwen3-8B"}, "", "", ToolsAccepted, 1, nil},
		{"openai is sent nothing", &fakeServer{models: []string{"gpt-4o", "gpt-4o-mini"}},
			[]string{"gpt-4o", "gpt-4o-mini"}, "", "", ToolsUnknown, 0, nil},
		{"openai lacks one", &fakeServer{models: []string{"gpt-4o"}},
			[]string{"gpt-4o", "gpt-5"}, "does not list gpt-5 (it lists gpt-4o)", "name models it lists in the agents' model: and models:", ToolsUnknown, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := tt.server.start(t)
			r := Probe(context.Background(), &http.Client{}, url, "", tt.models)
			if !r.Reachable {
				t.Fatalf("not reachable: %+v", r)
			}
			if !strings.Contains(r.Problem, tt.problem) || tt.problem == "" && r.Problem != "" {
				t.Errorf("Problem = %q, want %q", r.Problem, tt.problem)
			}
			if r.Fix != tt.fix {
				t.Errorf("Fix = %q, want %q", r.Fix, tt.fix)
			}
			if r.Tools != tt.tools {
				t.Errorf("Tools = %q, want %q", r.Tools, tt.tools)
			}
			if !slices.Equal(r.Thinking, tt.thinking) {
				t.Errorf("Thinking = %q, want %q", r.Thinking, tt.thinking)
			}
			if n := tt.server.chats.Load(); n != tt.chats {
				t.Errorf("chat requests = %d, want %d", n, tt.chats)
			}
			if tt.chats > 0 && tt.server.lastMax.Load() != 1 {
				t.Errorf("probe's max_tokens = %d, want 1", tt.server.lastMax.Load())
			}
		})
	}
}

func TestProbeStatus(t *testing.T) {
	r := Result{Reachable: true, Listed: true, VLLM: true, Models: []string{"m"}, Tools: "refused; " + AutoToolChoiceFix}
	want := "m is there; tools refused; " + AutoToolChoiceFix
	if got := r.Status("m"); got != want {
		t.Errorf("Status = %q, want %q", got, want)
	}
	r = Result{Reachable: true, Listed: true, Ollama: true, Models: []string{"qwen3:8b"}, Tools: ToolsAccepted, Thinking: []string{"qwen3:8b", "gpt-oss:20b"}}
	want = "qwen3:8b is there; tools accepted; thinking: qwen3:8b, gpt-oss:20b (room kept to think)"
	if got := r.Status("qwen3:8b"); got != want {
		t.Errorf("Status = %q, want %q", got, want)
	}
}

func TestIsOllama(t *testing.T) {
	for _, tt := range []struct {
		name   string
		server *fakeServer
		want   bool
	}{
		{"ollama", &fakeServer{ollama: true}, true},
		{"vllm", &fakeServer{vllm: true}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := IsOllama(context.Background(), &http.Client{}, tt.server.start(t), "")
			if err != nil || got != tt.want {
				t.Errorf("IsOllama = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
	if _, err := IsOllama(context.Background(), &http.Client{}, closedURL(t), ""); err == nil {
		t.Error("IsOllama of a closed port: no error")
	}
}
