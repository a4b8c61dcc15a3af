package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sort"
	"sync"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/natsbus"
	"github.com/longhaul-dev/longhaul/internal/store"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/grpc"
)

// A run reaches its followers by two paths. Its durable events are the
// workflow's log: the feed reads them with the events query, once each time
// the run's history grows (a long poll of the history is the doorbell), so
// queries follow the run's progress, not the clock. The text of its running
// model call comes as ephemeral deltas over NATS, straight from the
// activity; a follower that joins late, or notices a gap, asks the running
// call for its text so far. A finished call's whole text is a durable
// content event, so when deltas are lost the text still arrives, whole.

// eventQuerier reads a run's event log and history; client.Client is one.
type eventQuerier interface {
	QueryWorkflow(ctx context.Context, workflowID, runID, queryType string, args ...any) (converter.EncodedValue, error)
}

// historyPoller long-polls a run's history; the Temporal client's
// WorkflowService is one.
type historyPoller interface {
	GetWorkflowExecutionHistory(ctx context.Context, in *workflowservice.GetWorkflowExecutionHistoryRequest, opts ...grpc.CallOption) (*workflowservice.GetWorkflowExecutionHistoryResponse, error)
}

// deltaSource delivers the ephemeral deltas of runs; *natsbus.Bus is one.
type deltaSource interface {
	Follow(run string, handle func(longhaul.Delta)) (stop func(), err error)
	Snapshot(ctx context.Context, run string) ([]longhaul.CallText, error)
}

// maxStatuses bounds the tool progress a feed keeps for its followers.
const maxStatuses = 32

// hub runs one feed per run, however many clients follow it.
type hub struct {
	q         eventQuerier
	history   historyPoller
	namespace string
	deltas    deltaSource
	// blobs holds the event archives of runs that continued as new; nil
	// when the API has no store.
	blobs store.Store
	// log takes a feed's panic, with its stack.
	log   *slog.Logger
	mu    sync.Mutex
	feeds map[string]*feed
}

func newHub(q eventQuerier, history historyPoller, namespace string, deltas deltaSource, blobs store.Store, log *slog.Logger) *hub {
	return &hub{q: q, history: history, namespace: namespace, deltas: deltas, blobs: blobs, log: log, feeds: map[string]*feed{}}
}

