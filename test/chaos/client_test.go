//go:build unix

package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/internal/testing/ssetest"
)

// follower follows one run's event stream as a careful client does: it
// reconnects after every break, with Last-Event-ID set to the id of the
// last frame it saw — a durable event's offset, or the offset:bytes of a
// content_delta in the middle of an answer — until the stream ends with
// done. It records every durable event's offset and pieces each model
// call's text together from the content_delta frames (a content_reset
// voiding a failed attempt's text), checking every delta starts where the
// text it has ends. Like a client behind a load balancer, it stays on one
// API while that API answers (a 503 included) and goes on to the next one
// of its list when it cannot connect (the API is down), resuming there.
type follower struct {
	// apis are the base URLs of the APIs the client reaches, the one it
	// starts on first.
	apis    []string
	runID   string
	headers map[string]string
	// onDelta, when set, is told after every content_delta which API (an
	// index in apis) sent it and how many bytes of its call's text the
	// follower has.
	onDelta func(api, end int)

	lastID     string  // the id of the last frame with one: where to resume
	offsets    []int64 // every durable event received, in order
	done       bool    // a done event arrived and the server then ended the stream
	status     string  // the done event's status
	calls      map[string]*callText
	order      []string // the calls, in the order their text began
	connects   int      // successful connections
	resumes    int      // connections with Last-Event-ID
	midResumes int      // of them, resumed inside an answer (offset:bytes)
	refused    int      // attempts answered with another status or not at all
	breaks     int      // streams that ended without done
	streamErrs int      // stream_error frames
	deltas     int      // content_delta frames
	resets     int      // content_reset frames
	statuses   int      // tool_status frames
	// textLost and textRepeated count the bytes of a call's text the
	// deltas skipped or sent twice, measured against the next delta and
	// against the call's durable content.
	textLost, textRepeated int
	problems               []string // what a client must never see (the first maxProblems)
	moreProblems           int      // and how many more there were
	lastProblem            string
	sameProblem            int // times lastProblem came again in a row
	// trace is what the follower did, for a run that fails: its
	// connections and frames, the first and the last traceLen.
	trace, traceTail []string
	traced           int
	lastNote         string
	sameNote         int

	// crossResumes counts the resumes on another API than the one the
	// previous connection went to; crossMid those inside an answer.
	crossResumes, crossMid int
	lastAPI                int   // the API of the last connection, 1-based; 0 before any
	deltasOn               []int // content_delta frames per API

	mu        sync.Mutex
	streaming bool // a call's deltas came and its durable content has not yet
	// at is the API the follower reaches now (an index in apis). Only the
	// follower's goroutine writes it, under mu; it reads it without.
	at       int
	finished bool  // done, for the test's goroutine
	accepted []int // connections accepted per API
}

// newFollower returns a follower of run that reaches apis, starting on
// apis[at], as the principal in headers; onDelta may be nil.
func newFollower(apis []string, at int, run string, headers map[string]string, onDelta func(api, end int)) *follower {
	return &follower{
		apis: apis, at: at, runID: run, headers: headers, onDelta: onDelta,
		calls: map[string]*callText{}, deltasOn: make([]int, len(apis)), accepted: make([]int, len(apis)),
	}
}

// Bounds of what a follower keeps for the failure messages.
const (
	maxProblems = 10
	traceLen    = 40
)

// problem notes something a client must never see.
func (f *follower) problem(format string, args ...any) {
	p := fmt.Sprintf(format, args...)
	if p == f.lastProblem {
		f.sameProblem++
		return
	}
	f.flushProblem()
	f.lastProblem = p
	if len(f.problems) >= maxProblems {
		f.moreProblems++
		return
	}
	f.problems = append(f.problems, p)
}

// flushProblem notes how often the last problem repeated.
func (f *follower) flushProblem() {
	if f.sameProblem > 0 && len(f.problems) < maxProblems {
		f.problems = append(f.problems, fmt.Sprintf("(the same %d more times in a row)", f.sameProblem))
	}
	f.sameProblem = 0
}

