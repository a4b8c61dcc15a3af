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
