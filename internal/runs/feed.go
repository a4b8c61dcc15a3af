package runs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sort"
	"sync"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/internal/natsbus"
	"github.com/longhaul-dev/longhaul/internal/store"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/grpc"
)

// Querier reads a run's event log with the events query; the Temporal
// client.Client is one.
type Querier interface {
	QueryWorkflow(ctx context.Context, workflowID, runID, queryType string, args ...any) (converter.EncodedValue, error)
}

// HistoryPoller long-polls a run's history; the Temporal client's
// WorkflowService is one.
type HistoryPoller interface {
	GetWorkflowExecutionHistory(ctx context.Context, in *workflowservice.GetWorkflowExecutionHistoryRequest, opts ...grpc.CallOption) (*workflowservice.GetWorkflowExecutionHistoryResponse, error)
}

// Deltas delivers the ephemeral deltas of runs; *natsbus.Bus is one.
type Deltas interface {
	Follow(run string, handle func(longhaul.Delta)) (stop func(), err error)
	Snapshot(ctx context.Context, run string) ([]longhaul.CallText, error)
}

// maxStatuses bounds the tool progress a feed keeps for its followers.
const maxStatuses = 32

// hub runs one feed per run, however many clients follow it.
type hub struct {
	q         Querier
	history   HistoryPoller
	namespace string
	deltas    Deltas
	// blobs holds the event archives of runs that continued as new; nil
	// when the API has no store.
	blobs store.Store
	// log takes a feed's panic, with its stack.
	log   *slog.Logger
	mu    sync.Mutex
	feeds map[string]*Feed
}

// newHub returns a hub that reads runs' event logs through q, waits on their
// history in namespace through history, and takes their live text from
// deltas (nil: none). blobs holds the event archives of runs that continued
// as new (nil: the API has no store); log takes a feed's panic.
func newHub(q Querier, history HistoryPoller, namespace string, deltas Deltas, blobs store.Store, log *slog.Logger) *hub {
	return &hub{q: q, history: history, namespace: namespace, deltas: deltas, blobs: blobs, log: log, feeds: map[string]*Feed{}}
}

// Feed follows one run for this API process: its durable events, and the
// live text and tool progress of what runs now.
type Feed struct {
	h      *hub
	runID  string
	cancel context.CancelFunc
	subs   int

	mu     sync.Mutex
	events []longhaul.Event
	done   bool
	err    error
	wake   chan struct{} // closed and replaced whenever something changes
	// live holds the text of the run's running model calls, by call;
	// finished names the calls whose whole text is in events.
	live     map[string]*liveCall
	finished map[string]bool
	statuses []status
	// statusSeq numbers tool progress within this feed.
	statusSeq int64
	// snapshotting is set while a snapshot request is out.
	snapshotting bool
}

// liveCall is the text (and the reasoning before it) a running model call
// has streamed so far.
type liveCall struct {
	call      string
	attempt   int
	after     int64
	reasoning []byte
	text      []byte
}

// status is a piece of tool progress with the feed's sequence number.
type status struct {
	seq   int64
	after int64
	data  longhaul.ToolStatusData
}

// Subscribe follows run; Release the feed when done.
func (h *hub) Subscribe(runID string) *Feed {
	h.mu.Lock()
	defer h.mu.Unlock()
	f, ok := h.feeds[runID]
	if !ok {
		ctx, cancel := context.WithCancel(context.Background())
		f = &Feed{h: h, runID: runID, wake: make(chan struct{}), cancel: cancel,
			live: map[string]*liveCall{}, finished: map[string]bool{}}
		h.feeds[runID] = f
		go f.run(ctx)
	}
	f.subs++
	return f
}

// Release drops a subscriber; the last one stops the feed.
func (f *Feed) Release() {
	f.h.mu.Lock()
	defer f.h.mu.Unlock()
	f.subs--
	if f.subs == 0 {
		f.cancel()
		if f.h.feeds[f.runID] == f {
			delete(f.h.feeds, f.runID)
		}
	}
}

