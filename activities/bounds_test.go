package activities_test

import (
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/internal/llmtest"
)

func TestChatCompletionCapsTheOutput(t *testing.T) {
	const limit = 1000
	tests := []struct {
		name  string
		reply llmtest.Reply
		ok    bool
	}{
		{"text under the cap", llmtest.Text(strings.Repeat("a", limit-10), llmtest.ChunkSize(100)), true},
		{"text over the cap", llmtest.Text(strings.Repeat("a", 5*limit), llmtest.ChunkSize(100)), false},
		{"tool arguments over the cap", llmtest.ToolCalls(llmtest.ToolCall{Name: "probe", Arguments: `{"q":"` + strings.Repeat("b", 2*limit) + `"}`}), false},
		{"text and arguments over the cap together", llmtest.ToolCalls(llmtest.ToolCall{Name: "probe", Arguments: `{"q":"` + strings.Repeat("b", limit/2) + `"}`}).WithText(strings.Repeat("a", limit/2+20)), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil, nil)
			f.acts.MaxOutputBytes = limit
			f.srv.Enqueue(tt.reply)
			env := f.activityEnv()
			_, err := chat(t, env, f.acts, activities.ModelRequest{Call: "turn-1", Agent: "naked", Messages: userMessage("hi"), Tools: []string{"probe"}})
			if tt.ok {
				if err != nil {
					t.Fatalf("ChatCompletion: %v", err)
				}
				return
			}
			wantAppError(t, err, activities.ErrTypeModelOutputTooLarge, true, "LONGHAUL_MAX_MODEL_OUTPUT_BYTES")
		})
	}
}
