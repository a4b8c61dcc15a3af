package api

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/longhaul-dev/longhaul/api/sse"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/longhaul-dev/longhaul/internal/tools"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// This file is the native runs API, for long tasks that outlive a request:
// start a run, read it, list a user's runs, follow its events, cancel it and
// answer it when it waits for a person. A run is an AgentWorkflow; its state
// comes from the workflow's state query (readState), its events from its
// event log (the same feed the chat stream reads), its listing from Temporal
// visibility and Longhaul's search attributes (visibility.go). Its wire
// types are in internal/wire (runs.go).

// inputTimeout bounds the delivery of a person's input to a run.
const inputTimeout = 30 * time.Second

// createRun starts a run: POST /v1/runs. It answers at once; the run goes
// on without any client.
func (s *Server) createRun(c *fiber.Ctx) error {
	var req wire.RunRequest
	if err := decodeStrict(c.Body(), &req); err != nil {
		return errBadRequest(err.Error())
	}
	if err := req.Validate(tools.CheckSchema); err != nil {
		return errBadRequest(err.Error())
	}
	if err := s.cfg.Images.checkChatImages(req.Messages); err != nil {
		return err
	}
	agent, ok := s.catalog.AgentFor(req.Agent, principal(c).User)
	if !ok {
		return errModelNotFound(fmt.Sprintf("the agent %q does not exist; GET /v1/models lists the agents", req.Agent))
	}
	msgs := req.Conversation()
	in := contract.AgentInput{
		Agent:           agent.ID,
		Messages:        msgs,
		User:            principal(c).User,
		ModelTimeout:    s.cfg.ModelTimeout,
		HistoryLimit:    s.cfg.HistoryLimit,
		ApprovalTimeout: s.cfg.ApprovalTimeout,
		Metadata:        req.Metadata,
	}
	id := "run-" + uuid.NewString()
	err := s.start(c.UserContext(), id, in, summarize(msgs, 60))
	if err != nil {
		return err
	}
	c.Set(HeaderRunID, id)
	return c.Status(fiber.StatusAccepted).JSON(wire.RunCreated{ID: id, Status: contract.StatusRunning, EventsURL: eventsURL(id)})
}

// runID is the run named in the path.
func runID(c *fiber.Ctx) (string, error) {
	id, err := url.PathUnescape(c.Params("id"))
	if err != nil || id == "" {
		return "", errBadRequest("bad run id")
	}
	// fiber's strings point into the request's buffer, which is reused once
	// the handler returns; an event stream outlives it.
	return strings.Clone(id), nil
}

// readState reads run id's state with the workflow's state query — the one
// place a run's state is read — for owner: a run of another principal is
// reported as unknown, as is one that does not exist, and a workflow that
// is not a Longhaul run (the retention job, another application's
// workflow in the namespace): what Temporal would say of those is never
// shown, so that no answer tells an id that exists from one that does not.
// It works for finished runs too, while a worker runs to answer the query.
func (s *Server) readState(ctx context.Context, id, owner string) (contract.RunState, error) {
	st, _, err := s.readRun(ctx, id, owner)
	return st, err
}

// readRun is readState, with the execution as Temporal described it
// before its state was read.
func (s *Server) readRun(ctx context.Context, id, owner string) (contract.RunState, runs.Info, error) {
	var st contract.RunState
	unknown := errNotFound("no run " + id)
	info, err := s.runs.Describe(ctx, id)
	switch {
	case errors.Is(err, runs.ErrNotFound), errors.Is(err, runs.ErrInvalid):
		// No such workflow, or an id no workflow can have (too long).
		return st, info, unknown
	case err != nil:
		// Temporal did not answer: whether the id exists is not in what
		// it said.
		s.log.WarnContext(ctx, "describe run", "run", id, "error", err)
		return st, info, errUnavailable("cannot read run " + id + ": Temporal did not answer")
	}
	recorded, hasOwner := info.Memo[memoOwner]
	if info.Type != contract.AgentWorkflowName || hasOwner && recorded != owner {
		return st, info, unknown
	}
	st, err = s.runs.State(ctx, id)
	switch {
	case errors.Is(err, runs.ErrNotFound):
		return st, info, unknown
	case errors.Is(err, runs.ErrCorrupt):
		return st, info, errInternal("cannot decode the state of run " + id)
	case err != nil && !hasOwner:
		// A run without an owner in its memo is known to be the caller's
		// only once its state says so.
		s.log.WarnContext(ctx, "query run", "run", id, "error", err)
		return st, info, errUnavailable("cannot read run " + id)
	case err != nil:
		return st, info, errUnavailable("cannot read run " + id + ": " + err.Error())
	}
	if st.User != owner {
		return contract.RunState{}, info, unknown
	}
	return st, info, nil
}

