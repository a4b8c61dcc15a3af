package responsesapi

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/api/runweb"
	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// This file reads, cancels and deletes a response, all from its run's
// durable state: the input it was started with and its event log.

// startInput is how run began (runs.Begun): the input of its first
// execution — the one the client's request made — and when.
func (h *Handlers) startInput(ctx context.Context, run string) (runs.Begun, error) {
	in, started, err := h.Runs.Service.FirstInput(ctx, run)
	switch {
	case errors.Is(err, runs.ErrNotFound):
		return runs.Begun{}, web.NotFound("no response of run " + run)
	case errors.Is(err, runs.ErrCorrupt):
		return runs.Begun{}, web.Internal(err.Error())
	case err != nil:
		return runs.Begun{}, web.Unavailable("cannot read run " + run + ": " + err.Error())
	}
	return runs.Begun{AgentInput: in, At: started}, nil
}

// findResponse resolves the response named in the path for the caller:
// its run, segment start and run state; another principal's is unknown.
func (h *Handlers) findResponse(c *fiber.Ctx) (run string, start int64, st contract.RunState, err error) {
	id, err := url.PathUnescape(c.Params("id"))
	if err != nil {
		return "", 0, st, web.NotFound("no response " + c.Params("id"))
	}
	run, start, ok := wire.ParseResponseID(id)
	if !ok {
		return "", 0, st, web.NotFound("no response " + id)
	}
	st, err = h.responseState(c.UserContext(), run, web.Principal(c).Name)
	if err != nil {
		return "", 0, st, relabel(err, "no response "+id)
	}
	return strings.Clone(run), start, st, nil
}

// segmentBase is the response of run's segment after start as it began
// (see wire.ResponseBase), with the run's log: a later segment's time and
// the response before it are read there.
func (h *Handlers) segmentBase(ctx context.Context, run string, start int64) (wire.Response, []longhaul.Event, error) {
	in, err := h.startInput(ctx, run)
	if err != nil {
		return wire.Response{}, nil, err
	}
	created := in.At.Unix()
	log, err := h.Runs.ReadLog(ctx, run)
	if err != nil {
		return wire.Response{}, nil, err
	}
	var previous *string
	if start > 0 {
		created, previous = wire.SegmentTime(log, start), wire.PreviousSegment(run, log, start)
	}
	return wire.ResponseBase(wire.ResponseID(run, start), in.AgentInput, created, previous), log, nil
}

// currentResponse rebuilds a response from its run's durable state as it
// stands.
func (h *Handlers) currentResponse(ctx context.Context, run string, start int64, st contract.RunState) (*wire.Response, error) {
	base, log, err := h.segmentBase(ctx, run, start)
	if err != nil {
		return nil, err
	}
	if start > 0 && !wire.SegmentStart(log, start) {
		return nil, web.NotFound("no response " + wire.ResponseID(run, start))
	}
	r := wire.NewResponseRenderer(base, longhaul.Usage{})
	r.Begin(false)
	for _, e := range log {
		var u longhaul.Usage
		switch {
		case e.Offset <= start:
			if e.Type == longhaul.EventUsage && e.Decode(&u) == nil {
				r.SetUsageFrom(u)
			}
		case !r.Ended():
			r.Durable(e)
		}
	}
	if !r.Ended() && runweb.Finished(st.Status) {
		// Closed without finishing its log (terminated outside Longhaul).
		r.Unfinished()
	}
	return r.Snapshot(), nil
}

// Cancel answers POST /v1/responses/{id}/cancel: the run is
// cancelled and the response returned once it shows it (or after
// cancelWait, as it stands). A response that has ended is a 409.
func (h *Handlers) Cancel(c *fiber.Ctx) error {
	run, start, st, err := h.findResponse(c)
	if err != nil {
		return err
	}
	resp, err := h.currentResponse(c.UserContext(), run, start, st)
	if err != nil {
		return err
	}
	if resp.Status != wire.ResponseInProgress {
		return web.Conflict(fmt.Sprintf("response %s has already ended (%s)", resp.ID, resp.Status))
	}
	if err := h.Runs.Service.Cancel(c.UserContext(), run); err != nil {
		if !errors.Is(err, runs.ErrNotFound) {
			return web.Unavailable("cannot cancel the run of response " + resp.ID + ": " + err.Error())
		}
	}
	wctx, wcancel := context.WithTimeout(c.UserContext(), cancelWait)
	defer wcancel()
	f := h.Runs.Service.Follow(run)
	defer f.Release()
	r := wire.NewResponseRenderer(*resp, longhaul.Usage{})
	r.Begin(false)
	if followSegment(wctx, f, start, r, false, f.Read, func([]wire.StreamEvent) error { return nil }) == nil {
		resp = r.Snapshot()
	}
	return c.JSON(resp)
}

// Delete answers DELETE /v1/responses/{id}: the run goes, with
// every response it made and its stored outputs.
func (h *Handlers) Delete(c *fiber.Ctx) error {
	run, start, _, err := h.findResponse(c)
	if err != nil {
		return err
	}
	if err := h.deleteRun(c.UserContext(), run); err != nil {
		return err
	}
	return c.JSON(wire.ResponseDeleted{ID: wire.ResponseID(run, start), Object: "response.deleted", Deleted: true})
}

// deleteRun deletes run's outputs from the blob store, marks it deleted
// there, and deletes the run, which is terminated first if it is still
// running (see runs.Temporal.Delete). The mark comes first, so that the run
// reads as gone by the time it ends.
func (h *Handlers) deleteRun(ctx context.Context, run string) error {
	if h.Blobs != nil {
		if err := h.Blobs.DeleteRun(ctx, run); err != nil {
			return web.Unavailable("cannot delete the outputs of run " + run + ": " + err.Error())
		}
		if _, err := h.Blobs.Put(ctx, store.Blob{Run: run, Kind: deletedKind, Name: "run", Data: []byte("deleted")}); err != nil {
			return web.Unavailable("cannot mark run " + run + " deleted: " + err.Error())
		}
	}
	if err := h.Runs.Service.Delete(ctx, run); err != nil && !errors.Is(err, runs.ErrNotFound) {
		return web.Unavailable("cannot delete run " + run + ": " + err.Error())
	}
	return nil
}

// deletedKind is the blob kind that marks a run deleted (see
// contract.DeletedRunKind): Temporal deletes a run a while after it is
// asked to (once its close has reached visibility), and until then the run
// must read as gone.
const deletedKind = contract.DeletedRunKind

// responseState is runweb.Runs.ReadState for a run that the Responses API
// may have deleted: a deleted one is unknown.
func (h *Handlers) responseState(ctx context.Context, run, owner string) (contract.RunState, error) {
	if h.Blobs != nil {
		blobs, err := h.Blobs.List(ctx, run)
		if err != nil {
			return contract.RunState{}, web.Unavailable("cannot read the outputs of run " + run + ": " + err.Error())
		}
		if slices.ContainsFunc(blobs, func(b store.Blob) bool { return b.Kind == deletedKind }) {
			return contract.RunState{}, web.NotFound("no run " + run)
		}
	}
	return h.Runs.ReadState(ctx, run, owner)
}

// forget deletes the run of a response that is not to be stored, logging
// a failure: the client has its answer already.
func (h *Handlers) forget(ctx context.Context, run string) {
	if err := h.deleteRun(context.WithoutCancel(ctx), run); err != nil {
		h.Runs.Logger().Error("delete the run of a response that is not stored", "run", run, "error", err)
	}
}
