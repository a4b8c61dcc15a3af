package chatapi_test

import (
	"cmp"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/api/chatapi"
	"github.com/longhaul-dev/longhaul/api/documents"
	"github.com/longhaul-dev/longhaul/api/runweb"
	"github.com/longhaul-dev/longhaul/api/sse"
	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/identity"
	"github.com/longhaul-dev/longhaul/internal/testing/runsfake"
	"github.com/longhaul-dev/longhaul/internal/testing/ssetest"
	"github.com/longhaul-dev/longhaul/internal/testing/webtest"
)

// Chat Completions served from runsfake: no Temporal, no worker, no model.
// These tests check the HTTP side of a chat — statuses, error envelopes,
// the completion and its chunks — for runs the test scripts; the
// end-to-end tests in package api run chats on the whole stack (Open
// WebUI's headers, approvals, client tools, file parts).

// serve is the chat completions route over fake, on a server that keeps
// no documents, whose handlers opts change.
func serve(t *testing.T, fake *runsfake.Service, opts ...func(*chatapi.Handlers)) *fiber.App {
	t.Helper()
	rw, gate := webtest.RunsOver(fake)
	h := &chatapi.Handlers{
		Runs: rw, Gate: gate, Agents: &runweb.Agents{Catalog: webtest.Catalog(t)}, Streams: &sse.Streams{},
		Docs: &documents.Handlers{}, Headers: identity.OpenWebUIHeaders, RequestTimeout: time.Minute,
	}
	for _, o := range opts {
		o(h)
	}
	return webtest.App(t, func(_, v1 fiber.Router) { v1.Post("/chat/completions", h.Completions) })
}

// TestChatCompletions: a chat's answer, whole or streamed, and the
// errors of a chat: a failed run's error (as the error frame before
// [DONE] when streamed), a request that waits past its timeout (a 504
// naming the run, which goes on), refused requests.
func TestChatCompletions(t *testing.T) {
	const ask = `{"model":"assistant","messages":[{"role":"user","content":"hi"}]`
	badKey := func(r *runsfake.Run) { r.Fail(longhaul.ErrTypeModelUnavailable, "bad key") }
	for _, tc := range []struct {
		name    string
		script  func(*runsfake.Run)
		start   error
		timeout time.Duration
		body    string
		status  int
		// want is a piece of the answer's body; frames, of its stream's
		// frames, in order; end, of its last frames.
		want        string
		frames, end []string
		// goesOn: the answer names the run, which is still running.
		goesOn bool
	}{
		{name: "answered", script: runsfake.Answered("Hello."), body: ask + `}`, status: 200, want: `"content":"Hello."`},
		{name: "the model endpoint failed", script: func(r *runsfake.Run) { r.Fail(longhaul.ErrTypeModelUnavailable, "the model is down") },
			body: ask + `}`, status: 502, want: `"message":"the model is down"`},
		{name: "streamed", script: runsfake.Answered("Hello."), body: ask + `,"stream":true}`, status: 200, frames: []string{
			`"delta":{"role":"assistant","content":"Hello."}`, `"finish_reason":"stop"`, `[DONE]`,
		}},
		{name: "streamed, the model endpoint failed", script: badKey, body: ask + `,"stream":true}`, status: 200,
			end: []string{`"message":"bad key"`, `[DONE]`}},
		{name: "past the request timeout", timeout: 300 * time.Millisecond, body: ask + `}`, status: 504, want: "it goes on: follow run", goesOn: true},
		{name: "an unknown model", body: `{"model":"nobody","messages":[{"role":"user","content":"hi"}]}`, status: 404, want: `"code":"model_not_found"`},
		{name: "invalid JSON", body: `{"model":`, status: 400, want: "invalid JSON body"},
		{name: "the run engine does not answer", start: runsfake.ErrUnreachable, body: ask + `}`, status: 503},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := runsfake.New()
			fake.OnStart, fake.StartErr = tc.script, tc.start
			resp := webtest.Do(t, serve(t, fake, func(h *chatapi.Handlers) { h.RequestTimeout = cmp.Or(tc.timeout, time.Minute) }), "POST", "/v1/chat/completions", tc.body, webtest.Alice)
			b, _ := io.ReadAll(resp.Body)
			body, run := string(b), resp.Header.Get(web.HeaderRunID)
			if resp.StatusCode != tc.status || !strings.Contains(body, tc.want) {
				t.Fatalf("POST = %d %s, want %d with %s", resp.StatusCode, body, tc.status, tc.want)
			}
			if (tc.status == 200 || tc.goesOn) && fake.Run(run) == nil {
				t.Errorf("%s names run %q, which the service did not start", web.HeaderRunID, run)
			}
			if st, _ := fake.State(context.Background(), run); tc.goesOn && (!strings.Contains(body, run) || st.Status != contract.StatusRunning) {
				t.Errorf("the answer %s does not name run %s, or the run is %q, not running", body, run, st.Status)
			}
			wantFrames(t, body, tc.frames, tc.end)
		})
	}
}

// wantFrames checks that the stream body holds frames with the pieces
// frames, in order, and ends with frames with the pieces end.
func wantFrames(t *testing.T, body string, frames, end []string) {
	t.Helper()
	if frames == nil && end == nil {
		return
	}
	got, err := ssetest.ReadAll(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < len(end) {
		t.Fatalf("%d frames, want the last %d with %q: %s", len(got), len(end), end, body)
	}
	for i, want := range end {
		if f := got[len(got)-len(end)+i]; !strings.Contains(f.Data, want) {
			t.Fatalf("frame %q, want one with %s, in the stream's last frames: %s", f.Data, want, body)
		}
	}
	for _, want := range frames {
		for len(got) > 0 && !strings.Contains(got[0].Data, want) {
			got = got[1:]
		}
		if len(got) == 0 {
			t.Fatalf("no frame with %s in %s", want, body)
		}
		got = got[1:]
	}
}

// TestChatPayloadLimit: a conversation under the body limit but over what
// a run takes at once (Temporal's payload limit) is a 413 that says to
// shorten it, streamed or not, in a chat or not, and starts no run.
func TestChatPayloadLimit(t *testing.T) {
	big := strings.Repeat("lorem ipsum ", 3<<20/12) // 3 MB
	msgs := []map[string]string{{"role": "user", "content": big}}
	fake := runsfake.New()
	started := 0
	fake.OnStart = func(*runsfake.Run) { started++ }
	app := serve(t, fake)
	for _, tc := range []struct {
		name string
		body map[string]any
	}{
		{"chat", map[string]any{"model": "naked", "messages": msgs}},
		{"chat stream", map[string]any{"model": "naked", "stream": true, "messages": msgs}},
		{"chat with a chat id", map[string]any{"model": "naked", "messages": msgs, "metadata": map[string]string{"chat_id": "c-big"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := webtest.Do(t, app, "POST", "/v1/chat/completions", tc.body, webtest.Alice)
			webtest.WantType(t, resp, 413, "invalid_request_error", "request_too_large", "payload limit): shorten")
		})
	}
	if started != 0 {
		t.Errorf("%d runs started", started)
	}
}
