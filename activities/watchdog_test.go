package activities_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
)

// Silences longer than the idle timeout, scaled down: the endpoint is
// asked whether it answers, and one that does is waited for.

// TestChatCompletionWaitsThroughASilenceTheEndpointExplains: a model that
// loads (nothing, not even headers, for a while) or writes a tool call
// (nothing between the role chunk and the whole call), each silent for
// several idle timeouts, is waited for while its endpoint answers, and the
// first attempt answers.
func TestChatCompletionWaitsThroughASilenceTheEndpointExplains(t *testing.T) {
	const idle = 150 * time.Millisecond
	call := llmtest.ToolCall{ID: "call_1", Name: "current_time", Arguments: `{"timezone":"UTC"}`}
	tests := []struct {
		name  string
		reply llmtest.Reply
	}{
		{"loading", llmtest.Text("loaded at last").With(llmtest.FirstByteDelay(5 * idle))},
		{"writing a tool call", llmtest.ToolCalls(call).With(llmtest.ChunkSize(1000), llmtest.ChunkDelay(4*idle))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil, nil)
			f.srv.SetModels("llmtest")
			f.acts.IdleTimeout = idle
			f.acts.SilenceMax = time.Minute
			f.srv.Enqueue(tt.reply)
			env := f.activityEnv()
			resp, err := chat(t, env, f.acts, contract.ModelRequest{Call: "turn-1", Agent: "naked", Messages: userMessage("hi")})
			if err != nil {
				t.Fatalf("ChatCompletion: %v", err)
			}
			if resp.Message.Content == "" && len(resp.Message.ToolCalls) == 0 {
				t.Errorf("empty answer: %+v", resp)
			}
			if n := len(f.srv.Requests()); n != 1 {
				t.Errorf("the model got %d requests, want 1", n)
			}
		})
	}
}

// TestChatCompletionFindsADeadEndpoint: a stream silent for the idle
// timeout whose endpoint does not answer a probe (hung, or failing) is
// given up at once, with the reason, for Temporal to retry.
func TestChatCompletionFindsADeadEndpoint(t *testing.T) {
	tests := []struct {
		name   string
		models http.HandlerFunc
		msg    string
	}{
		{"hung", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, "no answer within"},
		{"failing", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusBadGateway) }, "502 Bad Gateway"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.HasSuffix(r.URL.Path, "/models") {
					tt.models(w, r)
					return
				}
				// A stream that never sends; the body read, so the server
				// sees the client go.
				_, _ = io.Copy(io.Discard, r.Body)
				<-r.Context().Done()
			}))
			t.Cleanup(srv.Close)
			f := newFixture(t, nil, func(c *activities.LLMConfig) { c.BaseURL = srv.URL + "/v1" })
			f.acts.IdleTimeout = 150 * time.Millisecond
			f.acts.SilenceMax = time.Minute
			env := f.activityEnv()
			start := time.Now()
			_, err := chat(t, env, f.acts, contract.ModelRequest{Call: "turn-1", Agent: "naked", Messages: userMessage("hi")})
			appErr := wantAppError(t, err, longhaul.ErrTypeModelUnavailable, false, "the endpoint did not answer")
			if !strings.Contains(appErr.Message(), tt.msg) {
				t.Errorf("error %q does not say %q", appErr.Message(), tt.msg)
			}
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("the call gave up after %v, want about the idle timeout", d)
			}
		})
	}
}

// TestChatCompletionSilenceHasACeiling: an endpoint that answers probes
// but whose stream never sends is given up at LONGHAUL_MODEL_SILENCE_MAX.
func TestChatCompletionSilenceHasACeiling(t *testing.T) {
	f := newFixture(t, nil, nil)
	f.srv.SetModels("llmtest")
	f.acts.IdleTimeout = 100 * time.Millisecond
	f.acts.SilenceMax = 450 * time.Millisecond
	f.srv.Enqueue(llmtest.Hang())
	env := f.activityEnv()
	_, err := chat(t, env, f.acts, contract.ModelRequest{Call: "turn-1", Agent: "naked", Messages: userMessage("hi")})
	wantAppError(t, err, longhaul.ErrTypeModelUnavailable, false, "LONGHAUL_MODEL_SILENCE_MAX")
}
