package modelcheck

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
)

// closedURL is the base URL of a port nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/v1"
}

// ollama is a stand-in for Ollama's native model list, GET /api/tags, in
// the shape of ollama/ollama api.ListResponse.
func ollama(t *testing.T, names ...string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/tags" {
			http.NotFound(w, r)
			return
		}
		var b strings.Builder
		b.WriteString(`{"models":[`)
		for i, n := range names {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(`{"name":"` + n + `","model":"` + n + `","size":1}`)
		}
		b.WriteString(`]}`)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(b.String()))
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

func TestCheck(t *testing.T) {
	listing := func(names ...string) func(t *testing.T) string {
		return func(t *testing.T) string {
			m := llmtest.New(t)
			m.SetModels(names...)
			return m.URL()
		}
	}
	tests := []struct {
		name     string
		url      func(t *testing.T) string
		key      string
		model    string
		ok       bool
		problem  string
		fix      string
		status   string
		isOllama bool
	}{
		{name: "lists the model", url: listing("llmtest", "other"), model: "llmtest", ok: true, status: "llmtest is there"},
		{name: "lacks the model", url: listing("other"), model: "llmtest",
			problem: "does not list llmtest (it lists other)", fix: "set LONGHAUL_LLM_MODEL to a model it lists"},
		{name: "no model list", url: func(t *testing.T) string { return llmtest.New(t).URL() }, model: "llmtest", ok: true, status: "answers (it lists no models, so llmtest is not checked)"},
		{name: "wrong key", url: func(t *testing.T) string {
			m := llmtest.New(t)
			m.SetModels("llmtest")
			m.RequireKey("sk-right")
			return m.URL()
		}, key: "sk-wrong", model: "llmtest", problem: "refuses the key (401)", fix: "set LONGHAUL_LLM_API_KEY"},
		{name: "closed port", url: closedURL, model: "llmtest", problem: "cannot reach http://127.0.0.1:", fix: "set LONGHAUL_LLM_BASE_URL"},
		{name: "Ollama with the model", url: func(t *testing.T) string { return ollama(t, "llama3.1:8b", "nomic-embed-text:latest") }, model: "llama3.1:8b", ok: true, isOllama: true, status: "llama3.1:8b is there"},
		{name: "Ollama, untagged name is :latest", url: func(t *testing.T) string { return ollama(t, "nomic-embed-text:latest") }, model: "nomic-embed-text", ok: true, isOllama: true},
		{name: "Ollama without the model", url: func(t *testing.T) string { return ollama(t) }, model: "llama3.1:8b", isOllama: true,
			problem: "Ollama has no llama3.1:8b (it has none)", fix: "ollama pull llama3.1:8b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Check(context.Background(), http.DefaultClient, tt.url(t), tt.key, tt.model)
			if r.OK() != tt.ok || r.Ollama != tt.isOllama {
				t.Fatalf("Check = %+v; want ok %v, Ollama %v", r, tt.ok, tt.isOllama)
			}
			if !strings.Contains(r.Problem, tt.problem) || !strings.Contains(r.Fix, tt.fix) {
				t.Errorf("problem %q, fix %q; want %q, %q", r.Problem, r.Fix, tt.problem, tt.fix)
			}
			if status := r.Status(tt.model); tt.status != "" && status != tt.status {
				t.Errorf("Status = %q, want %q", status, tt.status)
			}
			if strings.Contains(r.Problem+r.Fix, tt.key) && tt.key != "" {
				t.Errorf("the key shows: %q %q", r.Problem, r.Fix)
			}
		})
	}
}

func TestAdvice(t *testing.T) {
	tests := []struct{ url, want string }{
		{"http://localhost:11434/v1", "start Ollama (`ollama serve`, then `ollama pull llama3.1:8b`), or set LONGHAUL_LLM_BASE_URL"},
		{"http://ollama:11434/v1", "start Ollama"},
		{"https://api.openai.com/v1", "check that the endpoint runs, or set LONGHAUL_LLM_BASE_URL"},
	}
	for _, tt := range tests {
		if got := Advice(tt.url, "llama3.1:8b"); !strings.Contains(got, tt.want) {
			t.Errorf("Advice(%s) = %q, want %q", tt.url, got, tt.want)
		}
	}
}