// run follows the run until it is done or the last subscriber leaves. A
// panic while following ends the feed with an error for its followers
// (and a log line with the stack), not the process.
func (f *Feed) run(ctx context.Context) {
	defer func() {
		if v := recover(); v != nil {
			f.h.log.Error("run feed panicked", "run", f.runID, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			f.update(nil, false, errors.New("internal error following run "+f.runID))
		}
	}()
	if f.h.deltas != nil {
		stop, err := f.h.deltas.Follow(f.runID, f.onDelta)
		if err == nil {
			defer stop()
			// A call may have been streaming before this feed existed.
			f.requestSnapshot()
		}
	}
	f.followLog(ctx)
	<-ctx.Done()
}

// Next waits until durable events after offset exist, the log is done or
// ctx ends. It returns the new durable events and whether the log is
// complete after them.
func (f *Feed) Next(ctx context.Context, after int64) ([]longhaul.Event, bool, error) {
	c := f.Join(Cursor{after: after})
	for {
		items, done, err := f.Read(ctx, c)
		if err != nil {
			return nil, false, err
		}
		var out []longhaul.Event
		for _, it := range items {
			if it.Offset > 0 {
				out = append(out, it.Event)
			}
			c = it.Pos
		}
		if len(out) > 0 || done {
			return out, done, nil
		}
	}
}

// lastLocked is the offset of the last durable event the feed has; f.mu
// is held.
func (f *Feed) lastLocked() int64 {
	if len(f.events) == 0 {
		return 0
	}
	return f.events[len(f.events)-1].Offset
}

func (f *Feed) eventsAfter(after int64) []longhaul.Event {
	i := sort.Search(len(f.events), func(i int) bool { return f.events[i].Offset > after })
	return f.events[i:]
}

// Join returns a cursor for a follower that starts at c now: it sees tool
// progress from now on only.
func (f *Feed) Join(c Cursor) Cursor {
	f.mu.Lock()
	defer f.mu.Unlock()
	c.status = f.statusSeq
	return c
}

// Read waits until something after c exists and returns it in order with
// whether the log is complete after it: durable events, then the live text
// of the call running after the last of them (once the follower has every
// durable event before the call), then tool progress.
func (f *Feed) Read(ctx context.Context, c Cursor) ([]Item, bool, error) {
	for {
		f.mu.Lock()
		out := f.itemsAfter(&c)
		complete := f.done && (len(f.events) == 0 || c.after >= f.events[len(f.events)-1].Offset)
		err, wake := f.err, f.wake
		f.mu.Unlock()
		if len(out) > 0 || complete {
			return out, complete, nil
		}
		if err != nil {
			return nil, false, err
		}
		select {
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case <-wake:
		}
	}
}

// itemsAfter lists what c has not read, advancing c. Called with f.mu held.
func (f *Feed) itemsAfter(c *Cursor) []Item {
	var out []Item
	add := func(e longhaul.Event) { out = append(out, Item{Event: e, Pos: *c}) }
	for _, e := range f.eventsAfter(c.after) {
		var d longhaul.ContentData
		if e.Type == longhaul.EventContent && e.Decode(&d) == nil {
			if c.call == "" && c.bytes > 0 {
				c.call = d.Call // a resumed follower learns its call's name
			}
			if c.call == d.Call {
				// The whole text of the call the follower streamed: what it
				// has not seen yet, from this attempt.
				if d.Attempt != 0 && d.Attempt != c.attempt {
					c.attempt, c.bytes = d.Attempt, 0
					add(longhaul.NewEvent(longhaul.EventContentReset, e.Time, longhaul.ContentResetData{Call: d.Call, Attempt: d.Attempt, Reason: "replacing a failed attempt's text"}))
				}
				// As it streamed: its reasoning, then its text.
				for _, it := range outputAfter(c.bytes, d.Call, d.Attempt, c.after, d.Reasoning, d.Text) {
					c.bytes = it.pos
					add(longhaul.NewEvent(it.typ, e.Time, it.delta))
				}
			}
		}
		if e.Type == longhaul.EventModelFallback {
			f.dropFailedModel(c, e, add)
		}
		*c = Cursor{after: e.Offset, status: c.status}
		add(e)
	}
	if f.done {
		return out
	}
	for _, l := range f.liveAfter(c.after) {
		if c.call == "" && c.bytes > 0 {
			c.call = l.call
		}
		if l.call != c.call {
			c.call, c.attempt, c.bytes = l.call, l.attempt, 0
		}
		now := time.Now()
		if l.attempt > c.attempt {
			reset := c.bytes > 0 || c.attempt > 0
			c.attempt, c.bytes = l.attempt, 0
			if reset {
				add(longhaul.NewEvent(longhaul.EventContentReset, now, longhaul.ContentResetData{Call: l.call, Attempt: l.attempt, Reason: "retrying the model call"}))
			}
		}
		if l.attempt == c.attempt {
			for _, it := range outputAfter(c.bytes, l.call, l.attempt, l.after, string(l.reasoning), string(l.text)) {
				c.bytes = it.pos
				add(longhaul.NewEvent(it.typ, now, it.delta))
			}
		}
	}
	for _, st := range f.statuses {
		if st.seq <= c.status {
			continue
		}
		if st.after > c.after {
			break // its tool_start has not reached the follower yet
		}
		c.status = st.seq
		add(longhaul.NewEvent(longhaul.EventToolStatus, time.Now(), st.data))
	}
	return out
}

// outputDelta is a delta of a call's output, as the event it is sent in,
// with the follower's position after it.
type outputDelta struct {
	typ   longhaul.EventType
	delta longhaul.Delta
	pos   int
}

// outputAfter is what of a call's output (reasoning, then text) a follower
// that has seen bytes of it has not, as deltas: a position counts the
// reasoning's bytes, then the text's, since the reasoning comes first and
// is complete once the text began (activities' thinking).
func outputAfter(seen int, call string, attempt int, after int64, reasoning, text string) []outputDelta {
	var out []outputDelta
	if seen < len(reasoning) {
		out = append(out, outputDelta{longhaul.EventReasoningDelta, longhaul.Delta{
			Kind: longhaul.DeltaReasoning, Call: call, Attempt: attempt, After: after, From: seen, Text: reasoning[seen:],
		}, len(reasoning)})
		seen = len(reasoning)
	}
	if at := seen - len(reasoning); at < len(text) {
		out = append(out, outputDelta{longhaul.EventContentDelta, longhaul.Delta{
			Kind: longhaul.DeltaContent, Call: call, Attempt: attempt, After: after, From: at, Text: text[at:],
		}, len(reasoning) + len(text)})
	}
	return out
}

// dropFailedModel resets the text the follower at c streamed of a call
// whose model failed and hands over to the next model of its fallback
// list: the next model's text replaces it, from its start, as a retry's
// does, so a client never reads two models' text run together.
func (f *Feed) dropFailedModel(c *Cursor, e longhaul.Event, add func(longhaul.Event)) {
	var d longhaul.ModelFallbackData
	if e.Decode(&d) != nil || d.Call == "" || d.Call != c.call || c.bytes == 0 {
		return
	}
	add(longhaul.NewEvent(longhaul.EventContentReset, e.Time, longhaul.ContentResetData{
		Call: d.Call, Attempt: c.attempt, Reason: "model " + d.Model + " failed; " + d.Next + " answers instead",
	}))
}

// liveAfter lists the running calls that started at or before offset after,
// in order of their start.
func (f *Feed) liveAfter(after int64) []*liveCall {
	var out []*liveCall
	for _, l := range f.live {
		if l.after <= after && !f.finished[l.call] {
			out = append(out, l)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].after != out[j].after {
			return out[i].after < out[j].after
		}
		return out[i].call < out[j].call
	})
	return out
}

