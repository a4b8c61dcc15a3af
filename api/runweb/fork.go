package runweb

import (
	"context"
	"errors"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/runs"
)

// ForkSource is what a fork of a run is decided from: its state, its log's
// events that fork points are found by, and the request it started with.
type ForkSource struct {
	State   contract.RunState
	Log     []longhaul.Event
	Request runs.Begun
}

// ReadForkSource reads what a fork of run id is decided from, for owner,
// in one read of the run (its fork query), after the describe that
// ReadRun makes too: another principal's run is unknown, as there. Only a
// run that continued as new is read again: its archived log, and its first
// execution's input.
func (r *Runs) ReadForkSource(ctx context.Context, id, owner string) (ForkSource, error) {
	var out ForkSource
	unknown := web.NotFound("no run " + id)
	info, err := r.Service.Describe(ctx, id)
	switch {
	case errors.Is(err, runs.ErrNotFound), errors.Is(err, runs.ErrInvalid):
		return out, unknown
	case err != nil:
		r.Logger().WarnContext(ctx, "describe run", "run", id, "error", err)
		return out, web.Unavailable("cannot read run " + id + ": Temporal did not answer")
	}
	recorded, hasOwner := info.Memo[runs.MemoOwner]
	if info.Type != contract.AgentWorkflowName || hasOwner && recorded != owner {
		return out, unknown
	}
	src, err := r.Service.ForkSource(ctx, id)
	if errors.Is(err, runs.ErrUnknownQuery) {
		// A worker of an older release answers no fork query: read the
		// run as it was read before, its state, its log and its input.
		return r.readForkSourceApart(ctx, id, owner)
	}
	switch {
	case errors.Is(err, runs.ErrNotFound):
		return out, unknown
	case errors.Is(err, runs.ErrCorrupt):
		return out, web.Internal("cannot decode the state of run " + id)
	case err != nil && !hasOwner:
		r.Logger().WarnContext(ctx, "query run", "run", id, "error", err)
		return out, web.Unavailable("cannot read run " + id)
	case err != nil:
		return out, web.Unavailable("cannot read run " + id + ": " + err.Error())
	}
	if src.State.User != owner {
		return out, unknown
	}
	out.State, out.Log = src.State, src.Events
	if len(src.Archives) > 0 {
		older, err := r.Service.Archived(ctx, id, src.Archives, 0)
		if err != nil {
			return out, web.Unavailable("cannot read the events of run " + id + ": " + err.Error())
		}
		out.Log = append(forkEvents(older), src.Events...)
	}
	if src.Request != nil {
		out.Request = runs.Begun{AgentInput: *src.Request}
		return out, nil
	}
	out.Request.AgentInput, out.Request.At, err = r.Service.FirstInput(ctx, id)
	if err != nil {
		return out, web.Unavailable("cannot read the input of run " + id + ": " + err.Error())
	}
	return out, nil
}

// readForkSourceApart reads what a fork of run id, described already, is
// decided from in three reads (its state query, its log, its first
// input), for a run whose worker answers no fork query.
func (r *Runs) readForkSourceApart(ctx context.Context, id, owner string) (ForkSource, error) {
	var out ForkSource
	st, err := r.Service.State(ctx, id)
	switch {
	case err != nil:
		return out, web.Unavailable("cannot read run " + id + ": " + err.Error())
	case st.User != owner:
		return out, web.NotFound("no run " + id)
	}
	log, err := r.ReadLog(ctx, id)
	if err != nil {
		return out, err
	}
	out.State, out.Log = st, forkEvents(log)
	out.Request.AgentInput, out.Request.At, err = r.Service.FirstInput(ctx, id)
	if err != nil {
		return out, web.Unavailable("cannot read the input of run " + id + ": " + err.Error())
	}
	return out, nil
}

// forkEvents are the events of log that fork points are found by.
func forkEvents(log []longhaul.Event) []longhaul.Event {
	var out []longhaul.Event
	for _, e := range log {
		if contract.IsForkEvent(e.Type) {
			out = append(out, e)
		}
	}
	return out
}
