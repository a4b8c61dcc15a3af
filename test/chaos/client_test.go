//go:build unix

package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/longhaul-dev/longhaul"
)

// follower follows one run's event stream as a careful client does: it
// reconnects after every break, with Last-Event-ID set to the last event it
// saw, until the stream ends with done. It records every event's offset.
type follower struct {
	api     string
	runID   string
	headers map[string]string

	offsets    []int64 // every event received, in order
	done       bool    // a done event arrived and the server then ended the stream
	status     string  // the done event's status
	text       map[string]*strings.Builder
	calls      []string // the calls that published content, in order
	connects   int      // successful connections
	refused    int      // attempts answered with another status or not at all
	breaks     int      // streams that ended without done
	streamErrs int      // stream_error frames
	problems   []string // what a client must never see
}

// frame is one SSE frame.
type frame struct {
	id    string
	event string
	data  string
}

// follow reads the run's events until done or ctx ends.
func (f *follower) follow(ctx context.Context) {
	f.text = map[string]*strings.Builder{}
	backoff := 100 * time.Millisecond
	for !f.done && ctx.Err() == nil {
		if f.stream(ctx) {
			backoff = 100 * time.Millisecond
		}
		if f.done {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, time.Second)
	}
}

// stream makes one connection and reads it to its end. It reports whether
// the connection was accepted.
func (f *follower) stream(ctx context.Context) bool {
	req, _ := http.NewRequestWithContext(ctx, "GET", f.api+"/v1/runs/"+f.runID+"/events", nil)
	for k, v := range f.headers {
		req.Header.Set(k, v)
	}
	if n := len(f.offsets); n > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(f.offsets[n-1], 10))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.refused++
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		// 503 while Temporal restarts is expected; a 404 would mean the
		// API lost the run.
		if resp.StatusCode != http.StatusServiceUnavailable {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			f.problems = append(f.problems, fmt.Sprintf("events answered %d: %s", resp.StatusCode, b))
		}
		f.refused++
		return false
	}
	f.connects++
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var cur frame
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, ":"):
		case line == "":
			if cur == (frame{}) {
				continue
			}
			if f.done {
				f.problems = append(f.problems, "a frame after done: "+cur.event)
			}
			f.take(cur)
			cur = frame{}
		case strings.HasPrefix(line, "id: "):
			cur.id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			cur.event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		default:
			f.problems = append(f.problems, fmt.Sprintf("unexpected SSE line %q", line))
		}
	}
	// A frame cut in half (cur not empty) is dropped: its id was never
	// complete, so the next connection resumes before it.
	if !f.done {
		f.breaks++
	}
	if f.done && sc.Err() != nil && !errors.Is(sc.Err(), context.Canceled) {
		f.problems = append(f.problems, "the stream broke after done: "+sc.Err().Error())
	}
	return true
}

// take records one whole frame.
func (f *follower) take(fr frame) {
	if fr.event == "stream_error" {
		// The API lost the run's log for a while (a restarting server): no
		// id, the client resumes where it was.
		f.streamErrs++
		if fr.id != "" {
			f.problems = append(f.problems, "a stream_error frame with an id")
		}
		return
	}
	id, err := strconv.ParseInt(fr.id, 10, 64)
	var e longhaul.Event
	if err != nil || json.Unmarshal([]byte(fr.data), &e) != nil || e.Offset != id || string(e.Type) != fr.event {
		f.problems = append(f.problems, fmt.Sprintf("malformed frame id %q event %q data %.200s", fr.id, fr.event, fr.data))
		return
	}
	f.offsets = append(f.offsets, id)
	switch e.Type {
	case longhaul.EventContent:
		var d longhaul.ContentData
		if e.Decode(&d) == nil {
			if f.text[d.Call] == nil {
				f.text[d.Call] = &strings.Builder{}
				f.calls = append(f.calls, d.Call)
			}
			f.text[d.Call].WriteString(d.Text)
		}
	case longhaul.EventContentReset:
		var d longhaul.ContentResetData
		if e.Decode(&d) == nil && f.text[d.Call] != nil {
			f.text[d.Call].Reset()
		}
	case longhaul.EventDone:
		var d longhaul.DoneData
		_ = e.Decode(&d)
		f.done, f.status = true, d.Status
	}
}

// content is the run's answer as the client read it: each call's text,
// without what a content_reset voided.
func (f *follower) content() string {
	var b strings.Builder
	for _, c := range f.calls {
		b.WriteString(f.text[c].String())
	}
	return b.String()
}

// lostOrRepeated counts the offsets missing from 1..last and those seen
// more than once or out of order.
func (f *follower) lostOrRepeated() (lost, repeated int) {
	var next int64 = 1
	for _, o := range f.offsets {
		switch {
		case o == next:
			next++
		case o < next:
			repeated++
		default:
			lost += int(o - next)
			next = o + 1
		}
	}
	return lost, repeated
}
