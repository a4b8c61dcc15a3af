package api_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
)

// TestRunEventsAcrossAPIRestart follows a run on one API, shuts that API
// down in the middle of the answer (the run goes on: an API that stops never
// cancels a run) and resumes on another API of the same Temporal with
// Last-Event-ID naming a position inside the answer's text: the two parts
// are the run's whole log, every durable offset once and in order, and the
// answer's text continues where it left off, nothing missed or repeated.
func TestRunEventsAcrossAPIRestart(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	ctx := within(t, time.Minute)
	ann := user("ann")
	answer := strings.TrimSpace(strings.Repeat("the stream outlives the API that served it ", 12))
	env.Model.Enqueue(llmtest.Text(answer, llmtest.ChunkDelay(20*time.Millisecond)))

	api1, api2 := env.StartAPI(), env.StartAPI()
	r := startRun(t, env, map[string]any{"agent": "naked", "input": "talk for a while"}, ann)

	// Part 1, from API #1: a few deltas of the answer, then API #1 stops
	// under the client's feet. The client keeps what reached it whole.
	s1 := openStream(t, ctx, api1.URL, r.ID, "", ann)
	var part1 []sseEvent
	for deltas := 0; deltas < 3; {
		e, err := s1.next()
		if err != nil {
			t.Fatalf("API #1 stream: %v after %v", err, types(part1))
		}
		part1 = append(part1, e)
		if e.Type == string(longhaul.EventContentDelta) {
			deltas++
		}
	}
	// Shutdown ends the open stream at once (without done, so the client
	// resumes) rather than waiting for its deadline.
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	defer scancel()
	if err := api1.Shutdown(sctx); err != nil {
		t.Fatalf("shutdown with an open event stream: %v", err)
	}
	api1.Stop()
	var end error
	for {
		e, err := s1.next()
		if err != nil {
			end = err
			break
		}
		part1 = append(part1, e)
	}
	if end != io.EOF || part1[len(part1)-1].Type == string(longhaul.EventDone) {
		t.Fatalf("the stream of the stopped API ended with %v after %v; want a clean end before done", end, types(part1))
	}
	if _, err := http.Get(api1.URL + "/healthz"); err == nil {
		t.Fatal("API #1 still answers after Stop")
	}
	last := part1[len(part1)-1]
	if !strings.Contains(last.Pos, ":") {
		t.Fatalf("API #1 stopped after %s %q, not mid-answer; the test proves less than it should", last.Type, last.Pos)
	}

	// Part 2, from API #2, resuming after the last event id seen.
	part2, _ := readEvents(t, openStream(t, ctx, api2.URL, r.ID, last.Pos, ann), nil)
	if len(part2) == 0 || part2[len(part2)-1].Type != string(longhaul.EventDone) {
		t.Fatalf("the resumed stream does not end with done: %v", types(part2))
	}
	if part2[0].Type != string(longhaul.EventContentDelta) {
		t.Errorf("the resumed stream starts with %s, want the rest of the answer", part2[0].Type)
	}

	parts := append(append([]sseEvent(nil), part1...), part2...)
	if got := deltaText(t, parts); got != answer {
		t.Errorf("streamed text across the restart\n got %q\nwant %q", got, answer)
	}
	durable := durableOnly(parts)
	for i, e := range durable {
		if e.ID != int64(i+1) {
			t.Fatalf("event %d has offset %d; offsets must be 1..N once each, in order: %v", i, e.ID, offsets(durable))
		}
	}
	if got := contentText(t, parts); got != answer {
		t.Errorf("durable content\n got %q\nwant %q", got, answer)
	}
	if d := doneData(t, parts); d.Status != contract.StatusCompleted {
		t.Errorf("done %+v", d)
	}
	// The durable parts are the run's whole log, as a fresh client of API #2
	// reads it.
	whole, _ := readEvents(t, openStream(t, ctx, api2.URL, r.ID, "", ann), nil)
	if diff := cmp.Diff(durableOnly(whole), durable); diff != "" {
		t.Errorf("parts differ from the whole log (-whole +parts):\n%s", diff)
	}
	if n := len(env.Model.Requests()); n != 1 {
		t.Errorf("the model was called %d times; stopping an API must not touch the run", n)
	}
}

func offsets(events []sseEvent) []int64 {
	out := make([]int64, len(events))
	for i, e := range events {
		out[i] = e.ID
	}
	return out
}
