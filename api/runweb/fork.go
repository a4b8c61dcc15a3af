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
	src, _, err := readOwned(ctx, r, id, owner, r.forkSource, func(s contract.ForkSource) string { return s.State.User })
	if err != nil {
		return out, err
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

// forkSource is run id's answer to its fork query or, from a worker of an
// older release that answers none (a rolling upgrade), the same read apart:
// its state query and its log, the input left for ReadForkSource to read.
func (r *Runs) forkSource(ctx context.Context, id string) (contract.ForkSource, error) {
	src, err := r.Service.ForkSource(ctx, id)
	if !errors.Is(err, runs.ErrUnknownQuery) {
		return src, err
	}
	if src.State, err = r.Service.State(ctx, id); err != nil {
		return src, err
	}
	log, err := r.ReadLog(ctx, id)
	if err != nil {
		return src, err
	}
	src.Events = forkEvents(log)
	return src, nil
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
