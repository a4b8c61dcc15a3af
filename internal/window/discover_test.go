package window_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/window"
	openai "github.com/sashabaranov/go-openai"
)

func discover(t *testing.T, baseURL, key, model string) (window.Window, bool) {
	t.Helper()
	return window.Discover(nil)(context.Background(), baseURL, key, model)
}

func TestDiscoverLLMTest(t *testing.T) {
	chat := func(t *testing.T, srv *llmtest.Server, model string) {
		t.Helper()
		srv.SetDefault(llmtest.Text("ok"))
		req := openai.ChatCompletionRequest{Model: model, Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "hi"}}}
		if _, err := openai.NewClientWithConfig(srv.ClientConfig()).CreateChatCompletion(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	// ollama serves m as Ollama would; vllm serves models as vLLM would,
	// each with a window of tokens.
	ollama := func(m llmtest.OllamaModel) func(*testing.T, *llmtest.Server) {
		return func(t *testing.T, srv *llmtest.Server) {
			srv.SetFlavour(llmtest.FlavourOllama)
			srv.SetOllamaModel(m)
		}
	}
	vllm := func(tokens int, models ...string) func(*testing.T, *llmtest.Server) {
		return func(t *testing.T, srv *llmtest.Server) {
			srv.SetFlavour(llmtest.FlavourVLLM)
			srv.SetWindow(tokens, llmtest.BehaviourOpenAI)
			srv.SetModels(models...)
		}
	}
	tests := []struct {
		name  string
		setup func(t *testing.T, srv *llmtest.Server)
		model string
		want  window.Window
		ok    bool
	}{
		{name: "ollama num_ctx before the model is loaded", model: "llama3.1:8b",
			setup: func(t *testing.T, srv *llmtest.Server) {
				srv.SetFlavour(llmtest.FlavourOllama)
				srv.SetWindow(8192, llmtest.BehaviourOllama)
			},
			want: window.Window{Tokens: 8192, Source: window.SourceOllamaShow}, ok: true},
		{name: "ollama loaded runner", model: "llama3.1:8b",
			setup: func(t *testing.T, srv *llmtest.Server) {
				srv.SetFlavour(llmtest.FlavourOllama)
				srv.SetWindow(8192, llmtest.BehaviourOllama)
				chat(t, srv, "llama3.1:8b")
			},
			want: window.Window{Tokens: 8192, Source: window.SourceOllamaPS}, ok: true},
		{name: "ollama loaded, untagged name", model: "llama3.1",
			setup: ollama(llmtest.OllamaModel{Name: "llama3.1:latest", Loaded: 16384}),
			want:  window.Window{Tokens: 16384, Source: window.SourceOllamaPS}, ok: true},
		{name: "ollama without num_ctx: the server's default assumed", model: "llama3.1:8b",
			setup: func(t *testing.T, srv *llmtest.Server) {
				srv.SetFlavour(llmtest.FlavourOllama)
			},
			want: window.Window{Tokens: window.Default, Source: window.SourceOllamaDefault}, ok: true},
		{name: "ollama num_ctx over the trained context", model: "qwen3:8b",
			setup: ollama(llmtest.OllamaModel{Name: "qwen3:8b", Arch: "qwen3", Trained: 40960, NumCtx: 65536}),
			want:  window.Window{Tokens: 40960, Source: window.SourceOllamaShow}, ok: true},
		{name: "ollama default over a small trained context", model: "tinyllama",
			setup: ollama(llmtest.OllamaModel{Name: "tinyllama", Trained: 2048}),
			want:  window.Window{Tokens: 2048, Source: window.SourceOllamaDefault}, ok: true},
		{name: "vllm max_model_len", model: "Qwen/Qwen3-8B", setup: vllm(32768, "Qwen/Qwen3-8B"),
			want: window.Window{Tokens: 32768, Source: window.SourceVLLM}, ok: true},
		{name: "vllm, another model", model: "other", setup: vllm(32768, "Qwen/Qwen3-8B")},
		{name: "vllm with the key the endpoint requires", model: "llmtest",
			setup: func(t *testing.T, srv *llmtest.Server) {
				srv.SetFlavour(llmtest.FlavourVLLM)
				srv.SetWindow(4096, llmtest.BehaviourOpenAI)
				srv.RequireKey("sk-test")
			},
			want: window.Window{Tokens: 4096, Source: window.SourceVLLM}, ok: true},
		{name: "openai says nothing", model: "gpt-4o",
			setup: func(t *testing.T, srv *llmtest.Server) {
				srv.SetWindow(128000, llmtest.BehaviourOpenAI)
				srv.SetModels("gpt-4o")
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.New(t)
			tt.setup(t, srv)
			got, ok := discover(t, srv.URL(), "sk-test", tt.model)
			if got != tt.want || ok != tt.ok {
				t.Errorf("Discover = %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

// The answers below are written from the upstream types at the versions
// Longhaul pins: ollama v0.32.15 api/types.go (ProcessResponse,
// ProcessModelResponse, ShowResponse; server/routes.go GetModelInfo's
// "%-30s %#v" parameter lines) and vLLM's ModelCard
// (vllm/entrypoints/openai/protocol.py), with the values of llama3.1:8b.
const (
	psLlama = `{"models":[{"name":"qwen3:8b","model":"qwen3:8b","size":6654289920,"digest":"500a1f067a9f782620b40bee6f7b0c89e17ae61f686b92c24933e4ca4b2b8b41","details":{"parent_model":"","format":"gguf","family":"qwen3","families":["qwen3"],"parameter_size":"8.2B","quantization_level":"Q4_K_M"},"expires_at":"2026-09-01T12:05:00.000000000Z","size_vram":6654289920,"context_length":40960},
{"name":"llama3.1:8b","model":"llama3.1:8b","size":5592064000,"digest":"46e0c10c039e019119339687c3c1757cc81b9da49709a3b3924863ba87ca666e","details":{"parent_model":"","format":"gguf","family":"llama","families":["llama"],"parameter_size":"8.0B","quantization_level":"Q4_K_M"},"expires_at":"2026-09-01T12:04:00.000000000Z","size_vram":5592064000,"context_length":4096}]}`
	psEmpty         = `{"models":[]}`
	showLlamaNumCtx = `{"license":"LLAMA 3.1 COMMUNITY LICENSE AGREEMENT","modelfile":"# Modelfile generated by \"ollama show\"\nFROM llama3.1:8b\nPARAMETER num_ctx 16384\n","parameters":"num_ctx                        16384\nstop                           \"<|start_header_id|>\"\nstop                           \"<|end_header_id|>\"\nstop                           \"<|eot_id|>\"","template":"<|start_header_id|>system<|end_header_id|>...","details":{"parent_model":"","format":"gguf","family":"llama","families":["llama"],"parameter_size":"8.0B","quantization_level":"Q4_K_M"},"model_info":{"general.architecture":"llama","general.basename":"Meta-Llama-3.1","general.file_type":15,"general.parameter_count":8030261248,"general.quantization_version":2,"llama.attention.head_count":32,"llama.attention.head_count_kv":8,"llama.attention.layer_norm_rms_epsilon":0.00001,"llama.block_count":32,"llama.context_length":131072,"llama.embedding_length":4096,"llama.feed_forward_length":14336,"llama.rope.dimension_count":128,"llama.rope.freq_base":500000,"llama.vocab_size":128256,"tokenizer.ggml.bos_token_id":128000,"tokenizer.ggml.eos_token_id":128009,"tokenizer.ggml.model":"gpt2","tokenizer.ggml.pre":"llama-bpe"},"capabilities":["completion","tools"],"modified_at":"2026-08-20T10:00:00Z"}`
	showLlamaPlain  = `{"modelfile":"# Modelfile generated by \"ollama show\"\nFROM llama3.1:8b\n","parameters":"stop                           \"<|start_header_id|>\"\nstop                           \"<|end_header_id|>\"\nstop                           \"<|eot_id|>\"","details":{"format":"gguf","family":"llama"},"model_info":{"general.architecture":"llama","llama.context_length":131072,"llama.block_count":32},"capabilities":["completion","tools"]}`
	vllmModels      = `{"object":"list","data":[{"id":"meta-llama/Llama-3.1-8B-Instruct","object":"model","created":1767225600,"owned_by":"vllm","root":"meta-llama/Llama-3.1-8B-Instruct","parent":null,"max_model_len":32768,"permission":[{"id":"modelperm-1","object":"model_permission","created":1767225600,"allow_create_engine":false,"allow_sampling":true,"allow_logprobs":true,"allow_search_indices":false,"allow_view":true,"allow_fine_tuning":false,"organization":"*","group":null,"is_blocking":false}]}]}`
	openaiModels    = `{"object":"list","data":[{"id":"gpt-4o","object":"model","created":1715367049,"owned_by":"system"}]}`
)

// upstream serves canned answers by "METHOD path", 404 for the rest, and
// records what it was asked.
func upstream(t *testing.T, answers map[string]string) (*httptest.Server, *[]string) {
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Method + " " + r.URL.Path
		body, _ := io.ReadAll(r.Body)
		asked = append(asked, strings.TrimSpace(key+" "+string(body)))
		a, ok := answers[key]
		if !ok {
			http.Error(w, `{"error":"not found"}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, a)
	}))
	t.Cleanup(srv.Close)
	return srv, &asked
}

func TestDiscoverUpstreamAnswers(t *testing.T) {
	tests := []struct {
		name    string
		answers map[string]string
		model   string
		want    window.Window
		ok      bool
		asked   []string
	}{
		{name: "ollama, loaded", model: "llama3.1:8b",
			answers: map[string]string{"GET /api/ps": psLlama, "POST /api/show": showLlamaNumCtx},
			want:    window.Window{Tokens: 4096, Source: window.SourceOllamaPS}, ok: true,
			asked: []string{"GET /api/ps"}},
		{name: "ollama, not loaded, Modelfile num_ctx", model: "llama3.1:8b",
			answers: map[string]string{"GET /api/ps": psEmpty, "POST /api/show": showLlamaNumCtx},
			want:    window.Window{Tokens: 16384, Source: window.SourceOllamaShow}, ok: true,
			asked: []string{"GET /api/ps", `POST /api/show {"model":"llama3.1:8b"}`}},
		{name: "ollama, not loaded, no num_ctx", model: "llama3.1:8b",
			answers: map[string]string{"GET /api/ps": psEmpty, "POST /api/show": showLlamaPlain},
			want:    window.Window{Tokens: 4096, Source: window.SourceOllamaDefault}, ok: true,
			asked: []string{"GET /api/ps", `POST /api/show {"model":"llama3.1:8b"}`}},
		{name: "ollama, unknown model", model: "nope",
			answers: map[string]string{"GET /api/ps": psEmpty},
			asked:   []string{"GET /api/ps", `POST /api/show {"model":"nope"}`, "GET /v1/models"}},
		{name: "vllm", model: "meta-llama/Llama-3.1-8B-Instruct",
			answers: map[string]string{"GET /v1/models": vllmModels},
			want:    window.Window{Tokens: 32768, Source: window.SourceVLLM}, ok: true,
			asked: []string{"GET /api/ps", "GET /v1/models"}},
		{name: "openai", model: "gpt-4o",
			answers: map[string]string{"GET /v1/models": openaiModels},
			asked:   []string{"GET /api/ps", "GET /v1/models"}},
		{name: "a proxy that answers 200 with HTML", model: "gpt-4o",
			answers: map[string]string{"GET /api/ps": "<html>hello</html>", "GET /v1/models": "<html>hello</html>"},
			asked:   []string{"GET /api/ps", "GET /v1/models"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, asked := upstream(t, tt.answers)
			got, ok := discover(t, srv.URL+"/v1", "", tt.model)
			if got != tt.want || ok != tt.ok {
				t.Errorf("Discover = %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
			if strings.Join(*asked, "\n") != strings.Join(tt.asked, "\n") {
				t.Errorf("asked\n%s\nwant\n%s", strings.Join(*asked, "\n"), strings.Join(tt.asked, "\n"))
			}
		})
	}
}

func TestDiscoverNeverFails(t *testing.T) {
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	t.Cleanup(hang.Close)
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()

	for _, base := range []string{"", "not a url", "ftp://host/v1", closed.URL + "/v1"} {
		if w, ok := discover(t, base, "", "m"); ok {
			t.Errorf("Discover(%q) = %+v, want nothing", base, w)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if w, ok := window.Discover(nil)(ctx, hang.URL+"/v1", "", "m"); ok {
		t.Errorf("a hanging endpoint gave %+v", w)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("a hanging endpoint held the caller %v past its context", d)
	}
}

func TestDiscoverThroughResolver(t *testing.T) {
	srv := llmtest.New(t)
	srv.SetFlavour(llmtest.FlavourOllama)
	srv.SetWindow(8192, llmtest.BehaviourOllama)
	r := window.NewResolver(window.Settings{"other": 2048}, window.Discover(nil))
	got := r.Window(context.Background(), window.Target{Ref: "llama3.1:8b", BaseURL: srv.URL(), Model: "llama3.1:8b"}, 0)
	if want := (window.Window{Tokens: 8192, Source: window.SourceOllamaShow}); got != want {
		t.Errorf("Window = %+v, want %+v", got, want)
	}
}
