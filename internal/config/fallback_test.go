package config

import (
	"testing"
)

// TestModelFallbackSettings: LONGHAUL_LLM_MODEL takes a fallback list,
// each model checked as a single reference is; the breaker's settings are
// checked.
func TestModelFallbackSettings(t *testing.T) {
	clearEnv(t)
	t.Setenv("LONGHAUL_LLM_ENDPOINTS", "remote=https://openrouter.ai/api/v1")
	t.Setenv("LONGHAUL_LLM_MODEL", "remote:big-model,llama3.1:8b")
	c, err := Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if c.LLMModel != "remote:big-model,llama3.1:8b" || c.ModelBreakerFailures != 3 || c.ModelBreakerCooldown.String() != "30s" {
		t.Errorf("model %q, breaker %d / %s", c.LLMModel, c.ModelBreakerFailures, c.ModelBreakerCooldown)
	}
	for _, tt := range []struct{ name, env, value, want string }{
		{"unknown endpoint in a list", "LONGHAUL_LLM_MODEL", "llama3.1:8b,nowhere:big", `LONGHAUL_LLM_MODEL: unknown model endpoint "nowhere"`},
		{"stray comma", "LONGHAUL_LLM_MODEL", "llama3.1:8b,", "LONGHAUL_LLM_MODEL: model list \"llama3.1:8b,\" has an empty entry"},
		{"negative breaker", "LONGHAUL_MODEL_BREAKER_FAILURES", "-1", "LONGHAUL_MODEL_BREAKER_FAILURES: must not be negative"},
		{"no cooldown", "LONGHAUL_MODEL_BREAKER_COOLDOWN", "0s", "LONGHAUL_MODEL_BREAKER_COOLDOWN: must be positive"},
	} {
		t.Run(tt.name, func(t *testing.T) { loadRefused(t, tt.env, tt.value, tt.want) })
	}
}
