package api

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/workflows"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/converter"
)

// Poll intervals of a feed. A run is polled fast until its first event
// arrives (time to first token is what a person notices), then about as
// often as activities flush their event batches while events flow, and ever
// more slowly while the run waits on a model or a tool.
const (
	firstPoll   = 5 * time.Millisecond
	fastPhase   = 300 * time.Millisecond
	flowingPoll = 60 * time.Millisecond
	maxPoll     = 200 * time.Millisecond
	// queryBudget is the spacing, per followed run, that keeps all feeds
	// together at about a thousand queries a second: with many runs at once
	// each is polled less often instead of the worker drowning in queries.
	queryBudget = time.Millisecond
)

// eventQuerier reads a run's event log; client.Client is one.
type eventQuerier interface {
	QueryWorkflow(ctx context.Context, workflowID, runID, queryType string, args ...any) (converter.EncodedValue, error)
}

// hub runs one feed per run, however many clients follow it.
type hub struct {
	q eventQuerier
	// blobs holds the event archives of runs that continued as new; nil
	// when the API has no store.
	blobs store.Store
	mu    sync.Mutex
	feeds map[string]*feed
}

func newHub(q eventQuerier, blobs store.Store) *hub {
	return &hub{q: q, blobs: blobs, feeds: map[string]*feed{}}
}

// feed polls one run's event query with an adaptive interval and keeps the
// events it read for its subscribers.
type feed struct {
	h      *hub
	runID  string
	mu     sync.Mutex
	events []longhaul.Event
	done   bool
	err    error
	wake   chan struct{} // closed and replaced whenever something changes
	subs   int
	cancel context.CancelFunc
}

// subscribe follows run from the start of its log; release it when done.
func (h *hub) subscribe(runID string) *feed {
	h.mu.Lock()
	defer h.mu.Unlock()
	f, ok := h.feeds[runID]
	if !ok {
		ctx, cancel := context.WithCancel(context.Background())
		f = &feed{h: h, runID: runID, wake: make(chan struct{}), cancel: cancel}
		h.feeds[runID] = f
		go f.poll(ctx)
	}
	f.subs++
	return f
}

// followed is how many runs the hub polls.
func (h *hub) followed() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.feeds)
}

// release drops a subscriber; the last one stops the poller.
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

// next waits until events after offset exist, the log is done or ctx ends. It
// returns the new events and whether the log is complete after them.
func (f *feed) next(ctx context.Context, after int64) ([]longhaul.Event, bool, error) {
	for {
		f.mu.Lock()
		i := sort.Search(len(f.events), func(i int) bool { return f.events[i].Offset > after })
		out := f.events[i:]
		done, err, wake := f.done, f.err, f.wake
		f.mu.Unlock()
		if len(out) > 0 {
			return out, done, nil
		}
		if done {
			return nil, true, nil
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

func (f *feed) poll(ctx context.Context) {
	var after int64
	start := time.Now()
	interval := firstPoll
	seen := false
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
			interval = min(time.Duration(failures)*100*time.Millisecond, 2*time.Second)
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
			interval = 0
		default:
			failures = 0
			done := page.Done && (len(page.Events) == 0 || page.Events[len(page.Events)-1].Offset >= page.Last)
			if len(page.Events) > 0 {
				after = page.Events[len(page.Events)-1].Offset
			}
			f.update(page.Events, done, nil)
			switch {
			case done:
				return
			case after < page.Last:
				interval = 0 // more is waiting: read on at once
			case len(page.Events) > 0:
				seen = true
				interval = flowingPoll
			case !seen && time.Since(start) < fastPhase:
				interval = firstPoll
			default:
				interval = min(interval*3/2+time.Millisecond, maxPoll)
			}
		}
		if interval == 0 {
			continue
		}
		interval = max(interval, time.Duration(f.h.followed())*queryBudget)
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

func (f *feed) query(ctx context.Context, after int64) (workflows.EventsPage, error) {
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var page workflows.EventsPage
	v, err := f.h.q.QueryWorkflow(qctx, f.runID, "", workflows.QueryEvents, workflows.EventsRequest{After: after})
	if err != nil {
		return page, err
	}
	return page, v.Get(&page)
}

// readArchives reads the archived events after offset after.
func (f *feed) readArchives(ctx context.Context, archives []activities.EventArchive, after int64) ([]longhaul.Event, error) {
	if f.h.blobs == nil {
		return nil, errors.New("the run's older events are archived in the blob store, and this API has none (set LONGHAUL_DATABASE_URL as for the workers)")
	}
	var out []longhaul.Event
	for _, ar := range archives {
		events, err := activities.ReadArchive(ctx, f.h.blobs, f.runID, ar)
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
	f.done = done
	f.err = err
	close(f.wake)
	f.wake = make(chan struct{})
}
