package ssetest_test

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul/internal/testing/ssetest"
)

func TestReadAll(t *testing.T) {
	tests := []struct {
		name   string
		stream string
		want   []ssetest.Event
		err    error
	}{
		{name: "empty", stream: ""},
		{name: "comments only", stream: ": run-1\n\n: keep-alive\n\n"},
		{
			name:   "data frames",
			stream: "data: {\"a\":1}\n\ndata: [DONE]\n\n",
			want: []ssetest.Event{
				{Data: `{"a":1}`, Fields: []string{"data"}},
				{Data: "[DONE]", Fields: []string{"data"}},
			},
		},
		{
			name:   "typed frame with id",
			stream: "id: 57:12\nevent: content_delta\ndata: {}\n\n",
			want:   []ssetest.Event{{ID: "57:12", Event: "content_delta", Data: "{}", Fields: []string{"id", "event", "data"}}},
		},
		{
			name:   "multi-line data, every line end",
			stream: "data: one\ndata: two\r\ndata: three\rdata:four\n\n",
			want:   []ssetest.Event{{Data: "one\ntwo\nthree\nfour", Fields: []string{"data", "data", "data", "data"}}},
		},
		{
			name:   "comment inside a frame",
			stream: "event: e\n: note\ndata: x\n\n",
			want:   []ssetest.Event{{Event: "e", Data: "x", Fields: []string{"event", "data"}}},
		},
		{
			name:   "cut inside a frame",
			stream: "data: whole\n\nid: 3\nevent: e\n",
			want:   []ssetest.Event{{Data: "whole", Fields: []string{"data"}}},
			err:    io.ErrUnexpectedEOF,
		},
		{
			name:   "cut inside a line",
			stream: "data: whole\n\ndata: hal",
			want:   []ssetest.Event{{Data: "whole", Fields: []string{"data"}}},
			err:    io.ErrUnexpectedEOF,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// One byte a read: a "\r\n" split across reads is one line end.
			got, err := ssetest.ReadAll(iotest.OneByteReader(strings.NewReader(tt.stream)))
			if !errors.Is(err, tt.err) {
				t.Errorf("error = %v, want %v", err, tt.err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("frames (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNextRefusesWhatIsNoField(t *testing.T) {
	for _, line := range []string{"hello", "date: today"} {
		if _, err := ssetest.NewReader(strings.NewReader(line + "\n\n")).Next(); !errors.Is(err, ssetest.ErrMalformed) {
			t.Errorf("%q: error %v, want ErrMalformed", line, err)
		}
	}
}

func TestNextReturnsTheReadError(t *testing.T) {
	broken := errors.New("connection reset")
	rd := ssetest.NewReader(io.MultiReader(strings.NewReader("data: 1\n\ndata: 2"), iotest.ErrReader(broken)))
	if e, err := rd.Next(); err != nil || e.Data != "1" {
		t.Fatalf("first frame %+v, %v", e, err)
	}
	if _, err := rd.Next(); !errors.Is(err, broken) {
		t.Errorf("error = %v, want %v", err, broken)
	}
}

func TestHasID(t *testing.T) {
	evs, err := ssetest.ReadAll(strings.NewReader("id:\ndata: a\n\ndata: b\n\n"))
	if err != nil || len(evs) != 2 || !evs[0].HasID() || evs[1].HasID() {
		t.Fatalf("frames %+v, %v: want the first with an (empty) id, the second without", evs, err)
	}
}
