package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/internal/store"
	"go.temporal.io/sdk/activity"
)

// Claim checks keep what grows with a run out of its history: the
// conversation a long tool loop sends to the model on every turn, and the
// event log of an execution that continues as new. The workflow holds only
// their references.

// Blob kinds of the claim checks.
const (
	kindConversation = "conversation"
	kindEvents       = "events"
)

func (a *Activities) storeConversation(ctx context.Context, run string, msgs []longhaul.Message) (string, error) {
	b, err := json.Marshal(msgs)
	if err != nil {
		return "", nonRetryable(longhaul.ErrTypeModelRejected, fmt.Errorf("encode the conversation: %w", err))
	}
	ref, err := a.Blobs.Put(ctx, store.Blob{Run: run, Kind: kindConversation, Name: strconv.Itoa(len(msgs)), Data: b})
	if err != nil {
		if errors.Is(err, store.ErrTooLarge) {
			return "", nonRetryable(longhaul.ErrTypeModelRejected, fmt.Errorf("the conversation is too large to store: %w", err))
		}
		return "", fmt.Errorf("store the conversation: %w", err)
	}
	return ref, nil
}

func (a *Activities) loadConversation(ctx context.Context, ref string) ([]longhaul.Message, error) {
	if a.Blobs == nil {
		return nil, nonRetryable(longhaul.ErrTypeNoStore, errors.New("the run's conversation is in the blob store, and this worker has none"))
	}
	b, err := a.Blobs.Get(ctx, ref)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, nonRetryable(longhaul.ErrTypeLostBlob, fmt.Errorf("the run's stored conversation %s is gone", ref))
		}
		return nil, fmt.Errorf("read the conversation: %w", err)
	}
	var msgs []longhaul.Message
	if err := json.Unmarshal(b.Data, &msgs); err != nil {
		return nil, nonRetryable(longhaul.ErrTypeLostBlob, fmt.Errorf("the stored conversation %s is damaged: %w", ref, err))
	}
	return msgs, nil
}

// ArchiveRequest is a stretch of a run's event log to keep in the blob store
// before the workflow continues as new without it.
type ArchiveRequest struct {
	Events []longhaul.Event `json:"events"`
}

// EventArchive names a stored stretch of a run's event log: the events with
// offsets From to To, both included.
type EventArchive struct {
	From int64  `json:"from"`
	To   int64  `json:"to"`
	Ref  string `json:"ref"`
}

// ArchiveEvents stores a stretch of the event log and returns its reference.
// Putting the same stretch again (a retry) stores nothing new.
func (a *Activities) ArchiveEvents(ctx context.Context, req ArchiveRequest) (EventArchive, error) {
	if len(req.Events) == 0 {
		return EventArchive{}, nonRetryable(longhaul.ErrTypeModelRejected, errors.New("no events to archive"))
	}
	if a.Blobs == nil {
		return EventArchive{}, nonRetryable(longhaul.ErrTypeNoStore, errors.New("this worker has no blob store to archive events in"))
	}
	b, err := json.Marshal(req.Events)
	if err != nil {
		return EventArchive{}, nonRetryable(longhaul.ErrTypeModelRejected, fmt.Errorf("encode events: %w", err))
	}
	from, to := req.Events[0].Offset, req.Events[len(req.Events)-1].Offset
	run := activity.GetInfo(ctx).WorkflowExecution.ID
	ref, err := a.Blobs.Put(ctx, store.Blob{Run: run, Kind: kindEvents, Name: fmt.Sprintf("%d-%d", from, to), Data: b})
	if err != nil {
		return EventArchive{}, fmt.Errorf("archive events %d-%d: %w", from, to, err)
	}
	return EventArchive{From: from, To: to, Ref: ref}, nil
}

// ReadArchive reads a stored stretch of a run's event log: what a reader of
// the log (the API) uses for offsets the workflow no longer holds.
func ReadArchive(ctx context.Context, blobs store.Store, run string, ar EventArchive) ([]longhaul.Event, error) {
	b, err := blobs.Get(ctx, ar.Ref)
	if err != nil {
		return nil, fmt.Errorf("read events %d-%d: %w", ar.From, ar.To, err)
	}
	if b.Run != run || b.Kind != kindEvents {
		return nil, fmt.Errorf("events %d-%d: %s is not an event archive of run %s", ar.From, ar.To, ar.Ref, run)
	}
	var events []longhaul.Event
	if err := json.Unmarshal(b.Data, &events); err != nil {
		return nil, fmt.Errorf("events %d-%d are damaged: %w", ar.From, ar.To, err)
	}
	return events, nil
}
