package sse

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSSEFrames writes frames and compares the exact bytes a client gets.
func TestSSEFrames(t *testing.T) {
	tests := []struct {
		name      string
		id, event string
		data      string
		want      string
	}{
		{name: "chat chunk", data: `{"id":"chatcmpl-1"}`, want: "data: {\"id\":\"chatcmpl-1\"}\n\n"},
		{name: "done", data: "[DONE]", want: "data: [DONE]\n\n"},
		{name: "durable event", id: "57", event: "tool_start", data: `{"offset":57}`,
			want: "id: 57\nevent: tool_start\ndata: {\"offset\":57}\n\n"},
		{name: "ephemeral event", id: "57:1234:2", event: "content_delta", data: `{}`,
			want: "id: 57:1234:2\nevent: content_delta\ndata: {}\n\n"},
		{name: "no id", event: "stream_error", data: `{}`, want: "event: stream_error\ndata: {}\n\n"},
		{name: "lines split at every line end", data: "one\ntwo\r\nthree\rfour",
			want: "data: one\ndata: two\ndata: three\ndata: four\n\n"},
		{name: "a payload that tries to end the frame", data: "a\n\nevent: done\ndata: {}",
			want: "data: a\ndata: \ndata: event: done\ndata: data: {}\n\n"},
		{name: "trailing line end", data: "x\n", want: "data: x\ndata: \n\n"},
		{name: "empty data", event: "ping", want: "event: ping\ndata: \n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			sw := &Writer{w: bufio.NewWriter(&buf), keepAlive: time.Hour}
			if err := sw.Frame(tt.id, tt.event, []byte(tt.data)); err != nil {
				t.Fatal(err)
			}
			if buf.Len() != 0 {
				t.Errorf("%q reached the client before a flush", buf.String())
			}
			if err := sw.Flush(); err != nil {
				t.Fatal(err)
			}
			if got := buf.String(); got != tt.want {
				t.Errorf("frame bytes\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestSSEFrameJSON(t *testing.T) {
	var buf bytes.Buffer
	sw := &Writer{w: bufio.NewWriter(&buf)}
	if err := sw.FrameJSON("3", "note", map[string]string{"text": "a\nb\u2028"}); err != nil {
		t.Fatal(err)
	}
	if err := sw.FrameJSON("", "", func() {}); err == nil || errors.Is(err, ErrClientGone) {
		t.Errorf("a value JSON cannot encode: error %v, want an encoding error", err)
	}
	_ = sw.Flush()
	if want := "id: 3\nevent: note\ndata: {\"text\":\"a\\nb\\u2028\"}\n\n"; buf.String() != want {
		t.Errorf("got %q\nwant %q", buf.String(), want)
	}
}

func TestSSEComment(t *testing.T) {
	var buf bytes.Buffer
	sw := &Writer{w: bufio.NewWriter(&buf)}
	if err := sw.Comment("run run-1"); err != nil {
		t.Fatal(err)
	}
	// A comment is flushed at once: it proves the connection alive.
	if want := ": run run-1\n\n"; buf.String() != want {
		t.Errorf("got %q, want %q", buf.String(), want)
	}
}

// notifyingWriter passes writes on and signals each on wrote.
type notifyingWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	wrote chan struct{}
}

func (w *notifyingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	select {
	case w.wrote <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (w *notifyingWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// quietFeed is a source that stays quiet until news is closed, and then
// has its last item, 1; a nil news never comes.
type quietFeed struct{ news chan struct{} }

var _ Reader[int, int] = (*quietFeed)(nil)

func (f *quietFeed) Read(ctx context.Context, _ int) ([]int, bool, error) {
	select {
	case <-ctx.Done():
		return nil, false, ctx.Err()
	case <-f.news:
		return []int{1}, true, nil
	}
}

// TestSSEKeepAlive: while the source is quiet, Wait writes keep-alive
// comments; once the source has news, it returns it.
func TestSSEKeepAlive(t *testing.T) {
	f := &quietFeed{news: make(chan struct{})}
	out := &notifyingWriter{wrote: make(chan struct{}, 1)}
	sw := &Writer{w: bufio.NewWriter(out), keepAlive: time.Millisecond}
	go func() {
		<-out.wrote   // the first keep-alive reached the client
		close(f.news) // the run's done event
	}()
	items, done, err := Wait(context.Background(), sw, f, 0)
	if err != nil || !done || len(items) != 1 || items[0] != 1 {
		t.Fatalf("wait = %+v, %v, %v; want the done event", items, done, err)
	}
	got := out.String()
	if got == "" || strings.ReplaceAll(got, ": keep-alive\n\n", "") != "" {
		t.Errorf("while quiet the stream carried %q, want keep-alive comments only", got)
	}
}

// failingWriter fails every write: the client has left.
type failingWriter struct{ writes int }

func (w *failingWriter) Write([]byte) (int, error) {
	w.writes++
	return 0, errors.New("broken pipe")
}

// TestSSEFlushFailureEndsTheStream: a keep-alive that cannot be flushed
// ends Wait with ErrClientGone, at once; so does a frame.
func TestSSEFlushFailureEndsTheStream(t *testing.T) {
	out := &failingWriter{}
	sw := &Writer{w: bufio.NewWriter(out), keepAlive: time.Millisecond}
	_, _, err := Wait(context.Background(), sw, &quietFeed{}, 0)
	if !errors.Is(err, ErrClientGone) {
		t.Fatalf("wait on a gone client = %v, want ErrClientGone", err)
	}
	if out.writes != 1 {
		t.Errorf("%d writes to a gone client, want 1: the first failure ends the stream", out.writes)
	}
	if err := sw.Frame("1", "done", []byte("{}")); err == nil {
		// bufio keeps the first error: every later write fails too.
		t.Error("a frame after the failure was taken")
	}
	sw = &Writer{w: bufio.NewWriter(&failingWriter{})}
	if err := sw.Frame("", "", []byte("x")); err != nil {
		t.Fatalf("frame = %v; it is buffered until the flush", err)
	}
	if err := sw.Flush(); !errors.Is(err, ErrClientGone) {
		t.Errorf("flush = %v, want ErrClientGone", err)
	}
}