// feed follows one run for this API process: its durable events, and the
// live text and tool progress of what runs now.
type feed struct {
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

// liveCall is the text a running model call has streamed so far.
type liveCall struct {
	call    string
	attempt int
	after   int64
	text    []byte
}

// status is a piece of tool progress with the feed's sequence number.
type status struct {
	seq   int64
	after int64
	data  longhaul.ToolStatusData
}

// subscribe follows run; release the feed when done.
func (h *hub) subscribe(runID string) *feed {
	h.mu.Lock()
	defer h.mu.Unlock()
	f, ok := h.feeds[runID]
	if !ok {
		ctx, cancel := context.WithCancel(context.Background())
		f = &feed{h: h, runID: runID, wake: make(chan struct{}), cancel: cancel,
			live: map[string]*liveCall{}, finished: map[string]bool{}}
		h.feeds[runID] = f
		go f.run(ctx)
	}
	f.subs++
	return f
}

// release drops a subscriber; the last one stops the feed.
func (f *feed) release() {
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
func (f *feed) run(ctx context.Context) {
	defer func() {
		if v := recover(); v != nil {
			f.h.log.Error("run feed panicked", "run", f.runID, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			f.update(nil, false, errInternal("internal error following run "+f.runID))
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

// next waits until durable events after offset exist, the log is done or
// ctx ends. It returns the new durable events and whether the log is
// complete after them.
func (f *feed) next(ctx context.Context, after int64) ([]longhaul.Event, bool, error) {
	c := f.join(cursor{after: after})
	for {
		items, done, err := f.read(ctx, c)
		if err != nil {
			return nil, false, err
		}
		var out []longhaul.Event
		for _, it := range items {
			if it.Offset > 0 {
				out = append(out, it.Event)
			}
			c = it.pos
		}
		if len(out) > 0 || done {
			return out, done, nil
		}
	}
}

// lastLocked is the offset of the last durable event the feed has; f.mu
// is held.
func (f *feed) lastLocked() int64 {
	if len(f.events) == 0 {
		return 0
	}
	return f.events[len(f.events)-1].Offset
}

func (f *feed) eventsAfter(after int64) []longhaul.Event {
	i := sort.Search(len(f.events), func(i int) bool { return f.events[i].Offset > after })
	return f.events[i:]
}

// cursor is how far one follower has read a run: every durable event up to
// after, and bytes of the text of the call running after it.
type cursor struct {
	after   int64
	call    string
	attempt int
	bytes   int
	// status is the last tool progress delivered (feed sequence).
	status int64
}

// item is what a follower reads next: a durable event (Offset > 0), or an
// ephemeral one — content_delta (data: longhaul.Delta), content_reset or
// tool_status. Pos is the follower's cursor after it.
type item struct {
	longhaul.Event
	pos cursor
}

// join returns a cursor for a follower that starts at c now: it sees tool
// progress from now on only.
func (f *feed) join(c cursor) cursor {
	f.mu.Lock()
	defer f.mu.Unlock()
	c.status = f.statusSeq
	return c
}

// read waits until something after c exists and returns it in order with
// whether the log is complete after it: durable events, then the live text
// of the call running after the last of them (once the follower has every
// durable event before the call), then tool progress.
func (f *feed) read(ctx context.Context, c cursor) ([]item, bool, error) {
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
func (f *feed) itemsAfter(c *cursor) []item {
	var out []item
	add := func(e longhaul.Event) { out = append(out, item{Event: e, pos: *c}) }
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
				// As it streamed: with its reasoning first.
				if text := d.Streamed(); c.bytes < len(text) {
					from := c.bytes
					c.bytes = len(text)
					add(longhaul.NewEvent(longhaul.EventContentDelta, e.Time, longhaul.Delta{
						Kind: longhaul.DeltaContent, Call: d.Call, Attempt: d.Attempt, After: c.after, From: from, Text: text[from:],
					}))
				}
			}
		}
		*c = cursor{after: e.Offset, status: c.status}
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
		if l.attempt == c.attempt && len(l.text) > c.bytes {
			from := c.bytes
			c.bytes = len(l.text)
			add(longhaul.NewEvent(longhaul.EventContentDelta, now, longhaul.Delta{
				Kind: longhaul.DeltaContent, Call: l.call, Attempt: l.attempt, After: l.after, From: from, Text: string(l.text[from:]),
			}))
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

// liveAfter lists the running calls that started at or before offset after,
// in order of their start.
func (f *feed) liveAfter(after int64) []*liveCall {
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
func (f *feed) onDelta(d longhaul.Delta) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch d.Kind {
	case longhaul.DeltaContent:
		switch f.addText(d.Call, d.Attempt, d.After, d.From, d.Text) {
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

// addText adds text at byte from of an attempt of a call's text. A later
// attempt replaces an earlier one's text; an earlier one's is dropped, as
// is anything for a call that is over: its whole text is durable, or the
// run's log went on after it (a call that only asked for tools).
func (f *feed) addText(call string, attempt int, after int64, from int, text string) textResult {
	if text == "" || f.finished[call] || f.done || after < f.lastLocked() {
		return textIgnored
	}
	l := f.live[call]
	if l == nil || attempt > l.attempt {
		l = &liveCall{call: call, attempt: attempt, after: after}
		f.live[call] = l
	}
	switch {
	case attempt < l.attempt:
		return textIgnored
	case from > len(l.text):
		return textGap
	case from+len(text) <= len(l.text):
		return textIgnored
	}
	l.text = append(l.text, text[len(l.text)-from:]...)
	return textAdded
}

// requestSnapshot asks the run's running call for its text so far.
func (f *feed) requestSnapshot() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requestSnapshotLocked()
}

func (f *feed) requestSnapshotLocked() {
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
			if f.addText(ct.Call, ct.Attempt, ct.After, 0, ct.Text) == textAdded {
				added = true
			}
		}
		if added {
			f.notifyLocked()
		}
	}()
}

// followLog reads the run's durable events: the events query, once at the
// start and again each time the run's history grows, until the log is done.
func (f *feed) followLog(ctx context.Context) {
	var after int64
	var doorbell historyCursor
	failures := 0
	for {
		page, err := f.query(ctx, after)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			failures++
			// A run that does not exist will not appear; other errors (no
			// worker yet, a restarting server) are retried while anyone waits.
			var notFound *serviceerror.NotFound
			if errors.As(err, &notFound) || failures > 50 {
				f.update(nil, false, err)
				return
			}
			if !sleep(ctx, min(time.Duration(failures)*100*time.Millisecond, 2*time.Second)) {
				return
			}
			continue
		case len(page.Archives) > 0:
			// The run continued as new: its older events are in archives.
			failures = 0
			events, err := f.readArchives(ctx, page.Archives, after)
			if err != nil {
				f.update(nil, false, err)
				return
			}
			if len(events) > 0 {
				after = events[len(events)-1].Offset
			}
			after = max(after, page.Archives[len(page.Archives)-1].To)
			f.update(events, false, nil)
			continue
		}
		failures = 0
		done := page.Done && (len(page.Events) == 0 || page.Events[len(page.Events)-1].Offset >= page.Last)
		if len(page.Events) > 0 {
			after = page.Events[len(page.Events)-1].Offset
		}
		f.update(page.Events, done, nil)
		if done {
			return
		}
		if after < page.Last {
			continue // more is waiting: read on at once
		}
		ended, err := f.waitHistory(ctx, &doorbell)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			var notFound *serviceerror.NotFound
			if errors.As(err, &notFound) {
				f.update(nil, false, err)
				return
			}
			// The doorbell failed (Temporal restarting): read again after a
			// pause, and ring again.
			doorbell = historyCursor{}
			if !sleep(ctx, time.Second) {
				return
			}
		case ended != "":
			// The run ended without finishing its log (terminated or timed
			// out outside Longhaul): one last read, then the end.
			page, err := f.query(ctx, after)
			if err == nil && len(page.Archives) == 0 {
				done := page.Done
				f.update(page.Events, done, nil)
				if done {
					return
				}
			}
			f.update(nil, false, errRunEnded(ended))
			return
		}
	}
}

// historyCursor is where a feed's long poll of the run's history stands.
type historyCursor struct {
	runID string
	token []byte
}

// errRunEnded is the error of a run that closed without a done event.
type errRunEnded string

func (e errRunEnded) Error() string { return "the run was " + string(e) + " outside Longhaul" }

// waitHistory returns once the run's history has grown past hc (at once,
// the first time, while hc is empty), advancing hc. ended names how the run
// closed when it closed without Longhaul finishing it (terminated, timed
// out); a run that continued as new is followed into its next execution.
func (f *feed) waitHistory(ctx context.Context, hc *historyCursor) (ended string, err error) {
	if f.h.history == nil {
		return "", errors.New("no history to follow")
	}
	for {
		resp, err := f.h.history.GetWorkflowExecutionHistory(ctx, &workflowservice.GetWorkflowExecutionHistoryRequest{
			Namespace:              f.h.namespace,
			Execution:              &commonpb.WorkflowExecution{WorkflowId: f.runID, RunId: hc.runID},
			MaximumPageSize:        1000,
			NextPageToken:          hc.token,
			WaitNewEvent:           true,
			HistoryEventFilterType: enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT,
			SkipArchival:           true,
		})
		if err != nil {
			return "", err
		}
		events := resp.GetHistory().GetEvents()
		for _, e := range events {
			if hc.runID == "" {
				if a := e.GetWorkflowExecutionStartedEventAttributes(); a != nil {
					hc.runID = a.GetOriginalExecutionRunId()
				}
			}
			switch e.GetEventType() {
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
				*hc = historyCursor{} // the next execution, from its start
				return "", nil
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED:
				return "terminated", nil
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT:
				return "timed out", nil
			}
		}
		hc.token = resp.GetNextPageToken()
		if len(events) > 0 {
			return "", nil
		}
		if len(hc.token) == 0 {
			// A closed run's history read to its end: nothing more comes.
			return "closed", nil
		}
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (f *feed) query(ctx context.Context, after int64) (contract.EventsPage, error) {
	return f.h.query(ctx, f.runID, after)
}

// query reads run's events after offset after with the events query.
func (h *hub) query(ctx context.Context, run string, after int64) (contract.EventsPage, error) {
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var page contract.EventsPage
	v, err := h.q.QueryWorkflow(qctx, run, "", contract.QueryEvents, contract.EventsRequest{After: after})
	if err != nil {
		return page, err
	}
	return page, v.Get(&page)
}

// readArchives reads the archived events after offset after.
func (f *feed) readArchives(ctx context.Context, archives []contract.EventArchive, after int64) ([]longhaul.Event, error) {
	return f.h.readArchives(ctx, f.runID, archives, after)
}

// readArchives reads run's archived events after offset after.
func (h *hub) readArchives(ctx context.Context, run string, archives []contract.EventArchive, after int64) ([]longhaul.Event, error) {
	if h.blobs == nil {
		return nil, errors.New("the run's older events are archived in the blob store, and this API has none (set LONGHAUL_DATABASE_URL as for the workers)")
	}
	var out []longhaul.Event
	for _, ar := range archives {
		events, err := readArchive(ctx, h.blobs, run, ar)
		if err != nil {
			return nil, err
		}
		for _, e := range events {
			if e.Offset > after {
				out = append(out, e)
				after = e.Offset
			}
		}
	}
	return out, nil
}

func (f *feed) update(events []longhaul.Event, done bool, err error) {
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

func (f *feed) notifyLocked() {
	close(f.wake)
	f.wake = make(chan struct{})
}

var _ deltaSource = (*natsbus.Bus)(nil)

// readArchive reads a stored stretch of a run's event log, for offsets the
// workflow no longer holds.
func readArchive(ctx context.Context, blobs store.Store, run string, ar contract.EventArchive) ([]longhaul.Event, error) {
	b, err := blobs.Get(ctx, ar.Ref)
	if err != nil {
		return nil, fmt.Errorf("read events %d-%d: %w", ar.From, ar.To, err)
	}
	if b.Run != run || b.Kind != contract.ArchiveKind {
		return nil, fmt.Errorf("events %d-%d: %s is not an event archive of run %s", ar.From, ar.To, ar.Ref, run)
	}
	var events []longhaul.Event
	if err := json.Unmarshal(b.Data, &events); err != nil {
		return nil, fmt.Errorf("events %d-%d are damaged: %w", ar.From, ar.To, err)
	}
	return events, nil
}
