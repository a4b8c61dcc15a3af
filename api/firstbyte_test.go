package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/internal/testing/runsfake"
	"github.com/longhaul-dev/longhaul/internal/testing/ssetest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
)

// TestFirstByteAtOnce: a stream's response headers, with the run's id, and
// its first frame reach the client while the run has said nothing yet.
// The run (scripted on the fake) answers only once the test has read
// both, so a server that waits for the run's first event (or for its
// first keep-alive, 15 s on) would show a keep-alive or a token first, not
// the opening comment. Then the run speaks and the answer streams whole.
func TestFirstByteAtOnce(t *testing.T) {
	fake := runsfake.New()
	env := testenv.Start(t, testenv.Options{Runs: fake})
	const answer = "The first byte left before the model spoke."
	cases := []struct {
		name string
		// open sends the request and returns the streaming response; run
		// is the run the stream follows, once known.
		open func(t *testing.T, ctx context.Context) *http.Response
		// text reads the rest of the stream and returns the answer it
		// carried.
		text func(t *testing.T, rd *ssetest.Reader) string
	}{
		{
			name: "chat completions",
			open: func(t *testing.T, ctx context.Context) *http.Response {
				return send(t, ctx, "POST", env.URL+"/v1/chat/completions", chatBody{"model": "naked", "stream": true, "messages": userMsg("hi")})
			},
			text: func(t *testing.T, rd *ssetest.Reader) string {
				var frames []string
				for {
					e, err := rd.Next()
					if err != nil {
						t.Fatalf("stream broke: %v after %q", err, frames)
					}
					frames = append(frames, e.Data)
					if e.Data == "[DONE]" {
						return chunkText(t, frames)
					}
				}
			},
		},
		{
			name: "responses",
			open: func(t *testing.T, ctx context.Context) *http.Response {
				return send(t, ctx, "POST", env.URL+"/v1/responses", map[string]any{"model": "naked", "stream": true, "input": "hi"})
			},
			text: func(t *testing.T, rd *ssetest.Reader) string {
				return firstEvent[struct{ Text string }](t, rd, "response.output_text.done").Text
			},
		},
		{
			name: "run events",
			open: func(t *testing.T, ctx context.Context) *http.Response {
				r := startRun(t, env, map[string]any{"agent": "naked", "input": "hi"}, nil)
				return send(t, ctx, "GET", env.URL+"/v1/runs/"+r.ID+"/events", nil)
			},
			text: func(t *testing.T, rd *ssetest.Reader) string {
				return firstEvent[struct{ Data struct{ Text string } }](t, rd, "content").Data.Text
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := within(t, time.Minute)
			asked, release := make(chan struct{}), make(chan struct{})
			released := false
			defer func() {
				if !released {
					close(release)
				}
			}()
			fake.OnStart = func(r *runsfake.Run) {
				close(asked)
				go func() {
					<-release
					runsfake.Answered(answer)(r)
				}()
			}

			resp := tc.open(t, ctx)
			run := resp.Header.Get(api.HeaderRunID)
			if !strings.HasPrefix(run, "run-") {
				t.Fatalf("%s = %q before the model spoke", api.HeaderRunID, run)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
				t.Fatalf("Content-Type = %q", ct)
			}
			br := bufio.NewReader(resp.Body)
			first := readFrame(t, br)
			if want := ": run " + run + "\n\n"; first != want {
				t.Fatalf("first frame %q, want %q", first, want)
			}
			// The run started and has not answered: the headers and the
			// frame did not wait for it.
			select {
			case <-asked:
			case <-ctx.Done():
				t.Fatal("the run never started")
			}
			close(release)
			released = true
			if got := tc.text(t, ssetest.NewReader(br)); got != answer {
				t.Fatalf("answer %q, want %q", got, answer)
			}
		})
	}
}

// send sends a request whose answer is a stream and checks its status.
func send(t *testing.T, ctx context.Context, method, url string, body any) *http.Response {
	t.Helper()
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, _ := http.NewRequestWithContext(ctx, method, url, rd)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s = %d", method, url, resp.StatusCode)
	}
	return resp
}

// firstEvent reads rd up to the first frame of the event name and decodes
// its data.
func firstEvent[T any](t *testing.T, rd *ssetest.Reader, name string) T {
	t.Helper()
	for {
		e, err := rd.Next()
		if err != nil {
			t.Fatalf("stream broke before %s: %v", name, err)
		}
		if e.Event == name {
			var v T
			if err := json.Unmarshal([]byte(e.Data), &v); err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
}

// readFrame reads one raw frame, up to and with its blank line.
func readFrame(t *testing.T, br *bufio.Reader) string {
	t.Helper()
	var b strings.Builder
	for {
		line, err := br.ReadString('\n')
		b.WriteString(line)
		if err != nil {
			t.Fatalf("stream broke after %q: %v", b.String(), err)
		}
		if line == "\n" {
			return b.String()
		}
	}
}
