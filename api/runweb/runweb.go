// Package runweb is what the handler packages of the APIs that run agents
// (Chat Completions, Responses, Runs) share over the runs service: a run
// read for its owner (Runs.ReadRun, the one place a run's state is read
// and another principal's run is hidden), its status in the API's words, a
// person's input or a client's tool results handed to it, its whole log,
// its audit trail, the agent a request names and the client tools it may
// bring (Agents), the image URLs a request may send, and the runs
// service's errors in the API's words (Error). It sits below those
// handler packages and the server, so none of them keeps a copy.
package runweb

import (
	"context"
	"errors"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// Runs reads and answers runs for the handlers.
type Runs struct {
	Service runs.Service
	// Log takes what Temporal failed to answer; nil is slog's default.
	Log *slog.Logger
}

// Logger is r.Log, or slog's default when none is set: the handlers over
// r log with it too.
func (r *Runs) Logger() *slog.Logger {
	if r.Log == nil {
		return slog.Default()
	}
	return r.Log
}

// ReadState reads run id's state with the workflow's state query for
// owner: a run of another principal is reported as unknown, as is one that
// does not exist, and a workflow that is not a Longhaul run (the retention
// job, another application's workflow in the namespace): what Temporal
// would say of those is never shown, so that no answer tells an id that
// exists from one that does not. It works for finished runs too, while a
// worker runs to answer the query.
func (r *Runs) ReadState(ctx context.Context, id, owner string) (contract.RunState, error) {
	st, _, err := r.ReadRun(ctx, id, owner)
	return st, err
}

// ReadRun is ReadState, with the execution as Temporal described it
// before its state was read.
func (r *Runs) ReadRun(ctx context.Context, id, owner string) (contract.RunState, runs.Info, error) {
	return readOwned(ctx, r, id, owner, r.Service.State, func(st contract.RunState) string { return st.User })
}

// readOwned describes run id and, when it is a Longhaul run not recorded
// as another principal's, reads it with query, for owner: the one place a
// read hides another principal's run. user is whose run what query
// answered says it is.
func readOwned[T any](ctx context.Context, r *Runs, id, owner string, query func(context.Context, string) (T, error), user func(T) string) (T, runs.Info, error) {
	var zero T
	unknown := web.NotFound("no run " + id)
	info, err := r.Service.Describe(ctx, id)
	switch {
	case errors.Is(err, runs.ErrNotFound), errors.Is(err, runs.ErrInvalid):
		// No such workflow, or an id no workflow can have (too long).
		return zero, info, unknown
	case err != nil:
		// Temporal did not answer: whether the id exists is not in what
		// it said.
		r.Logger().WarnContext(ctx, "describe run", "run", id, "error", err)
		return zero, info, web.Unavailable("cannot read run " + id + ": Temporal did not answer")
	}
	recorded, hasOwner := info.Memo[runs.MemoOwner]
	if info.Type != contract.AgentWorkflowName || hasOwner && recorded != owner {
		return zero, info, unknown
	}
	v, err := query(ctx, id)
	switch {
	case errors.Is(err, runs.ErrNotFound):
		return zero, info, unknown
	case errors.Is(err, runs.ErrCorrupt):
		return zero, info, web.Internal("cannot decode the state of run " + id)
	case err != nil && !hasOwner:
		// A run without an owner in its memo is known to be the caller's
		// only once its state says so.
		r.Logger().WarnContext(ctx, "query run", "run", id, "error", err)
		return zero, info, web.Unavailable("cannot read run " + id)
	case err != nil:
		return zero, info, web.Unavailable("cannot read run " + id + ": " + err.Error())
	}
	if user(v) != owner {
		return zero, info, unknown
	}
	return v, info, nil
}

// ReadLog reads run's whole event log as it stands, archives included.
func (r *Runs) ReadLog(ctx context.Context, run string) ([]longhaul.Event, error) {
	var out []longhaul.Event
	var after int64
	for {
		page, err := r.Service.Events(ctx, run, after)
		if err != nil {
			return nil, web.Unavailable("cannot read the events of run " + run + ": " + err.Error())
		}
		if len(page.Archives) > 0 {
			events, err := r.Service.Archived(ctx, run, page.Archives, after)
			if err != nil {
				return nil, web.Unavailable(err.Error())
			}
			out = append(out, events...)
			after = max(after, page.Archives[len(page.Archives)-1].To)
			if len(events) > 0 {
				after = max(after, events[len(events)-1].Offset)
			}
			continue
		}
		out = append(out, page.Events...)
		if len(page.Events) > 0 {
			after = page.Events[len(page.Events)-1].Offset
		}
		if len(page.Events) == 0 || after >= page.Last {
			return out, nil
		}
	}
}

// inputTimeout bounds the delivery of a person's input to a run.
const inputTimeout = 30 * time.Second

// Deliver hands a person's input to run id through the input update and
// waits until the run took it. A run that waits for nothing turns it away
// (a 409 error, see InputError).
func (r *Runs) Deliver(ctx context.Context, id string, in contract.InputRequest) (contract.InputResult, error) {
	if err := CheckPayload("the input", in); err != nil {
		return contract.InputResult{}, err
	}
	return r.deliver(ctx, id, "", in)
}

// DeliverAs hands a client's tool results to run id with the update's id
// set: Temporal runs an update once per id and answers a repeat with the
// first outcome.
func (r *Runs) DeliverAs(ctx context.Context, id, updateID string, in contract.InputRequest) (contract.InputResult, error) {
	if err := CheckPayload("the tool results", in); err != nil {
		return contract.InputResult{}, err
	}
	return r.deliver(ctx, id, updateID, in)
}

// deliver sends the input update to run id, with the update's id when the
// caller names one.
func (r *Runs) deliver(ctx context.Context, id, updateID string, in contract.InputRequest) (contract.InputResult, error) {
	ctx, cancel := context.WithTimeout(ctx, inputTimeout)
	defer cancel()
	res, err := r.Service.Input(ctx, id, updateID, in)
	if err != nil {
		return res, InputError(id, err)
	}
	return res, nil
}

// InputError translates a failed input update. The workflow's validator
// rejects input the run is not waiting for; a run of a version without the
// update rejects it as unknown; a closed run is not found.
func InputError(id string, err error) error {
	var appErr *runs.Failure
	switch {
	case errors.As(err, &appErr):
		msg := appErr.Message
		if strings.Contains(msg, contract.ErrNotWaiting) || strings.Contains(msg, "unknown update") {
			return web.Conflict("run " + id + " is not waiting for input")
		}
		return web.Conflict("run " + id + " turned the input away: " + msg)
	case errors.Is(err, runs.ErrNotFound):
		return web.Conflict("run " + id + " has finished; it waits for no input")
	case errors.Is(err, context.DeadlineExceeded):
		return web.Unavailable("run " + id + " did not take the input in time; is a worker running?")
	}
	return web.Unavailable("cannot deliver the input to run " + id + ": " + err.Error())
}

// StatusOf is the status of a run that recorded status and whose execution
// Temporal describes as info: the recorded one, unless Temporal closed the
// run without one (terminated or timed out, see closedStatus), or the run
// has recorded none yet (its first step is queued).
func StatusOf(recorded string, info runs.Info) string {
	switch {
	case info.Closed != nil && !Finished(recorded):
		return closedStatus(info.Status)
	case recorded == "":
		return contract.StatusRunning
	}
	return recorded
}

// Finished reports whether a run status is final.
func Finished(status string) bool {
	switch status {
	case contract.StatusCompleted, contract.StatusFailed, contract.StatusCancelled:
		return true
	}
	return false
}

// closedStatus is the status of a closed execution whose own status was left
// open: Temporal terminated it or timed it out, so it never recorded one.
func closedStatus(st string) string {
	switch st {
	case runs.ExecCompleted:
		return contract.StatusCompleted
	case runs.ExecCanceled:
		return contract.StatusCancelled
	}
	return contract.StatusFailed
}

// CurrentSteps are the steps of the plan being carried out (or carried out
// last): the last revision that is active or done.
func CurrentSteps(plans []contract.PlanRevision) []longhaul.PlanStep {
	for i := len(plans) - 1; i >= 0; i-- {
		if p := plans[i]; p.Status == contract.PlanActive || p.Status == contract.PlanDone {
			return p.Steps
		}
	}
	return nil
}

// NonNil makes an absent list encode as [] rather than null.
func NonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// EventsURL is where run id's events stream (GET /v1/runs/{id}/events).
func EventsURL(id string) string { return "/v1/runs/" + url.PathEscape(id) + "/events" }

// Start starts the run r asks for, or attaches to the open run under its
// id, through the runs gate, the one author of runs (admission, limits,
// budgets, image claims); a refusal is the API's.
func Start(ctx context.Context, gate *runs.Gate, r runs.Request) (string, error) {
	id, err := gate.Start(ctx, r)
	return id, Refused(err)
}

// Stream takes one of principal's event streams through the runs gate, or
// says no in the API's words: the caller must call the release it returns
// when the stream ends.
func Stream(gate *runs.Gate, principal string) (func(), error) {
	release, err := gate.Stream(principal)
	return release, Refused(err)
}

// DecodeRequest decodes body strictly into req and validates it with
// check (the JSON Schema check of the tools it declares): a 400 for
// either, in the API's words.
func DecodeRequest(body []byte, req interface{ Validate(wire.SchemaCheck) error }, check wire.SchemaCheck) error {
	if err := web.DecodeStrict(body, req); err != nil {
		return web.BadRequest(err.Error())
	}
	if err := req.Validate(check); err != nil {
		return web.BadRequest(err.Error())
	}
	return nil
}