// note adds a line to the trace; a line like the last one is counted.
func (f *follower) note(format string, args ...any) {
	what := fmt.Sprintf(format, args...)
	if what == f.lastNote {
		f.sameNote++
		return
	}
	if f.sameNote > 0 {
		n := f.sameNote
		f.sameNote = 0
		f.note("(the same %d more times)", n)
	}
	f.lastNote = what
	f.traced++
	line := time.Now().Format("15:04:05.000") + " " + what
	if len(f.trace) < traceLen {
		f.trace = append(f.trace, line)
		return
	}
	f.traceTail = append(f.traceTail, line)
	if len(f.traceTail) > traceLen {
		f.traceTail = f.traceTail[1:]
	}
}

// traceText is the trace as one block.
func (f *follower) traceText() string {
	out := append([]string(nil), f.trace...)
	if skipped := f.traced - len(f.trace) - len(f.traceTail); skipped > 0 {
		out = append(out, fmt.Sprintf("... %d more ...", skipped))
	}
	out = append(out, f.traceTail...)
	if f.sameNote > 0 {
		out = append(out, fmt.Sprintf("(the same %d more times)", f.sameNote))
	}
	return strings.Join(out, "\n")
}

// untimed is an event's JSON without its time, so that frames that repeat
// one another look the same in the trace.
func untimed(data string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(data), &m) != nil {
		return data
	}
	delete(m, "time")
	b, _ := json.Marshal(m)
	return string(b)
}

// callText is what the follower has of one model call's text.
type callText struct {
	attempt int
	text    string
	// live counts the deltas of the call that came before its durable
	// content: the call streamed. A call without any has its text from
	// the durable content only.
	live    int
	durable *string // the text of the call's durable content event
}