// statusOf is the status of a run that recorded status and whose execution
// Temporal describes as info: the recorded one, unless Temporal closed the
// run without one (terminated or timed out, see closedStatus), or the run
// has recorded none yet (its first step is queued).
func statusOf(recorded string, info runs.Info) string {
	switch {
	case info.Closed != nil && !finished(recorded):
		return closedStatus(info.Status)
	case recorded == "":
		return contract.StatusRunning
	}
	return recorded
}

// finished reports whether a run status is final.
func finished(status string) bool {
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

// getRun answers GET /v1/runs/{id}: the run's state with its timings.
func (s *Server) getRun(c *fiber.Ctx) error {
	id, err := runID(c)
	if err != nil {
		return err
	}
	st, info, err := s.readRun(c.UserContext(), id, principal(c).Name)
	if err != nil {
		return err
	}
	if finished(st.Status) && info.Closed == nil {
		// The run ended between the description and the state: describe
		// it again for its close time.
		if info, err = s.runs.Describe(c.UserContext(), id); err != nil {
			return errUnavailable("cannot describe run " + id + ": " + err.Error())
		}
	}
	created, closed := info.Started, info.Closed
	if !st.StartedAt.IsZero() {
		// The run continued as new: the current execution started later.
		created = &st.StartedAt
	}
	if status := statusOf(st.Status, info); status != st.Status {
		st.Status = status
		if closed != nil && st.Error == "" {
			st.Error = "the run ended without finishing: " + info.Status
		}
	}
	return c.JSON(wire.Run{
		ID: id, Agent: st.Agent, Status: st.Status, Mode: st.Mode, Dispatch: st.Dispatch, Skill: st.Skill,
		CreatedAt: created, FinishedAt: closed, Turns: st.Turns,
		Plans:   nonNil(st.Plans),
		Steps:   nonNil(currentSteps(st.Plans)),
		Reviews: nonNil(st.Reviews),
		Waiting: st.Waiting, Result: st.Result, Error: st.Error, Usage: st.Usage,
		UsageByModel: contract.ModelUsage(st.Calls),
		Continued:    st.Continued, EventsURL: eventsURL(id),
	})
}

// listRuns answers GET /v1/runs: the caller's runs through Temporal
// visibility. Visibility orders runs without an ORDER BY (which SQL
// visibility refuses): open runs first, newest first, then finished runs,
// the last finished first.
func (s *Server) listRuns(c *fiber.Ctx) error {
	limit, err := listLimit(c)
	if err != nil {
		return err
	}
	status, agent, user := c.Query("status"), c.Query("agent"), principal(c).Name
	if status != "" && !slices.Contains(runStatuses, status) {
		return errBadRequest("status: must be one of " + strings.Join(runStatuses, ", "))
	}
	if strings.Contains(agent, "'") || !literalOK(agent) {
		return errBadRequest("agent: not an agent id (no quotes, backslashes or control characters)")
	}
	if !literalOK(user) {
		// identity.Bounded never names a principal so: a query for it would
		// match another's runs or none (see literalOK).
		return errInternal("your runs cannot be listed: your principal's name cannot be matched by a visibility query")
	}
	query := listQuery(user, agent, status)
	var token []byte
	if v := c.Query("page_token"); v != "" {
		var ok bool
		if token, ok = openPageToken(query, v); !ok {
			return errBadRequest("page_token: not a token this API returned for this user and these filters")
		}
	}
	page, err := s.runs.List(c.UserContext(), query, limit, token)
	switch {
	case errors.Is(err, runs.ErrInvalid):
		return errInternal("the runs query was refused: " + err.Error())
	case err != nil:
		return errUnavailable("cannot list runs: " + err.Error())
	}
	list := wire.RunList{Object: "list", Data: []wire.RunSummary{}}
	for _, e := range page.Runs {
		list.Data = append(list.Data, summaryOf(e))
	}
	if t := page.Next; len(t) > 0 {
		list.NextPageToken = sealPageToken(query, t)
	}
	return c.JSON(list)
}

// listLimit is a list's limit query parameter: defaultListLimit when
// absent, a 400 when not from 1 to maxListLimit.
func listLimit(c *fiber.Ctx) (int, error) {
	v := c.Query("limit")
	if v == "" {
		return defaultListLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxListLimit {
		return 0, errBadRequest(fmt.Sprintf("limit: must be a number from 1 to %d", maxListLimit))
	}
	return n, nil
}

// runEvents streams a run's events as Server-Sent Events: GET
// /v1/runs/{id}/events. Each durable event is one frame whose id is its
// offset; the text of a running model call comes as content_delta frames
// whose id is "<offset>:<bytes>" (":<attempt>" after it on a retry): the
// durable offset the call follows and how much of its text the client has.
// So a client resumes with Last-Event-ID (or ?after=) mid-answer, on any API
// process, and misses or repeats nothing. The stream ends after the done
// event; a client that leaves never stops the run.
func (s *Server) runEvents(c *fiber.Ctx) error {
	id, err := runID(c)
	if err != nil {
		return err
	}
	pos, err := resumePosition(c)
	if err != nil {
		return err
	}
	if _, err := s.readState(c.UserContext(), id, principal(c).Name); err != nil {
		return err
	}
	release, err := s.acquireStream(principal(c).Name)
	if err != nil {
		return err
	}
	c.Set(HeaderRunID, id)
	s.streams.Send(c, "runs", func(sw *sse.Writer) { s.streamEvents(sw, id, pos) }, release)
	return nil
}

// resumePosition is where a client wants the stream to go on: the
// Last-Event-ID header, else the after query parameter, else the start.
func resumePosition(c *fiber.Ctx) (runs.Cursor, error) {
	name, v := "Last-Event-ID", c.Get("Last-Event-ID")
	if v == "" {
		name, v = "after", c.Query("after")
	}
	if v == "" {
		return runs.Cursor{}, nil
	}
	pos, ok := runs.ParseCursor(strings.TrimSpace(v))
	if !ok {
		return runs.Cursor{}, errBadRequest(name + ": must be an event id: an offset (a whole number, 0 or more), or offset:bytes[:attempt] from a content_delta")
	}
	return pos, nil
}

// streamEvents writes the run's events from pos until the done event, until
// the client leaves (a failed flush) or until the server shuts down.
func (s *Server) streamEvents(sw *sse.Writer, id string, pos runs.Cursor) {
	f := s.runs.Follow(id)
	defer f.Release()
	// The request's context is gone once the handler returned; the stream
	// lives until the log ends, a write fails or the server shuts down.
	ctx, cancel := context.WithCancel(s.stopping)
	defer cancel()
	pos = f.Join(pos)
	for {
		items, done, err := sse.Wait(ctx, sw, f, pos)
		switch {
		case errors.Is(err, sse.ErrClientGone):
			return
		case ctx.Err() != nil:
			// The server is shutting down: end without done, so the client
			// reconnects and resumes after the last id it read.
			_ = sw.Comment("server shutting down; reconnect with Last-Event-ID")
			return
		case err != nil:
			// Not the run's error: the log could not be read. No id, so a
			// client that reconnects resumes where it was.
			s.log.Warn("stream run events", "run", id, "error", err)
			_ = sw.FrameJSON("", "stream_error", wire.ErrorDetail{Message: "lost the run's event stream: " + err.Error(), Type: "server_error", Code: "stream_error"})
			_ = sw.Flush()
			return
		}
		for _, it := range items {
			if err := sw.FrameJSON(it.ID(), string(it.Type), it.Event); err != nil {
				return
			}
			pos = it.Pos
		}
		if sw.Flush() != nil || done {
			return
		}
	}
}

// cancelRun asks Temporal to cancel a run: POST /v1/runs/{id}/cancel. The
// cancellation reaches in-flight model and tool calls through their
// heartbeats, and the run ends cancelled with what it had.
func (s *Server) cancelRun(c *fiber.Ctx) error {
	id, err := runID(c)
	if err != nil {
		return err
	}
	st, err := s.readState(c.UserContext(), id, principal(c).Name)
	if err != nil {
		return err
	}
	if finished(st.Status) {
		return errConflict(fmt.Sprintf("run %s has already finished (%s)", id, st.Status))
	}
	if err := s.runs.Cancel(c.UserContext(), id); err != nil {
		if errors.Is(err, runs.ErrNotFound) {
			// It existed a moment ago: it has closed since.
			return errConflict("run " + id + " has already finished")
		}
		return errUnavailable("cannot cancel run " + id + ": " + err.Error())
	}
	return c.Status(fiber.StatusAccepted).JSON(wire.RunCancelling{ID: id, Status: "cancelling"})
}

// runInput delivers a person's answer to a waiting run as the workflow's
// input update: POST /v1/runs/{id}/input. A run that waits for nothing
// turns it away (409).
func (s *Server) runInput(c *fiber.Ctx) error {
	id, err := runID(c)
	if err != nil {
		return err
	}
	var in wire.RunInput
	if err := decodeStrict(c.Body(), &in); err != nil {
		return errBadRequest(err.Error())
	}
	if err := in.Validate(); err != nil {
		return errBadRequest(err.Error())
	}
	if err := checkPayload("the input", in.InputRequest()); err != nil {
		return err
	}
	st, err := s.readState(c.UserContext(), id, principal(c).Name)
	if err != nil {
		return err
	}
	if finished(st.Status) {
		return errConflict(fmt.Sprintf("run %s has finished (%s); it waits for no input", id, st.Status))
	}
	res, err := s.deliver(c.UserContext(), id, in.InputRequest())
	if err != nil {
		return err
	}
	return c.JSON(res)
}

// deliver hands a person's input to run id through the input update and
// waits until the run took it. A run that waits for nothing turns it away
// (a 409 error, see inputError).
func (s *Server) deliver(ctx context.Context, id string, in contract.InputRequest) (contract.InputResult, error) {
	if err := checkPayload("the input", in); err != nil {
		return contract.InputResult{}, err
	}
	return s.deliverOpts(ctx, id, "", in)
}

// deliverOpts sends the input update to run id, with the update's id when
// the caller names one.
func (s *Server) deliverOpts(ctx context.Context, id, updateID string, in contract.InputRequest) (contract.InputResult, error) {
	ctx, cancel := context.WithTimeout(ctx, inputTimeout)
	defer cancel()
	res, err := s.runs.Input(ctx, id, updateID, in)
	if err != nil {
		return res, inputError(id, err)
	}
	return res, nil
}

// inputError translates a failed input update. The workflow's validator
// rejects input the run is not waiting for; a run of a version without the
// update rejects it as unknown; a closed run is not found.
func inputError(id string, err error) error {
	var appErr *runs.Failure
	switch {
	case errors.As(err, &appErr):
		msg := appErr.Message
		if strings.Contains(msg, contract.ErrNotWaiting) || strings.Contains(msg, "unknown update") {
			return errConflict("run " + id + " is not waiting for input")
		}
		return errConflict("run " + id + " turned the input away: " + msg)
	case errors.Is(err, runs.ErrNotFound):
		return errConflict("run " + id + " has finished; it waits for no input")
	case errors.Is(err, context.DeadlineExceeded):
		return errUnavailable("run " + id + " did not take the input in time; is a worker running?")
	}
	return errUnavailable("cannot deliver the input to run " + id + ": " + err.Error())
}
