package runs

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul"
)

func newTestFeed() *Feed {
	return &Feed{wake: make(chan struct{}), live: map[string]*liveCall{}, finished: map[string]bool{}}
}

// readAll reads everything a follower at c has not read, as "type id text".
func readAll(f *Feed, c *Cursor) []string {
	var out []string
	for _, it := range f.itemsAfter(c) {
		s := string(it.Type) + " " + it.ID()
		var d longhaul.Delta
		if (it.Type == longhaul.EventContentDelta || it.Type == longhaul.EventReasoningDelta) && it.Decode(&d) == nil {
			s += " " + d.Text
		}
		out = append(out, s)
		*c = it.Pos
	}
	return out
}

// TestFeedCallThatOnlyAskedForTools: a run's first model call asked for a
// tool and had no text (it answered a snapshot with nothing); the second
// streams. Each piece is read once, and reading again with nothing new
// gives nothing.
func TestFeedCallThatOnlyAskedForTools(t *testing.T) {
	f := newTestFeed()
	f.addText(longhaul.DeltaContent, "turn-1", 1, 0, 0, "") // the snapshot of the tool-calling call
	f.update([]longhaul.Event{{Offset: 1, Type: longhaul.EventToolStart}, {Offset: 2, Type: longhaul.EventToolOutput}}, false, nil)
	f.addText(longhaul.DeltaContent, "turn-1", 1, 0, 0, "late") // a late delta of a call that is over
	f.addText(longhaul.DeltaContent, "turn-2", 1, 2, 0, "Done: ")
	var c Cursor
	want := []string{"tool_start 1", "tool_output 2", "content_delta 2:6 Done: "}
	if diff := cmp.Diff(want, readAll(f, &c)); diff != "" {
		t.Fatalf("first read (-want +got):\n%s", diff)
	}
	if got := readAll(f, &c); len(got) != 0 {
		t.Fatalf("a read with nothing new gave %v", got)
	}
	f.addText(longhaul.DeltaContent, "turn-2", 1, 2, 6, "ok")
	if diff := cmp.Diff([]string{"content_delta 2:8 ok"}, readAll(f, &c)); diff != "" {
		t.Fatalf("second read (-want +got):\n%s", diff)
	}
}

// TestFeedRetriedCall: a retried attempt's text replaces the failed one's,
// with a reset whose id is the start of the new attempt; the durable text
// then brings only what the follower lacks.
func TestFeedRetriedCall(t *testing.T) {
	f := newTestFeed()
	f.addText(longhaul.DeltaContent, "turn-1", 1, 0, 0, "Hel")
	var c Cursor
	readAll(f, &c)
	f.addText(longhaul.DeltaContent, "turn-1", 2, 0, 0, "Hello")
	if diff := cmp.Diff([]string{"content_reset 0:0:2", "content_delta 0:5:2 Hello"}, readAll(f, &c)); diff != "" {
		t.Fatalf("retry (-want +got):\n%s", diff)
	}
	f.addText(longhaul.DeltaContent, "turn-1", 1, 0, 3, "p!") // the failed attempt, still talking
	done := longhaul.NewEvent(longhaul.EventContent, time.Time{}, longhaul.ContentData{Call: "turn-1", Attempt: 2, Text: "Hello world"})
	done.Offset = 1
	f.update([]longhaul.Event{done}, false, nil)
	if diff := cmp.Diff([]string{"content_delta 0:11:2  world", "content 1"}, readAll(f, &c)); diff != "" {
		t.Fatalf("durable (-want +got):\n%s", diff)
	}
}

// TestFeedModelFallback: a call's first model streamed some text and
// failed; the run says the next model answers (model_fallback) and that
// one streams from its start, under attempts numbered on. A follower that
// read the failed model's text gets a reset before the fallback event, so
// it never shows the two models' text run together; one that read nothing
// of it gets no reset.
func TestFeedModelFallback(t *testing.T) {
	f := newTestFeed()
	f.addText(longhaul.DeltaContent, "turn-1", 1, 0, 0, "The first mod")
	var streamed, late Cursor
	readAll(f, &streamed)
	fb := longhaul.NewEvent(longhaul.EventModelFallback, time.Time{}, longhaul.ModelFallbackData{Call: "turn-1", Model: "a", Next: "b", Reason: "x", Code: "timeout"})
	fb.Offset = 1
	f.update([]longhaul.Event{fb}, false, nil)
	f.addText(longhaul.DeltaContent, "turn-1", 3, 1, 0, "B says")
	if diff := cmp.Diff([]string{"content_reset 0:13", "model_fallback 1", "content_delta 1:6:3 B says"}, readAll(f, &streamed)); diff != "" {
		t.Errorf("a follower that streamed a's text (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"model_fallback 1", "content_delta 1:6:3 B says"}, readAll(f, &late)); diff != "" {
		t.Errorf("a follower that joined after a failed (-want +got):\n%s", diff)
	}
}

// TestFeedReasoning: a thinking call's reasoning streams as reasoning
// deltas before its text; one position counts the reasoning's bytes, then
// the text's, so a follower that resumes from any id (in the reasoning, at
// its end, in the text) gets exactly what it lacks, live or from the
// durable content event.
func TestFeedReasoning(t *testing.T) {
	f := newTestFeed()
	f.addText(longhaul.DeltaReasoning, "turn-1", 1, 0, 0, "Let me ")
	var c Cursor
	if diff := cmp.Diff([]string{"reasoning_delta 0:7 Let me "}, readAll(f, &c)); diff != "" {
		t.Fatalf("reasoning (-want +got):\n%s", diff)
	}
	f.addText(longhaul.DeltaReasoning, "turn-1", 1, 0, 7, "think.")
	f.addText(longhaul.DeltaContent, "turn-1", 1, 0, 0, "Four")
	if diff := cmp.Diff([]string{"reasoning_delta 0:13 think.", "content_delta 0:17 Four"}, readAll(f, &c)); diff != "" {
		t.Fatalf("reasoning, then text (-want +got):\n%s", diff)
	}
	// Followers that resume: mid-reasoning, at its end, mid-text.
	for _, tt := range []struct {
		id   string
		want []string
	}{
		{"0:3", []string{"reasoning_delta 0:13  me think.", "content_delta 0:17 Four"}},
		{"0:13", []string{"content_delta 0:17 Four"}},
		{"0:15", []string{"content_delta 0:17 ur"}},
	} {
		r, ok := ParseCursor(tt.id)
		if !ok {
			t.Fatal(tt.id)
		}
		if diff := cmp.Diff(tt.want, readAll(f, &r)); diff != "" {
			t.Errorf("resumed at %s (-want +got):\n%s", tt.id, diff)
		}
	}
	done := longhaul.NewEvent(longhaul.EventContent, time.Time{}, longhaul.ContentData{Call: "turn-1", Attempt: 1, Reasoning: "Let me think.", Text: "Four."})
	done.Offset = 1
	f.update([]longhaul.Event{done}, false, nil)
	if diff := cmp.Diff([]string{"content_delta 0:18 .", "content 1"}, readAll(f, &c)); diff != "" {
		t.Fatalf("durable (-want +got):\n%s", diff)
	}
	// One that resumes mid-reasoning once the call is durable.
	r, _ := ParseCursor("0:7")
	if diff := cmp.Diff([]string{"reasoning_delta 0:13 think.", "content_delta 0:18 Four.", "content 1"}, readAll(f, &r)); diff != "" {
		t.Fatalf("resumed from the log (-want +got):\n%s", diff)
	}
}
