package main

import (
	"bytes"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/internal/config"
	"github.com/longhaul-dev/longhaul/internal/modelcheck"
	"github.com/longhaul-dev/longhaul/skills"
)

// TestCheckModelEndpoints: the start-up check asks every endpoint of the
// models sent to it. The default endpoint, an Ollama, lacks one of its
// models, which the banner names with `ollama pull`; the named endpoint,
// a vLLM started without --enable-auto-tool-choice, refuses tools, which
// the banner says with the flags; an endpoint no model uses is not asked.
// The Ollama's models that think (its capabilities), on the default
// endpoint and on one named for the same Ollama, are in the banner and are
// what the activities are told, by endpoint.
func TestCheckModelEndpoints(t *testing.T) {
	ollama := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/tags":
			io.WriteString(w, `{"models":[{"name":"qwen3:8b","model":"qwen3:8b"}]}`)
		case "/api/show":
			io.WriteString(w, `{"capabilities":["completion","tools","thinking"]}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer ollama.Close()
	vllm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			io.WriteString(w, `{"object":"list","data":[{"id":"Qwen/Qwen3-8B","object":"model","owned_by":"vllm","max_model_len":32768}]}`)
		case "/v1/chat/completions":
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"message":"\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set","type":"BadRequestError","param":null,"code":400}}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer vllm.Close()
	idle := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("an endpoint no model uses was asked %s", r.URL.Path)
	}))
	defer idle.Close()

	cat, err := skills.Load(skills.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Config{
		LLMBaseURL:   ollama.URL + "/v1",
		LLMModel:     "qwen3:8b,gpt-oss:20b,gpu:Qwen/Qwen3-8B,box:qwen3:8b",
		LLMEndpoints: "gpu=" + vllm.URL + "/v1,spare=" + idle.URL + "/v1,box=" + ollama.URL + "/v1",
	}
	var logs bytes.Buffer
	check := checkModel(t.Context(), cfg, cat)
	line := checkedLine(cfg, check, slog.New(slog.NewTextHandler(&logs, nil)))
	for _, want := range []string{
		ollama.URL + "/v1 (default qwen3:8b,gpt-oss:20b,gpu:Qwen/Qwen3-8B,box:qwen3:8b): Ollama has no gpt-oss:20b (it has qwen3:8b); fix: ollama pull gpt-oss:20b; tools accepted; thinking: qwen3:8b (room kept to think)",
		"; endpoint gpu " + vllm.URL + "/v1: Qwen/Qwen3-8B is there; tools refused; " + modelcheck.AutoToolChoiceFix + ";",
		"; endpoint spare " + idle.URL + "/v1: not used by any agent",
		"; endpoint box " + ollama.URL + "/v1: qwen3:8b is there; tools accepted; thinking: qwen3:8b (room kept to think)",
	} {
		if !strings.Contains(line, want) {
			t.Errorf("banner line %q\nlacks %q", line, want)
		}
	}
	if !strings.Contains(logs.String(), `fix="ollama pull gpt-oss:20b"`) {
		t.Errorf("logs %q lack the pull", logs.String())
	}
	// The same answers again, for the activities: by endpoint, as the ids
	// each is sent.
	if got, want := thinkingModels(check), map[string][]string{"": {"qwen3:8b"}, "box": {"qwen3:8b"}}; !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("thinkingModels = %v, want %v", got, want)
	}
}
