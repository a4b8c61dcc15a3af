package api_test

import (
	"bufio"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/internal/identity"
	"github.com/longhaul-dev/longhaul/internal/testing/runsfake"
	"github.com/longhaul-dev/longhaul/internal/testing/webtest"
)

// The tests of this file serve the handlers from runsfake: no Temporal, no
// worker, no model. What they check is the HTTP side of a run — statuses,
// error envelopes, SSE frames — for runs whose events the test scripts.

// fakeServer is an API on fake runs, for principal alice (key sk-alice).
func fakeServer(t *testing.T, fake *runsfake.Service) *api.Server {
	t.Helper()
	catalog := webtest.Catalog(t)
	return api.New(api.Config{TaskQueue: "q", Keys: []identity.Key{{Name: "alice", Secret: "sk-alice"}}}, fake, catalog, slog.New(slog.DiscardHandler))
}

// fakeDo sends one request as alice and returns the answer, its body read.
func fakeDo(t *testing.T, srv *api.Server, method, path, body string) (*http.Response, string) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer sk-alice")
	req.Header.Set("Content-Type", "application/json")
	resp, err := srv.App().Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// fakeFrames are the data of a stream's frames, in order, with each frame's
// id and event type when it has them ("id event data").
func fakeFrames(t *testing.T, body string) []string {
	t.Helper()
	var out []string
	var id, event string
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			out = append(out, strings.TrimSpace(id+" "+event+" "+strings.TrimPrefix(line, "data: ")))
			id, event = "", ""
		}
	}
	return out
}

func TestChatCompletionsOnFakeRuns(t *testing.T) {
	const ask = `{"model":"assistant","messages":[{"role":"user","content":"hi"}]`
	for _, tc := range []struct {
		name   string
		script func(*runsfake.Run)
		body   string
		status int
		want   string
		frames []string
	}{
		{name: "answered", script: runsfake.Answered("Hello."), body: ask + `}`, status: 200, want: `"content":"Hello."`},
		{name: "the model endpoint failed", script: func(r *runsfake.Run) { r.Fail(longhaul.ErrTypeModelUnavailable, "the model is down") },
			body: ask + `}`, status: 502, want: `"message":"the model is down"`},
		{name: "streamed", script: runsfake.Answered("Hello."), body: ask + `,"stream":true}`, status: 200, frames: []string{
			`"delta":{"role":"assistant","content":"Hello."}`, `"finish_reason":"stop"`, `[DONE]`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := runsfake.New()
			fake.OnStart = tc.script
			resp, body := fakeDo(t, fakeServer(t, fake), "POST", "/v1/chat/completions", tc.body)
			if resp.StatusCode != tc.status || !strings.Contains(body, tc.want) {
				t.Fatalf("POST = %d %s, want %d with %s", resp.StatusCode, body, tc.status, tc.want)
			}
			if run := resp.Header.Get(api.HeaderRunID); fake.Run(run) == nil {
				t.Errorf("%s names run %q, which the service did not start", api.HeaderRunID, run)
			}
			frames := fakeFrames(t, body)
			for _, want := range tc.frames {
				i := indexContaining(frames, want)
				if i < 0 {
					t.Fatalf("no frame with %s in %q", want, frames)
				}
				frames = frames[i+1:]
			}
		})
	}
}

// indexContaining is the index of the first of list that contains s, or -1.
func indexContaining(list []string, s string) int {
	for i, v := range list {
		if strings.Contains(v, s) {
			return i
		}
	}
	return -1
}