// onDelta takes a delta from NATS.
func (f *Feed) onDelta(d longhaul.Delta) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch d.Kind {
	case longhaul.DeltaContent, longhaul.DeltaReasoning:
		switch f.addText(d.Kind, d.Call, d.Attempt, d.After, d.From, d.Text) {
		case textGap:
			f.requestSnapshotLocked()
		case textAdded:
			f.notifyLocked()
		}
	case longhaul.DeltaToolStatus:
		if d.Status == nil {
			return
		}
		f.statusSeq++
		f.statuses = append(f.statuses, status{seq: f.statusSeq, after: d.After, data: *d.Status})
		if len(f.statuses) > maxStatuses {
			f.statuses = f.statuses[len(f.statuses)-maxStatuses:]
		}
		f.notifyLocked()
	}
}

type textResult int

const (
	textIgnored textResult = iota
	textAdded
	textGap
)

// addText adds text at byte from of an attempt of a call's text (of its
// reasoning, for kind DeltaReasoning). A later attempt replaces an earlier
// one's text; an earlier one's is dropped, as is anything for a call that
// is over: its whole text is durable, or the run's log went on after it (a
// call that only asked for tools).
func (f *Feed) addText(kind longhaul.DeltaKind, call string, attempt int, after int64, from int, text string) textResult {
	if text == "" || f.finished[call] || f.done || after < f.lastLocked() {
		return textIgnored
	}
	l := f.live[call]
	if l == nil || attempt > l.attempt {
		l = &liveCall{call: call, attempt: attempt, after: after}
		f.live[call] = l
	}
	buf := &l.text
	if kind == longhaul.DeltaReasoning {
		buf = &l.reasoning
	}
	switch {
	case attempt < l.attempt:
		return textIgnored
	case from > len(*buf):
		return textGap
	case from+len(text) <= len(*buf):
		return textIgnored
	}
	*buf = append(*buf, text[len(*buf)-from:]...)
	return textAdded
}

