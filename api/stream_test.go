package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/ssetest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
)

// chatStream reads an OpenAI chat stream frame by frame.
type chatStream struct {
	t      *testing.T
	rd     *ssetest.Reader
	frames []string
}

// postChat posts a streaming chat request to the API at base.
func postChat(t *testing.T, ctx context.Context, base string, body chatBody, headers map[string]string) *chatStream {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1/chat/completions", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 {
		t.Fatalf("chat = %d", resp.StatusCode)
	}
	return &chatStream{t: t, rd: ssetest.NewReader(resp.Body)}
}

// next returns the next data frame ("[DONE]" last).
func (s *chatStream) next() string {
	s.t.Helper()
	e, err := s.rd.Next()
	if err != nil {
		s.t.Fatalf("stream broke: %v after %q", err, s.text())
	}
	s.frames = append(s.frames, e.Data)
	return e.Data
}

// untilText reads until the text shown has at least n bytes.
func (s *chatStream) untilText(n int) {
	s.t.Helper()
	for len(s.text()) < n {
		if s.next() == "[DONE]" {
			s.t.Fatalf("the stream ended with %q, before %d bytes", s.text(), n)
		}
	}
}

// rest reads to [DONE] and returns the whole text.
func (s *chatStream) rest() string {
	s.t.Helper()
	for s.next() != "[DONE]" {
	}
	return s.text()
}

func (s *chatStream) text() string { return chunkText(s.t, s.frames) }

// TestStreamWithoutNATS stops NATS while the answer streams: the live
// deltas stop, and the answer still arrives whole, from the run's durable
// content, for a chat client and for a runs API client; the run is not
// touched.
func TestStreamWithoutNATS(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	ctx := within(t, time.Minute)
	answer := strings.TrimSpace(strings.Repeat("the answer arrives whole without NATS ", 10))
	env.Model.Enqueue(llmtest.Text(answer, llmtest.ChunkDelay(30*time.Millisecond)))
	ann := user("ann")
	chat := postChat(t, ctx, env.URL, chatBody{"model": "naked", "stream": true, "messages": userMsg("talk"),
		"metadata": map[string]string{"chat_id": "no-nats"}}, ann)
	chat.untilText(20)
	runID := contract.ChatRunID("ann/no-nats", 1, "")
	events := openEvents(t, ctx, env, runID, "", ann)
	var seen []sseEvent
	for len(deltaText(t, seen)) < 30 {
		e, err := events.next()
		if err != nil {
			t.Fatalf("events: %v", err)
		}
		seen = append(seen, e)
	}
	env.StopNATS()

	if got := chat.rest(); got != answer {
		t.Errorf("chat text\n got %q\nwant %q", got, answer)
	}
	rest, _ := readEvents(t, events, nil)
	all := append(seen, rest...)
	if got := deltaText(t, all); got != answer {
		t.Errorf("runs API deltas\n got %q\nwant %q", got, answer)
	}
	if got := contentText(t, all); got != answer {
		t.Errorf("runs API content %q", got)
	}
	if n := len(env.Model.Requests()); n != 1 {
		t.Errorf("model called %d times; losing NATS must not touch the run", n)
	}
}

// TestAttachMidAnswer: a retried request for a chat turn whose answer is
// streaming, on another API process, gets the text so far (asked of the
// running call) and then the rest, as the first request does.
func TestAttachMidAnswer(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	ctx := within(t, time.Minute)
	answer := strings.TrimSpace(strings.Repeat("a retry joins the answer midway ", 10))
	env.Model.Enqueue(llmtest.Text(answer, llmtest.ChunkDelay(30*time.Millisecond)))
	h := withChat(owui, "attach-mid")
	body := chatBody{"model": "naked", "stream": true, "messages": userMsg("talk")}
	first := postChat(t, ctx, env.URL, body, h)
	first.untilText(40)
	other := env.StartAPI()
	second := postChat(t, ctx, other.URL, body, h)
	second.untilText(1)
	if got := second.text(); len(got) < 40 || !strings.HasPrefix(answer, got) {
		t.Errorf("the retry's first text %q, want the answer so far (at least 40 bytes)", got)
	}
	if got := second.rest(); got != answer {
		t.Errorf("retry\n got %q\nwant %q", got, answer)
	}
	if got := first.rest(); got != answer {
		t.Errorf("first\n got %q\nwant %q", got, answer)
	}
	if n := len(env.Model.Requests()); n != 1 {
		t.Errorf("model called %d times, want once", n)
	}
}

// TestTerminatedRunEndsStreams: a run terminated outside Longhaul (the
// Temporal UI, the CLI) never writes done; its chat stream ends with an
// error frame and [DONE], and its runs API stream ends too.
func TestTerminatedRunEndsStreams(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	ctx := within(t, time.Minute)
	env.Model.Enqueue(llmtest.Hang())
	ann := user("ann")
	chat := postChat(t, ctx, env.URL, chatBody{"model": "naked", "stream": true, "messages": userMsg("wait"),
		"metadata": map[string]string{"chat_id": "terminated"}}, ann)
	if err := env.Model.WaitRequests(ctx, 1); err != nil {
		t.Fatal(err)
	}
	runID := contract.ChatRunID("ann/terminated", 1, "")
	events := openEvents(t, ctx, env, runID, "", ann)
	terminated := time.Now()
	if err := env.Client.TerminateWorkflow(ctx, runID, "", "an operator stopped it"); err != nil {
		t.Fatal(err)
	}
	var last string
	for {
		d := chat.next()
		if d == "[DONE]" {
			break
		}
		last = d
	}
	if !strings.Contains(last, `"error"`) || !strings.Contains(last, "terminated") {
		t.Errorf("the chat stream's last frame %q, want an error naming the termination", last)
	}
	t.Logf("the chat stream ended %v after the termination", time.Since(terminated).Round(time.Millisecond))
	for {
		e, err := events.next()
		if e.Type == "stream_error" {
			return // a frame without an id, whose data is the error
		}
		if err != nil {
			break
		}
	}
	t.Error("the runs API stream ended without a stream_error")
}
