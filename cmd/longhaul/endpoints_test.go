package main

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/internal/config"
	"github.com/longhaul-dev/longhaul/skills"
)

// TestUnknownEndpointStopsStartUp: a model reference to an endpoint that
// LONGHAUL_LLM_ENDPOINTS does not name stops start-up with the file and the
// key; once the endpoint is configured the same files load, and an Ollama
// model id with a tag ("llama3.1:8b") stays a default-endpoint model.
func TestUnknownEndpointStopsStartUp(t *testing.T) {
	dir := t.TempDir()
	agent := "---\nagent: split\ndescription: Split roles\nmode: agentic\nmodel: llama3.1:8b\nmodels: {plan: \"qwen2.5:7b-instruct\", answer: \"remote:big-model\"}\n---\nYou help.\n"
	if err := os.WriteFile(filepath.Join(dir, "split.md"), []byte(agent), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config.Config{SkillsDir: dir, LLMBaseURL: "http://127.0.0.1:11434/v1", LLMModel: "llama3.1:8b"}
	log := slog.New(slog.DiscardHandler)
	_, _, err := loadCatalog(cfg, log)
	if !errors.Is(err, skills.ErrUnknownEndpoint) {
		t.Fatalf("loadCatalog = %v, want an unknown endpoint", err)
	}
	for _, want := range []string{"split.md", `models.answer "remote:big-model"`, `unknown model endpoint "remote"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "llama3.1") || strings.Contains(err.Error(), "qwen2.5") {
		t.Errorf("a tagged default-endpoint model was taken for an endpoint: %v", err)
	}

	cfg.LLMEndpoints, cfg.LLMKeys = "remote=https://openrouter.ai/api/v1", "remote=sk-or-v1-secret"
	if _, _, err := loadCatalog(cfg, log); err != nil {
		t.Fatalf("with the endpoint configured: %v", err)
	}
	// A key for an endpoint that is not named is a settings error, which
	// never quotes the key.
	cfg.LLMKeys = "remote=sk-or-v1-secret,other=sk-other-secret"
	err = cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), `endpoint "other"`) || strings.Contains(err.Error(), "sk-") {
		t.Errorf("Validate with a key for an unnamed endpoint = %v", err)
	}
}
