package activities

import (
	"context"
	"testing"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
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