// requestSnapshot asks the run's running call for its text so far.
func (f *Feed) requestSnapshot() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requestSnapshotLocked()
}

func (f *Feed) requestSnapshotLocked() {
	if f.snapshotting || f.done || f.h.deltas == nil {
		return
	}
	f.snapshotting = true
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		calls, _ := f.h.deltas.Snapshot(ctx, f.runID)
		f.mu.Lock()
		defer f.mu.Unlock()
		f.snapshotting = false
		added := false
		for _, ct := range calls {
			r := f.addText(longhaul.DeltaReasoning, ct.Call, ct.Attempt, ct.After, 0, ct.Reasoning)
			if f.addText(longhaul.DeltaContent, ct.Call, ct.Attempt, ct.After, 0, ct.Text) == textAdded || r == textAdded {
				added = true
			}
		}
		if added {
			f.notifyLocked()
		}
	}()
}

func (f *Feed) update(events []longhaul.Event, done bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(events) == 0 && !done && err == nil {
		return
	}
	f.events = append(f.events, events...)
	for _, e := range events {
		var d longhaul.ContentData
		if e.Type == longhaul.EventContent && e.Decode(&d) == nil {
			f.finished[d.Call] = true
		}
	}
	// A call is over once the log goes on after the point it started from.
	last := f.lastLocked()
	for call, l := range f.live {
		if l.after < last {
			delete(f.live, call)
		}
	}
	f.done = done
	f.err = err
	if done {
		f.live = map[string]*liveCall{}
	}
	f.notifyLocked()
}

func (f *Feed) notifyLocked() {
	close(f.wake)
	f.wake = make(chan struct{})
}

var _ Deltas = (*natsbus.Bus)(nil)
