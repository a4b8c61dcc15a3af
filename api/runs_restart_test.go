package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/internal/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testenv"
	"github.com/longhaul-dev/longhaul/workflows"
)

// sseStream reads a run's event stream frame by frame and tolerates a cut:
// a client of an API that goes away sees its stream break mid-way.
type sseStream struct {
	body io.ReadCloser
	sc   *bufio.Scanner
}

// openStream opens the event stream of run id on the API at base, resuming
// after offset after (Last-Event-ID) when it is positive.
func openStream(t *testing.T, ctx context.Context, base, id string, after int64, headers map[string]string) *sseStream {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/v1/runs/"+id+"/events", nil)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	if after > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(after, 10))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("events of %s after %d: %d %s", id, after, resp.StatusCode, b)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	return &sseStream{body: resp.Body, sc: sc}
}

// next returns the next whole frame. At the end of the stream it returns
// io.EOF when the server ended it cleanly and another error when it broke;
// a frame cut in half is not returned.
func (s *sseStream) next() (sseEvent, error) {
	var cur sseEvent
	var fields []string
	for s.sc.Scan() {
		line := s.sc.Text()
		switch {
		case strings.HasPrefix(line, ":"):
		case line == "":
			if len(fields) == 0 {
				continue
			}
			if strings.Join(fields, ",") != "id,event,data" || cur.ID != cur.Event.Offset || cur.Type != string(cur.Event.Type) {
				return cur, fmt.Errorf("malformed frame %v: id %d event %q carries %+v", fields, cur.ID, cur.Type, cur.Event)
			}
			return cur, nil
		case strings.HasPrefix(line, "id: "):
			id, err := strconv.ParseInt(strings.TrimPrefix(line, "id: "), 10, 64)
			if err != nil {
				return cur, fmt.Errorf("bad id line %q", line)
			}
			cur.ID, fields = id, append(fields, "id")
		case strings.HasPrefix(line, "event: "):
			cur.Type, fields = strings.TrimPrefix(line, "event: "), append(fields, "event")
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.Event); err != nil {
				return cur, fmt.Errorf("data is not an event: %q", line)
			}
			fields = append(fields, "data")
		default:
			return cur, fmt.Errorf("unexpected SSE line %q", line)
		}
	}
	if err := s.sc.Err(); err != nil {
		return cur, err
	}
	if len(fields) != 0 {
		return cur, io.ErrUnexpectedEOF
	}
	return cur, io.EOF
}

// TestRunEventsAcrossAPIRestart follows a run on one API, shuts that API
// down mid-stream (the run goes on: an API that stops never cancels a run) and
// resumes on another API of the same Temporal with Last-Event-ID: the two
// parts are the run's whole log, every offset once and in order.
func TestRunEventsAcrossAPIRestart(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ann := user("ann")
	answer := strings.TrimSpace(strings.Repeat("the stream outlives the API that served it ", 12))
	env.Model.Enqueue(llmtest.Text(answer, llmtest.ChunkDelay(20*time.Millisecond)))

	api1, api2 := env.StartAPI(), env.StartAPI()
	r := startRun(t, env, map[string]any{"agent": "naked", "input": "talk for a while"}, ann)

	// Part 1, from API #1: a few content events, then API #1 stops under
	// the client's feet. The client keeps what reached it whole.
	s1 := openStream(t, ctx, api1.URL, r.ID, 0, ann)
	var part1 []sseEvent
	for contents := 0; contents < 3; {
		e, err := s1.next()
		if err != nil {
			t.Fatalf("API #1 stream: %v after %v", err, types(part1))
		}
		part1 = append(part1, e)
		if e.Type == string(longhaul.EventContent) {
			contents++
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

	// Part 2, from API #2, resuming after the last event seen.
	last := part1[len(part1)-1].ID
	s2 := openStream(t, ctx, api2.URL, r.ID, last, ann)
	var part2 []sseEvent
	for {
		e, err := s2.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("API #2 stream: %v after %v", err, types(part2))
		}
		part2 = append(part2, e)
	}
	if len(part2) == 0 || part2[len(part2)-1].Type != string(longhaul.EventDone) {
		t.Fatalf("the resumed stream does not end with done: %v", types(part2))
	}
	if contentText(t, part2) == "" {
		t.Errorf("the answer was over before the resume; the test proves less than it should: %v", types(part2))
	}

	parts := append(append([]sseEvent(nil), part1...), part2...)
	for i, e := range parts {
		if e.ID != int64(i+1) {
			t.Fatalf("event %d has offset %d; offsets must be 1..N once each, in order: %v", i, e.ID, offsets(parts))
		}
	}
	if got := contentText(t, parts); got != answer {
		t.Errorf("content across the restart\n got %q\nwant %q", got, answer)
	}
	if d := doneData(t, parts); d.Status != workflows.StatusCompleted {
		t.Errorf("done %+v", d)
	}
	// The parts are the run's whole log, as a fresh client of API #2 reads it.
	whole := followFrom(t, ctx, api2, r.ID, ann)
	if diff := cmp.Diff(whole, parts); diff != "" {
		t.Errorf("parts differ from the whole log (-whole +parts):\n%s", diff)
	}
	if n := len(env.Model.Requests()); n != 1 {
		t.Errorf("the model was called %d times; stopping an API must not touch the run", n)
	}
}

// followFrom reads run id's whole log from the API a.
func followFrom(t *testing.T, ctx context.Context, a *testenv.APIServer, id string, headers map[string]string) []sseEvent {
	t.Helper()
	s := openStream(t, ctx, a.URL, id, 0, headers)
	var out []sseEvent
	for {
		e, err := s.next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("stream of %s: %v", id, err)
		}
		out = append(out, e)
	}
}

func offsets(events []sseEvent) []int64 {
	out := make([]int64, len(events))
	for i, e := range events {
		out[i] = e.ID
	}
	return out
}