// follow reads the run's events until done or ctx ends.
func (f *follower) follow(ctx context.Context) {
	defer f.flushProblem()
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
	api := f.at
	req, _ := http.NewRequestWithContext(ctx, "GET", f.apis[api]+"/v1/runs/"+f.runID+"/events", nil)
	for k, v := range f.headers {
		req.Header.Set(k, v)
	}
	if f.lastID != "" {
		req.Header.Set("Last-Event-ID", f.lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.note("connect to %s (Last-Event-ID %q): %v", apiName(api), f.lastID, err)
		f.refused++
		if len(f.apis) > 1 && ctx.Err() == nil {
			f.mu.Lock()
			f.at = (api + 1) % len(f.apis)
			f.mu.Unlock()
			f.note("next: %s", apiName(f.at))
		}
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		// 503 while Temporal restarts is expected; a 404 would mean the
		// API lost the run.
		if resp.StatusCode != http.StatusServiceUnavailable {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			f.problem("events (Last-Event-ID %q) answered %d: %s", f.lastID, resp.StatusCode, b)
		}
		f.note("connect to %s (Last-Event-ID %q): %d", apiName(api), f.lastID, resp.StatusCode)
		f.refused++
		return false
	}
	f.note("connected to %s (Last-Event-ID %q)", apiName(api), f.lastID)
	f.connects++
	if f.lastID != "" {
		mid := strings.Contains(f.lastID, ":")
		f.resumes++
		if mid {
			f.midResumes++
		}
		if f.lastAPI != api+1 {
			f.crossResumes++
			if mid {
				f.crossMid++
			}
		}
	}
	f.lastAPI = api + 1
	f.mu.Lock()
	f.accepted[api]++
	f.mu.Unlock()
	rd := ssetest.NewReader(resp.Body)
	for {
		var fr ssetest.Event
		if fr, err = rd.Next(); err != nil {
			break
		}
		if f.done {
			f.problem("a frame after done: %s", fr.Event)
		}
		f.take(api, fr)
	}
	// A frame cut in half (io.ErrUnexpectedEOF) is dropped: its id was
	// never complete, so the next connection resumes before it.
	if errors.Is(err, ssetest.ErrMalformed) {
		f.problem("%v", err)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = nil
	}
	f.note("stream ended (done %v, error %v)", f.done, err)
	if !f.done {
		f.breaks++
	}
	if f.done && err != nil && !errors.Is(err, context.Canceled) {
		f.problem("the stream broke after done: %v", err)
	}
	return true
}

// take records one whole frame, which API api sent.
func (f *follower) take(api int, fr ssetest.Event) {
	f.note("%s %s %.160s", fr.ID, fr.Event, untimed(fr.Data))
	if fr.Event == "stream_error" {
		// The API lost the run's log for a while (a restarting server): no
		// id, the client resumes where it was.
		f.streamErrs++
		if fr.HasID() {
			f.problem("a stream_error frame with an id")
		}
		return
	}
	want := "id,event,data"
	if fr.Event == string(longhaul.EventToolStatus) {
		want = "event,data" // tool progress is not resumed: no id
	}
	var e longhaul.Event
	if strings.Join(fr.Fields, ",") != want || json.Unmarshal([]byte(fr.Data), &e) != nil || string(e.Type) != fr.Event {
		f.problem("malformed frame (fields %v) id %q event %q data %.200s", fr.Fields, fr.ID, fr.Event, fr.Data)
		return
	}
	switch e.Type {
	case longhaul.EventToolStatus:
		f.statuses++
		var d longhaul.ToolStatusData
		if e.Offset != 0 || e.Decode(&d) != nil || d.ToolCallID == "" {
			f.problem("malformed tool_status %.200s", fr.Data)
		}
		return
	case longhaul.EventContentDelta:
		f.deltasOn[api]++
		f.delta(api, fr, e)
		return
	case longhaul.EventContentReset:
		f.reset(fr, e)
		return
	}
	id, err := strconv.ParseInt(fr.ID, 10, 64)
	if err != nil || e.Offset != id || id <= 0 {
		f.problem("durable frame with id %q, offset %d: %.200s", fr.ID, e.Offset, fr.Data)
		return
	}
	f.offsets = append(f.offsets, id)
	f.lastID = fr.ID
	switch e.Type {
	case longhaul.EventContent:
		var d longhaul.ContentData
		if e.Decode(&d) != nil {
			f.problem("malformed content %.200s", fr.Data)
			return
		}
		f.durable(d)
	case longhaul.EventDone:
		var d longhaul.DoneData
		_ = e.Decode(&d)
		f.done, f.status = true, d.Status
		f.mu.Lock()
		f.finished = true
		f.mu.Unlock()
	}
}

// call is the follower's text of call.
func (f *follower) call(name string) *callText {
	c := f.calls[name]
	if c == nil {
		c = &callText{}
		f.calls[name] = c
		f.order = append(f.order, name)
	}
	return c
}

// checkPosition checks the id of an ephemeral frame: the offset of the last
// durable event the follower has, the bytes of the call's text it has after
// the frame, and the attempt when it is not the first.
func (f *follower) checkPosition(fr ssetest.Event, bytes, attempt int) {
	want := "0"
	if n := len(f.offsets); n > 0 {
		want = strconv.FormatInt(f.offsets[n-1], 10)
	}
	want += ":" + strconv.Itoa(bytes)
	if attempt > 1 {
		want += ":" + strconv.Itoa(attempt)
	}
	if fr.ID != want {
		f.problem("%s frame with id %q, want %q", fr.Event, fr.ID, want)
	}
}

// delta adds a piece of a call's text, which API api sent.
func (f *follower) delta(api int, fr ssetest.Event, e longhaul.Event) {
	f.deltas++
	var d longhaul.Delta
	if e.Offset != 0 || e.Decode(&d) != nil || d.Kind != longhaul.DeltaContent || d.Call == "" || d.Text == "" || d.From < 0 {
		f.problem("malformed content_delta id %q: %.200s", fr.ID, fr.Data)
		return
	}
	c := f.call(d.Call)
	if c.durable != nil {
		f.problem("a content_delta of %s after its durable content", d.Call)
	}
	switch {
	case c.attempt == 0:
		c.attempt = d.Attempt
	case d.Attempt != c.attempt:
		f.problem("a content_delta of %s attempt %d while it has attempt %d, without content_reset", d.Call, d.Attempt, c.attempt)
		c.attempt = d.Attempt
	}
	switch have := len(c.text); {
	case d.From > have:
		f.textLost += d.From - have
		f.problem("a content_delta of %s from byte %d, but the client has %d: %d bytes lost", d.Call, d.From, have, d.From-have)
		c.text += strings.Repeat("\x00", d.From-have) + d.Text
	case d.From < have:
		n := min(have-d.From, len(d.Text))
		f.textRepeated += n
		f.problem("a content_delta of %s from byte %d, but the client has %d: %d bytes repeated", d.Call, d.From, have, n)
		c.text = c.text[:d.From] + d.Text
	default:
		c.text += d.Text
	}
	f.checkPosition(fr, len(c.text), d.Attempt)
	f.lastID = fr.ID
	c.live++
	f.mu.Lock()
	f.streaming = true
	f.mu.Unlock()
	if f.onDelta != nil {
		f.onDelta(api, len(c.text))
	}
}

// reset voids a call's text: a retried attempt's follows from its start.
func (f *follower) reset(fr ssetest.Event, e longhaul.Event) {
	f.resets++
	var d longhaul.ContentResetData
	if e.Offset != 0 || e.Decode(&d) != nil || d.Call == "" || d.Attempt < 2 {
		f.problem("malformed content_reset id %q: %.200s", fr.ID, fr.Data)
		return
	}
	c := f.call(d.Call)
	if d.Attempt <= c.attempt {
		f.problem("a content_reset of %s to attempt %d while it has attempt %d", d.Call, d.Attempt, c.attempt)
	}
	c.attempt, c.text = d.Attempt, ""
	f.checkPosition(fr, 0, d.Attempt)
	f.lastID = fr.ID
}

// durable takes a call's durable content, its whole text: the text the
// deltas brought must be exactly it, since the stream sends what the
// deltas had not brought yet before it.
func (f *follower) durable(d longhaul.ContentData) {
	c := f.call(d.Call)
	if c.durable != nil {
		f.problem("two durable contents of %s", d.Call)
	}
	text := d.Text
	c.durable = &text
	f.mu.Lock()
	f.streaming = false
	f.mu.Unlock()
	if c.live == 0 {
		return // not streamed: the durable content is the text
	}
	switch {
	case c.text == text:
	case strings.HasPrefix(text, c.text):
		f.textLost += len(text) - len(c.text)
		f.problem("streamed %d bytes of %s, whose durable content has %d: %q lost", len(c.text), d.Call, len(text), text[len(c.text):])
	case strings.HasPrefix(c.text, text):
		f.textRepeated += len(c.text) - len(text)
		f.problem("streamed %d bytes of %s, whose durable content has %d: %q repeated", len(c.text), d.Call, len(text), c.text[len(text):])
	default:
		f.textLost += len(text)
		f.problem("streamed %q for %s, whose durable content is %q", c.text, d.Call, text)
	}
}

// where reports the API the follower reaches now, whether it has seen
// done, and how many of its connections each API accepted so far.
func (f *follower) where() (api int, done bool, accepted []int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.at, f.finished, append([]int(nil), f.accepted...)
}

// isStreaming reports whether a call's text is coming live now.
func (f *follower) isStreaming() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.streaming
}

// content is the run's answer in its durable content events.
func (f *follower) content() string {
	var b strings.Builder
	for _, name := range f.order {
		if c := f.calls[name]; c.durable != nil {
			b.WriteString(*c.durable)
		}
	}
	return b.String()
}

// streamed is the run's answer as the client showed it: each call's text
// from its deltas, or, for a call the client never saw streaming (it ran
// while the client or NATS was away), its durable content.
func (f *follower) streamed() string {
	var b strings.Builder
	for _, name := range f.order {
		c := f.calls[name]
		switch {
		case c.live > 0:
			b.WriteString(c.text)
		case c.durable != nil:
			b.WriteString(*c.durable)
		}
	}
	return b.String()
}

// streamedCalls counts the calls with text whose text came live (at least
// one delta before the durable content) and those whose text came whole
// in the durable content only.
func (f *follower) streamedCalls() (live, whole int) {
	for _, c := range f.calls {
		switch {
		case c.live > 0:
			live++
		case c.durable != nil && *c.durable != "":
			whole++
		}
	}
	return live, whole
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
