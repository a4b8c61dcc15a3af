package responsesapi

import (
	"context"
	"errors"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/api/sse"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// This file streams a response: its segment of the run's log, rendered
// into Responses stream events by wire.ResponseRenderer, live or (GET
// with stream=true) resumed from any sequence number.

// streamSegment writes the segment of run after start as a Responses
// event stream, from the event after sequence number after (-1: from the
// start). A response that is not stored goes with its stream however the
// stream ends: complete, the client gone, an error or the server shutting
// down (see forget).
func (h *Handlers) streamSegment(sw *sse.Writer, run string, start int64, base wire.Response, background bool, after int64, store bool) {
	f := h.Runs.Service.Follow(run)
	defer f.Release()
	ctx, cancel := context.WithCancel(h.Streams.Context())
	defer cancel()
	if !store {
		defer h.forget(ctx, run)
	}
	r := wire.NewResponseRenderer(base, longhaul.Usage{})
	emit := func(evs []wire.StreamEvent) error {
		for _, e := range evs {
			if e.SequenceNumber <= after {
				continue
			}
			if err := sw.FrameJSON("", e.Type, e); err != nil {
				return err
			}
		}
		return sw.Flush()
	}
	if emit(r.Begin(background)) != nil {
		return
	}
	wait := func(ctx context.Context, pos runs.Cursor) ([]runs.Item, bool, error) {
		return sse.Wait(ctx, sw, f, pos)
	}
	err := followSegment(ctx, f, start, r, true, wait, emit)
	switch {
	case errors.Is(err, sse.ErrClientGone):
		return
	case err != nil:
		msg := "lost the run's event stream: " + err.Error()
		switch {
		case ctx.Err() != nil && !store:
			msg = "the server is shutting down; the response is not to be stored (store: false), so it ends here"
		case ctx.Err() != nil:
			msg = "the server is shutting down; the response goes on: GET /v1/responses/" + base.ID + "?stream=true&starting_after=N resumes it"
		default:
			h.Runs.Logger().Warn("stream response", "run", run, "error", err)
		}
		_ = sw.FrameJSON("", "error", r.ErrorEvent("stream_error", msg))
		_ = sw.Flush()
	}
}

// liveText is the streamed reasoning and text of a model call's attempt so
// far.
type liveText struct {
	attempt   int
	reasoning string
	text      string
}

// followSegment feeds r the segment of the run f follows that starts
// after offset start — its durable events, and with live the live text of
// its model calls — until the event that ends it. emit gets each event's
// stream events.
func followSegment(ctx context.Context, f runs.Follower, start int64, r *wire.ResponseRenderer, live bool, read runs.ReadFunc, emit func([]wire.StreamEvent) error) error {
	texts := map[string]*liveText{}
	for b, err := range runs.Batches(ctx, f, runs.Cursor{}, read) {
		if err != nil {
			return err
		}
		items := b.Items
		for k, it := range items {
			var evs []wire.StreamEvent
			end := false
			switch {
			case it.Offset > 0 && it.Offset <= start:
				var u longhaul.Usage
				if it.Type == longhaul.EventUsage && it.Decode(&u) == nil {
					r.SetUsageFrom(u)
				}
				continue
			case it.Offset > 0:
				evs, end = r.Durable(it.Event)
			case !live:
				continue
			case it.Type == longhaul.EventContentDelta || it.Type == longhaul.EventReasoningDelta:
				var d longhaul.Delta
				if it.Decode(&d) != nil || d.After < start || contentFollows(items, k, d.Call) {
					continue
				}
				t := texts[d.Call]
				if t == nil || t.attempt != d.Attempt {
					t = &liveText{attempt: d.Attempt}
					texts[d.Call] = t
				}
				buf := &t.text
				if d.Kind == longhaul.DeltaReasoning {
					buf = &t.reasoning
				}
				if d.From > len(*buf) {
					continue // a gap: the durable text will bring it
				}
				*buf = (*buf)[:d.From] + d.Text
				evs = r.Live(d.Call, d.Attempt, t.reasoning, t.text)
			case it.Type == longhaul.EventContentReset:
				var d longhaul.ContentResetData
				if it.Decode(&d) == nil {
					r.Reset(d.Call)
					delete(texts, d.Call)
				}
			}
			if err := emit(evs); err != nil {
				return err
			}
			if end {
				return nil
			}
		}
		if b.Done {
			return errors.New("the run's log ended before the response did")
		}
	}
	return errors.New("the run's log ended before the response did")
}

// contentFollows reports whether call's durable text comes right after
// the delta at k (after its other deltas): the delta is the part of it the
// follower had not seen, which the durable event brings anyway.
func contentFollows(items []runs.Item, k int, call string) bool {
	for j := k + 1; j < len(items); j++ {
		switch items[j].Type {
		case longhaul.EventContentDelta, longhaul.EventReasoningDelta:
			continue
		case longhaul.EventContent:
			var d longhaul.ContentData
			return items[j].Decode(&d) == nil && d.Call == call
		}
		return false
	}
	return false
}
