package activities_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
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
			_, err := chat(t, env, f.acts, contract.ModelRequest{Call: "turn-1", Agent: "naked", Messages: userMessage("hi"), Tools: []string{"probe"}})
			if tt.ok {
				if err != nil {
					t.Fatalf("ChatCompletion: %v", err)
				}
				return
			}
			wantAppError(t, err, longhaul.ErrTypeModelOutputTooLarge, true, "LONGHAUL_MAX_MODEL_OUTPUT_BYTES")
		})
	}
}

func TestChatCompletionGivesUpOnASilentStream(t *testing.T) {
	tests := []struct {
		name  string
		reply llmtest.Reply
	}{
		{"silent before the first chunk", llmtest.Hang()},
		{"silent mid-way", llmtest.Text("one two three four").With(llmtest.StallAfter(2))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil, nil)
			f.acts.IdleTimeout = 200 * time.Millisecond
			f.acts.SilenceMax = -1 // the idle timeout alone (watchdog_test.go asks the endpoint)
			f.srv.Enqueue(tt.reply)
			env := f.activityEnv()
			start := time.Now()
			_, err := chat(t, env, f.acts, contract.ModelRequest{Call: "turn-1", Agent: "naked", Messages: userMessage("hi")})
			wantAppError(t, err, longhaul.ErrTypeModelUnavailable, false, "LONGHAUL_MODEL_IDLE_TIMEOUT")
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("the call gave up after %v, want about the idle timeout", d)
			}
			// The model server saw the client go.
			ctx, cancel := context.WithTimeout(context.Background(), promptly)
			defer cancel()
			if err := f.srv.WaitIdle(ctx); err != nil {
				t.Errorf("the stalled request was not given up: %v", err)
			}
		})
	}
}

func TestChatCompletionRetriesASilentStream(t *testing.T) {
	const text = "alpha beta gamma delta"
	f := newFixture(t, nil, nil)
	f.acts.IdleTimeout = 200 * time.Millisecond
	f.acts.SilenceMax = -1
	f.srv.Enqueue(llmtest.Text(text).With(llmtest.StallAfter(1)), llmtest.Text(text))
	env := f.workflowEnv(t, "run-idle")
	resp := runChat(t, env, contract.ModelRequest{Call: "turn-1", Agent: "naked", Messages: userMessage("hi")})
	if resp.Message.Content != text || resp.Attempt != 2 {
		t.Errorf("response = %q from attempt %d, want %q from attempt 2", resp.Message.Content, resp.Attempt, text)
	}
}

func TestStructuredCallCapsTheOutput(t *testing.T) {
	f := newFixture(t, nil, nil)
	f.acts.MaxOutputBytes = 1000
	f.srv.Enqueue(llmtest.JSON(map[string]string{"mode": "chat", "reason": strings.Repeat("r", 2000)}))
	env := f.activityEnv()
	_, err := env.ExecuteActivity(f.acts.Classify, contract.ClassifyRequest{Messages: userMessage("hi")})
	wantAppError(t, err, longhaul.ErrTypeModelOutputTooLarge, true, "LONGHAUL_MAX_MODEL_OUTPUT_BYTES")
	if n := len(f.srv.Requests()); n != 1 {
		t.Errorf("model got %d requests, want 1 (no correction asked for)", n)
	}
}
