package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// TestPrincipalLimits holds one principal to one run and one stream at a
// time: the next is a 429 with Retry-After, another principal is not held
// back, and a run or stream that ends frees its place.
func TestPrincipalLimits(t *testing.T) {
	env, _ := approvalStack(t, api.Config{Limits: api.Limits{Runs: 1, Streams: 1}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ann, bob := user("ann"), user("bob")
	order := map[string]any{"agent": "clerk", "input": "Order a book"}
	tooMany := func(t *testing.T, resp *http.Response, what string) {
		t.Helper()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("%s = %d (Retry-After %q) %s, want 429", what, resp.StatusCode, resp.Header.Get("Retry-After"), b)
		}
		var e wire.ErrorBody
		if err := json.Unmarshal(b, &e); err != nil || e.Error.Type != "rate_limit_error" {
			t.Errorf("%s: error %s", what, b)
		}
	}

	scriptOrderCall(env, "o1")
	run := startRun(t, env, order, ann)
	first := openEvents(t, ctx, env, run.ID, "", ann)
	until := func(typ longhaul.EventType) {
		t.Helper()
		for {
			e, err := first.next()
			if err != nil {
				t.Fatalf("her stream, waiting for %s: %v", typ, err)
			}
			if e.Type == string(typ) {
				return
			}
		}
	}
	until(longhaul.EventApprovalRequired)

	// Her run waits: a second is refused, in the runs API and in chat.
	tooMany(t, do(t, env, "POST", "/v1/runs", order, ann), "a second run")
	tooMany(t, do(t, env, "POST", "/v1/chat/completions", chatBody{"model": "clerk", "messages": conversation("Hi")}, ann), "a chat turn")
	// A background response is a run like any other: LONGHAUL_MAX_RUNS
	// bounds how many a principal leaves running.
	tooMany(t, do(t, env, "POST", "/v1/responses", map[string]any{"model": "clerk", "input": "Order a book", "background": true}, ann), "a background response")
	// Her stream is open: a second is refused, in the runs API and in chat.
	tooMany(t, do(t, env, "GET", "/v1/runs/"+run.ID+"/events", nil, ann), "a second stream")
	tooMany(t, do(t, env, "POST", "/v1/chat/completions", chatBody{"model": "clerk", "stream": true, "messages": conversation("Hi")}, ann), "a chat stream")

	// Bob is not held back by her.
	env.Model.Enqueue(llmtest.Text("Hi Bob."))
	if resp := do(t, env, "POST", "/v1/chat/completions", chatBody{"model": "clerk", "messages": conversation("Hi")}, bob); resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("bob's chat = %d %s", resp.StatusCode, b)
	}

	// Her run ends, and with it her stream: both places are free again.
	told := make(chan string, 1)
	scriptOrderAnswer(env, "o1", told)
	if resp := do(t, env, "POST", "/v1/runs/"+run.ID+"/input", map[string]any{"approve": true}, ann); resp.StatusCode != 200 {
		t.Fatalf("approve = %d", resp.StatusCode)
	}
	<-told
	until(longhaul.EventDone)
	if _, err := first.next(); err != io.EOF {
		t.Fatalf("her stream did not end after done: %v", err)
	}
	env.Model.Enqueue(llmtest.Text("Hello again."))
	eventually(t, ctx, func() string {
		resp := do(t, env, "POST", "/v1/chat/completions", chatBody{"model": "clerk", "stream": true, "messages": conversation("Hi")}, ann)
		if resp.StatusCode == http.StatusTooManyRequests {
			return "still refused after her run and stream ended"
		}
		if got := readStream(t, resp); got.text != "Hello again." {
			return fmt.Sprintf("the chat answered %q", got.text)
		}
		return ""
	})
}
