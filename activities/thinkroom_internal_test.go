package activities

import (
	"context"
	"testing"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/endpoints"
)

func TestThinkReserve(t *testing.T) {
	tests := []struct {
		effort string
		thinks bool
		tokens int
		want   int
	}{
		{"", false, 32768, 0},
		{"", true, 32768, DefaultThinkReserve},
		{"low", false, 32768, 1024},
		{"High", false, 65536, 8192},
		{"none", true, 32768, 0},
		{"high", true, 8192, 2048}, // a quarter of a small window
		{"bogus", true, 32768, DefaultThinkReserve},
	}
	for _, tt := range tests {
		if got := thinkReserve(tt.effort, tt.thinks, tt.tokens); got != tt.want {
			t.Errorf("thinkReserve(%q, %v, %d) = %d, want %d", tt.effort, tt.thinks, tt.tokens, got, tt.want)
		}
	}
}

// TestFittingKeepsRoomToThink: the reserve of a call without max_tokens
// grows by the thinking's room once the model is known to think, or the
// request sets reasoning_effort; a max_tokens stays the reserve.
func TestFittingKeepsRoomToThink(t *testing.T) {
	a := New(LLMConfig{BaseURL: "http://127.0.0.1:1/v1", Model: "qwen3:8b"}, nil, nil, nil)
	ep, err := a.resolve("")
	if err != nil {
		t.Fatal(err)
	}
	reserve := func(opts longhaul.ModelOptions) int {
		t.Helper()
		f, err := a.newFitting(context.Background(), ep, 32768, opts)
		if err != nil {
			t.Fatalf("newFitting: %v", err)
		}
		return f.reserve
	}
	answer := DefaultAnswerReserve(32768)
	if got := reserve(longhaul.ModelOptions{}); got != answer {
		t.Errorf("reserve of a model not seen thinking = %d, want %d", got, answer)
	}
	if got := reserve(longhaul.ModelOptions{ReasoningEffort: "low"}); got != answer+1024 {
		t.Errorf("reserve with reasoning_effort low = %d, want %d", got, answer+1024)
	}
	a.thinkers.note(a.ref(ep, ""), contract.ModelResponse{Reasoning: "Let me think."})
	if got := reserve(longhaul.ModelOptions{}); got != answer+DefaultThinkReserve {
		t.Errorf("reserve of a model seen thinking = %d, want %d", got, answer+DefaultThinkReserve)
	}
	if got := reserve(longhaul.ModelOptions{MaxTokens: 700}); got != 700 {
		t.Errorf("reserve with max_tokens 700 = %d, want 700", got)
	}
}

// TestKnownThinkers: models the worker was told think (Ollama's
// capabilities at start-up) keep room to think from their first call,
// told as the ids their endpoint is sent and asked about by the reference
// a call resolves to: on the default endpoint, on a named one, and an id
// of the default endpoint that reads like a named endpoint's (":gpu:x").
// The same id on another endpoint was not told and keeps none.
func TestKnownThinkers(t *testing.T) {
	a := New(LLMConfig{BaseURL: "http://127.0.0.1:1/v1", Model: "qwen3:8b",
		Endpoints: []endpoints.Endpoint{{Name: "gpu", BaseURL: "http://127.0.0.1:2/v1"}}}, nil, nil, nil)
	KnownThinkers(a, "", "qwen3:8b", "gpu:x")
	KnownThinkers(a, "gpu", "deepseek-r1:8b")
	answer := DefaultAnswerReserve(32768)
	for _, tt := range []struct {
		ref  string
		want int
	}{
		{"", answer + DefaultThinkReserve}, // the default model
		{"qwen3:8b", answer + DefaultThinkReserve},
		{":qwen3:8b", answer + DefaultThinkReserve},
		{":gpu:x", answer + DefaultThinkReserve},
		{"gpu:deepseek-r1:8b", answer + DefaultThinkReserve},
		{"deepseek-r1:8b", answer},
		{"gpu:qwen3:8b", answer},
		{"gpu:x", answer},
	} {
		ep, err := a.resolve(tt.ref)
		if err != nil {
			t.Fatalf("resolve(%q): %v", tt.ref, err)
		}
		f, err := a.newFitting(context.Background(), ep, 32768, longhaul.ModelOptions{})
		if err != nil {
			t.Fatalf("newFitting(%q): %v", tt.ref, err)
		}
		if f.reserve != tt.want {
			t.Errorf("first call to %q (%s): reserve %d, want %d", tt.ref, f.model, f.reserve, tt.want)
		}
	}
}
