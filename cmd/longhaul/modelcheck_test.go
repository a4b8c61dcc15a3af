package main

import (
	"bytes"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/internal/config"
	"github.com/longhaul-dev/longhaul/internal/modelcheck"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
)

// TestModelLine checks the start banner's model line and its warning for
// what the model check finds.
func TestModelLine(t *testing.T) {
	cfg := config.Config{LLMBaseURL: "http://localhost:11434/v1", LLMModel: "llama3.1:8b"}
	tests := []struct {
		name   string
		result modelcheck.Result
		line   string
		warn   string
	}{
		{"there", modelcheck.Result{Reachable: true, Ollama: true, Listed: true, Models: []string{"llama3.1:8b"}},
			"http://localhost:11434/v1 (default llama3.1:8b): llama3.1:8b is there", ""},
		{"not pulled", modelcheck.Result{Reachable: true, Ollama: true, Listed: true, Problem: "Ollama has no llama3.1:8b (it has none)", Fix: "ollama pull llama3.1:8b"},
			"http://localhost:11434/v1 (default llama3.1:8b): Ollama has no llama3.1:8b (it has none); fix: ollama pull llama3.1:8b",
			`level=WARN msg="the model endpoint is not ready: Ollama has no llama3.1:8b (it has none)" fix="ollama pull llama3.1:8b"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			got := modelLine(cfg, tt.result, slog.New(slog.NewTextHandler(&logs, nil)))
			if got != tt.line {
				t.Errorf("line = %q, want %q", got, tt.line)
			}
			if !strings.Contains(logs.String(), tt.warn) || tt.warn == "" && logs.Len() > 0 {
				t.Errorf("logs = %q, want %q", logs.String(), tt.warn)
			}
		})
	}
}

// TestFirstRunWithoutModel runs `longhaul dev` against a model endpoint
// nothing listens on, as `make run` without Ollama: the banner says the
// endpoint cannot be reached and what to do, the API starts all the same,
// and a chat's error carries the same advice.
func TestFirstRunWithoutModel(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/v1"
	ln.Close()
	api := testenv.FreeAddr(t)
	p := start(t, bin, devEnv(t, api, closed), "dev")
	want := "Model        " + closed + " (default llmtest): cannot reach " + closed + " (connection refused); fix: check that the endpoint runs, or set LONGHAUL_LLM_BASE_URL to your model endpoint"
	waitOutput(t, p, regexp.MustCompile("()"+regexp.QuoteMeta(want)))
	waitReady(t, p, "http://"+api)

	status, raw := chatHi(t, "http://"+api)
	if status != http.StatusBadGateway || !strings.Contains(raw, "cannot reach "+closed+" (connection refused); check that the endpoint runs, or set LONGHAUL_LLM_BASE_URL") {
		t.Fatalf("chat = %d %s", status, raw)
	}
}

// TestWindowNote checks what the start banner says of the default model's
// window, against an Ollama-shaped scripted server: the num_ctx a
// Modelfile sets, and Ollama's unknown default, which names the setting
// that raises it.
func TestWindowNote(t *testing.T) {
	m := llmtest.New(t)
	m.SetFlavour(llmtest.FlavourOllama)
	m.SetOllamaModel(llmtest.OllamaModel{Name: "big:8b", NumCtx: 16384})
	m.SetOllamaModel(llmtest.OllamaModel{Name: "llama3.1:8b"})
	for _, tt := range []struct{ model, want, not string }{
		{"big:8b", "; window 16384 tokens (ollama /api/show)", "OLLAMA_CONTEXT_LENGTH"},
		{"llama3.1:8b", "; window 4096 tokens (ollama default", "OLLAMA_CONTEXT_LENGTH=16384 on the Ollama server"},
	} {
		cfg := config.Config{LLMBaseURL: m.URL(), LLMModel: tt.model}
		got := windowNote(t.Context(), cfg, windows(cfg))
		if !strings.HasPrefix(got, tt.want) {
			t.Errorf("%s: note %q, want it to start %q", tt.model, got, tt.want)
		}
		if strings.Contains(got, tt.not) == (tt.model == "big:8b") {
			t.Errorf("%s: note %q; the advice %q is wrong here", tt.model, got, tt.not)
		}
	}
	cfg := config.Config{LLMBaseURL: m.URL(), LLMModel: "llama3.1:8b", LLMContext: "llama3.1:8b=32768"}
	if got := windowNote(t.Context(), cfg, windows(cfg)); got != "; window 32768 tokens (LONGHAUL_LLM_CONTEXT)" {
		t.Errorf("set window: note %q", got)
	}
	// An endpoint that does not say (OpenAI's shape): the default, and the
	// setting to name the model's real window, not Ollama's.
	openAI := llmtest.New(t)
	cfg = config.Config{LLMBaseURL: openAI.URL(), LLMModel: "gpt-4o"}
	if got := windowNote(t.Context(), cfg, windows(cfg)); got != "; window 4096 tokens (default); the endpoint does not say, so Ollama's default is assumed: set LONGHAUL_LLM_CONTEXT=gpt-4o=<the model's window in tokens>" {
		t.Errorf("silent endpoint: note %q", got)
	}
}
