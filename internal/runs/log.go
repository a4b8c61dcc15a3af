package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/store"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
)

// followLog reads the run's durable events: the events query, once at the
// start and again each time the run's history grows, until the log is done.
func (f *Feed) followLog(ctx context.Context) {
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
		if !f.waitForMore(ctx, &doorbell, after) {
			return
		}
	}
}

// waitForMore rings the doorbell: it waits until the run's history grows
// past doorbell, then reports whether followLog reads on. A history that
// cannot be followed ends the feed with the error; one that failed for now
// is read again after a pause; a run that ended without finishing its log
// gets one last read, then the end.
func (f *Feed) waitForMore(ctx context.Context, doorbell *historyCursor, after int64) bool {
	ended, err := f.waitHistory(ctx, doorbell)
	switch {
	case ctx.Err() != nil:
		return false
	case err != nil:
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) {
			f.update(nil, false, err)
			return false
		}
		// The doorbell failed (Temporal restarting): read again after a
		// pause, and ring again.
		*doorbell = historyCursor{}
		if !sleep(ctx, time.Second) {
			return false
		}
	case ended != "":
		// The run ended without finishing its log (terminated or timed
		// out outside Longhaul): one last read, then the end.
		page, err := f.query(ctx, after)
		if err == nil && len(page.Archives) == 0 {
			done := page.Done
			f.update(page.Events, done, nil)
			if done {
				return false
			}
		}
		f.update(nil, false, errRunEnded(ended))
		return false
	}
	return true
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
func (f *Feed) waitHistory(ctx context.Context, hc *historyCursor) (ended string, err error) {
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

func (f *Feed) query(ctx context.Context, after int64) (contract.EventsPage, error) {
	return f.h.Query(ctx, f.runID, after)
}

// Query reads run's events after offset after with the events query.
func (h *hub) Query(ctx context.Context, run string, after int64) (contract.EventsPage, error) {
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
func (f *Feed) readArchives(ctx context.Context, archives []contract.EventArchive, after int64) ([]longhaul.Event, error) {
	return f.h.ReadArchives(ctx, f.runID, archives, after)
}

// ReadArchives reads run's archived events after offset after.
func (h *hub) ReadArchives(ctx context.Context, run string, archives []contract.EventArchive, after int64) ([]longhaul.Event, error) {
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
