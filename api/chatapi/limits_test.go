package chatapi_test

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/longhaul-dev/longhaul/api/chatapi"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/longhaul-dev/longhaul/internal/testing/runsfake"
	"github.com/longhaul-dev/longhaul/internal/testing/webtest"
)

// TestChatLimits holds a principal to one run and one stream at a time
// (LONGHAUL_MAX_RUNS, LONGHAUL_MAX_STREAMS): while her streamed chat
// runs, another chat turn and another chat stream are each a 429 with
// Retry-After; another principal is not held back; once her run ends,
// and with it her stream, she chats again.
func TestChatLimits(t *testing.T) {
	fake := runsfake.New()
	first := make(chan *runsfake.Run, 1)
	var taken atomic.Bool
	fake.OnStart = func(r *runsfake.Run) {
		if taken.CompareAndSwap(false, true) {
			first <- r // her first run runs on until the test ends it
			return
		}
		runsfake.Answered("Hello again.")(r)
	}
	app := serve(t, fake, func(h *chatapi.Handlers) { _, h.Gate = webtest.RunsOver(fake, runs.Limits{Runs: 1, Streams: 1}) })
	const chat, stream = `{"model":"naked","messages":[{"role":"user","content":"Hi"}]}`, `{"model":"naked","stream":true,"messages":[{"role":"user","content":"Hi"}]}`
	held, err := http.DefaultClient.Do(webtest.NewRequest("POST", webtest.Listen(t, app)+"/v1/chat/completions", stream, webtest.Alice))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Body.Close()
	run := <-first
	for _, tc := range []struct {
		name, body string
		who        map[string]string
		status     int
	}{
		{"a chat turn", chat, webtest.Alice, http.StatusTooManyRequests},
		{"a chat stream", stream, webtest.Alice, http.StatusTooManyRequests},
		{"another's chat", chat, webtest.Bob, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := webtest.Do(t, app, "POST", "/v1/chat/completions", tc.body, tc.who)
			if tc.status == http.StatusOK {
				if b, _ := io.ReadAll(resp.Body); resp.StatusCode != tc.status {
					t.Errorf("%s = %d %s", tc.name, resp.StatusCode, b)
				}
				return
			}
			webtest.WantTooMany(t, resp)
		})
	}

	runsfake.Answered("Hello.")(run)
	if _, err := io.ReadAll(held.Body); err != nil {
		t.Fatalf("her stream did not end with her run: %v", err)
	}
	resp := webtest.DoAdmitted(t, app, "POST", "/v1/chat/completions", stream, webtest.Alice)
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"content":"Hello again."`) {
		t.Errorf("her chat after her run and stream ended = %d %s", resp.StatusCode, b)
	}
}
