package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
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

// ArchiveEvents stores a stretch of the event log and returns its reference.
// Putting the same stretch again (a retry) stores nothing new.
func (a *Activities) ArchiveEvents(ctx context.Context, req contract.ArchiveRequest) (contract.EventArchive, error) {
	if len(req.Events) == 0 {
		return contract.EventArchive{}, nonRetryable(longhaul.ErrTypeModelRejected, errors.New("no events to archive"))
	}
	if a.Blobs == nil {
		return contract.EventArchive{}, nonRetryable(longhaul.ErrTypeNoStore, errors.New("this worker has no blob store to archive events in"))
	}
	b, err := json.Marshal(req.Events)
	if err != nil {
		return contract.EventArchive{}, nonRetryable(longhaul.ErrTypeModelRejected, fmt.Errorf("encode events: %w", err))
	}
	from, to := req.Events[0].Offset, req.Events[len(req.Events)-1].Offset
	run := activity.GetInfo(ctx).WorkflowExecution.ID
	ref, err := a.Blobs.Put(ctx, store.Blob{Run: run, Kind: contract.ArchiveKind, Name: fmt.Sprintf("%d-%d", from, to), Data: b})
	if err != nil {
		return contract.EventArchive{}, fmt.Errorf("archive events %d-%d: %w", from, to, err)
	}
	return contract.EventArchive{From: from, To: to, Ref: ref}, nil
}
