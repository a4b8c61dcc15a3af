package runsapi

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul/api/runweb"
	"github.com/longhaul-dev/longhaul/api/sse"
	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/longhaul-dev/longhaul/internal/tools"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// CreateRun starts a run: POST /v1/runs. It answers at once; the run goes
// on without any client.
func (h *Handlers) CreateRun(c *fiber.Ctx) error {
	var req wire.RunRequest
	if err := runweb.DecodeRequest(c.Body(), &req, tools.CheckSchema); err != nil {
		return err
	}
	if err := h.Images.CheckChatImages(req.Messages); err != nil {
		return err
	}
	r := runs.Request{
		ID: runs.NewRunID(), Agent: req.Agent, User: web.Principal(c).User,
		Messages: req.Conversation(), Metadata: req.Metadata, Door: runs.DoorRuns,
	}
	if err := h.Gate.Resolve(&r); err != nil {
		return runweb.Refused(err)
	}
	mt, done, err := h.multitask(c, &req, &r)
	if done || err != nil {
		return err
	}
	var hook *wire.RunWebhook
	if r.Webhook, hook, err = runweb.RunWebhook(c.UserContext(), h.Webhooks, r.User.Key(), r.ID, req.Webhook); err != nil {
		return err
	}
	if err := runweb.StartWithWebhook(c.UserContext(), h.Gate, h.Webhooks, hook, r); err != nil {
		return err
	}
	id := r.ID
	c.Set(web.HeaderRunID, id)
	return c.Status(fiber.StatusAccepted).JSON(wire.RunStarted{
		RunCreated: wire.RunCreated{ID: id, Status: contract.StatusRunning, EventsURL: runweb.EventsURL(id), Webhook: hook},
		Multitask:  mt,
	})
}

// GetRun answers GET /v1/runs/{id}: the run's state with its timings.
func (h *Handlers) GetRun(c *fiber.Ctx) error {
	id, err := runID(c)
	if err != nil {
		return err
	}
	st, info, err := h.Runs.ReadRun(c.UserContext(), id, web.Principal(c).Name)
	if err != nil {
		return err
	}
	if runweb.Finished(st.Status) && info.Closed == nil {
		// The run ended between the description and the state: describe
		// it again for its close time.
		if info, err = h.Runs.Service.Describe(c.UserContext(), id); err != nil {
			return web.Unavailable("cannot describe run " + id + ": " + err.Error())
		}
	}
	created, closed := info.Started, info.Closed
	if !st.StartedAt.IsZero() {
		// The run continued as new: the current execution started later.
		created = &st.StartedAt
	}
	if status := runweb.StatusOf(st.Status, info); status != st.Status {
		st.Status = status
		if closed != nil && st.Error == "" {
			st.Error = "the run ended without finishing: " + info.Status
		}
	}
	forkedFrom, forks := h.lineage(c, id, info)
	return c.JSON(wire.Run{
		ForkedFrom: forkedFrom, Forks: forks,
		ID: id, Agent: st.Agent, Status: st.Status, Mode: st.Mode, Dispatch: st.Dispatch, Skill: st.Skill,
		CreatedAt: created, FinishedAt: closed, Turns: st.Turns,
		Plans:   runweb.NonNil(st.Plans),
		Steps:   runweb.NonNil(runweb.CurrentSteps(st.Plans)),
		Reviews: runweb.NonNil(st.Reviews),
		Waiting: st.Waiting, Result: st.Result, Error: st.Error, Usage: st.Usage,
		UsageByModel: contract.ModelUsage(st.Calls),
		Continued:    st.Continued, EventsURL: runweb.EventsURL(id),
		ScheduleID: info.Attrs[runs.SearchAttrScheduledBy],
		Door:       info.Memo[runs.MemoDoor],
	})
}

// ListRuns answers GET /v1/runs: the caller's runs through Temporal
// visibility, optionally of one agent, status or schedule (schedule_id). Visibility orders runs without an ORDER BY (which SQL
// visibility refuses): open runs first, newest first, then finished runs,
// the last finished first.
func (h *Handlers) ListRuns(c *fiber.Ctx) error {
	limit, err := web.ListLimit(c)
	if err != nil {
		return err
	}
	status, agent, user := c.Query("status"), c.Query("agent"), web.Principal(c).Name
	if status != "" && !slices.Contains(runStatuses, status) {
		return web.BadRequest("status: must be one of " + strings.Join(runStatuses, ", "))
	}
	if strings.Contains(agent, "'") || !runs.LiteralOK(agent) {
		return web.BadRequest("agent: not an agent id (no quotes, backslashes or control characters)")
	}
	if !runs.LiteralOK(user) {
		// identity.Bounded never names a principal so: a query for it would
		// match another's runs or none (see literalOK).
		return web.Internal("your runs cannot be listed: your principal's name cannot be matched by a visibility query")
	}
	filter := runs.Filter{Owner: user, Agent: agent, Status: status, Schedule: c.Query("schedule_id")}
	if strings.Contains(filter.Schedule, "'") || !runs.LiteralOK(filter.Schedule) {
		return web.BadRequest("schedule_id: not a schedule id (no quotes, backslashes or control characters)")
	}
	// A page token holds for the filters it was given with.
	query := filter.Query()
	var token []byte
	if v := c.Query("page_token"); v != "" {
		var ok bool
		if token, ok = web.OpenPageToken(query, v); !ok {
			return web.BadRequest("page_token: not a token this API returned for this user and these filters")
		}
	}
	page, err := h.Runs.Service.List(c.UserContext(), filter, limit, token)
	switch {
	case errors.Is(err, runs.ErrInvalid):
		return web.Internal("the runs query was refused: " + err.Error())
	case err != nil:
		return web.Unavailable("cannot list runs: " + err.Error())
	}
	list := wire.RunList{Object: "list", Data: []wire.RunSummary{}}
	for _, e := range page.Runs {
		list.Data = append(list.Data, summaryOf(e))
	}
	if t := page.Next; len(t) > 0 {
		list.NextPageToken = web.SealPageToken(query, t)
	}
	return c.JSON(list)
}

// Events streams a run's events as Server-Sent Events: GET
// /v1/runs/{id}/events. Each durable event is one frame whose id is its
// offset; the text of a running model call comes as content_delta frames
// whose id is "<offset>:<bytes>" (":<attempt>" after it on a retry): the
// durable offset the call follows and how much of its text the client has.
// So a client resumes with Last-Event-ID (or ?after=) mid-answer, on any API
// process, and misses or repeats nothing. The stream ends after the done
// event; a client that leaves never stops the run.
func (h *Handlers) Events(c *fiber.Ctx) error {
	id, err := runID(c)
	if err != nil {
		return err
	}
	pos, err := resumePosition(c)
	if err != nil {
		return err
	}
	if _, err := h.Runs.ReadState(c.UserContext(), id, web.Principal(c).Name); err != nil {
		return err
	}
	release, err := runweb.Stream(h.Gate, web.Principal(c).Name)
	if err != nil {
		return err
	}
	c.Set(web.HeaderRunID, id)
	h.Streams.Send(c, "runs", func(sw *sse.Writer) { h.streamEvents(sw, id, pos) }, release)
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
		return runs.Cursor{}, web.BadRequest(name + ": must be an event id: an offset (a whole number, 0 or more), or offset:bytes[:attempt] from a content_delta")
	}
	return pos, nil
}

// streamEvents writes the run's events from pos until the done event, until
// the client leaves (a failed flush) or until the server shuts down.
func (h *Handlers) streamEvents(sw *sse.Writer, id string, pos runs.Cursor) {
	f := h.Runs.Service.Follow(id)
	defer f.Release()
	// The request's context is gone once the handler returned; the stream
	// lives until the log ends, a write fails or the server shuts down.
	ctx, cancel := context.WithCancel(h.Streams.Context())
	defer cancel()
	wait := func(ctx context.Context, pos runs.Cursor) ([]runs.Item, bool, error) {
		return sse.Wait(ctx, sw, f, pos)
	}
	for b, err := range runs.Batches(ctx, f, pos, wait) {
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
			h.Runs.Logger().Warn("stream run events", "run", id, "error", err)
			_ = sw.FrameJSON("", "stream_error", wire.ErrorDetail{Message: "lost the run's event stream: " + err.Error(), Type: "server_error", Code: "stream_error"})
			_ = sw.Flush()
			return
		}
		for _, it := range b.Items {
			if err := sw.FrameJSON(it.ID(), string(it.Type), it.Event); err != nil {
				return
			}
		}
		if sw.Flush() != nil {
			return
		}
	}
}

// Cancel asks Temporal to cancel a run: POST /v1/runs/{id}/cancel. The
// cancellation reaches the in-flight model call over NATS and a tool call
// through its heartbeat, and the run ends cancelled with what it had.
func (h *Handlers) Cancel(c *fiber.Ctx) error {
	id, err := runID(c)
	if err != nil {
		return err
	}
	if err := h.checkUnfinished(c, id, "run %s has already finished (%s)"); err != nil {
		return err
	}
	if err := h.Runs.Service.Cancel(c.UserContext(), id); err != nil {
		if errors.Is(err, runs.ErrNotFound) {
			// It existed a moment ago: it has closed since.
			return web.Conflict("run " + id + " has already finished")
		}
		return web.Unavailable("cannot cancel run " + id + ": " + err.Error())
	}
	return c.Status(fiber.StatusAccepted).JSON(wire.RunCancelling{ID: id, Status: "cancelling"})
}

// Input delivers a person's answer to a waiting run as the workflow's
// input update: POST /v1/runs/{id}/input. A run that waits for nothing
// turns it away (409).
func (h *Handlers) Input(c *fiber.Ctx) error {
	id, err := runID(c)
	if err != nil {
		return err
	}
	var in wire.RunInput
	if err := web.DecodeStrict(c.Body(), &in); err != nil {
		return web.BadRequest(err.Error())
	}
	if err := in.Validate(); err != nil {
		return web.BadRequest(err.Error())
	}
	if err := runweb.CheckPayload("the input", in.InputRequest()); err != nil {
		return err
	}
	if err := h.checkUnfinished(c, id, "run %s has finished (%s); it waits for no input"); err != nil {
		return err
	}
	res, err := h.Runs.Deliver(c.UserContext(), id, in.InputRequest())
	if err != nil {
		return err
	}
	return c.JSON(res)
}

// checkUnfinished refuses, with a 409, to act on the caller's run id once
// it has finished: refusal formats the message from the run's id and
// status.
func (h *Handlers) checkUnfinished(c *fiber.Ctx, id, refusal string) error {
	st, err := h.Runs.ReadState(c.UserContext(), id, web.Principal(c).Name)
	if err != nil {
		return err
	}
	if runweb.Finished(st.Status) {
		return web.Conflict(fmt.Sprintf(refusal, id, st.Status))
	}
	return nil
}

// runStatuses are the statuses a listing may be filtered by.
var runStatuses = []string{contract.StatusRunning, contract.StatusWaiting, contract.StatusCompleted, contract.StatusFailed, contract.StatusCancelled}

// summaryOf converts one visibility record.
func summaryOf(e runs.Info) wire.RunSummary {
	return wire.RunSummary{
		ID:         e.ID,
		Agent:      e.Attrs[contract.SearchAttrAgent.GetName()],
		Status:     runweb.StatusOf(e.Attrs[contract.SearchAttrStatus.GetName()], e),
		CreatedAt:  e.Started,
		FinishedAt: e.Closed,
		Summary:    e.Memo[runs.MemoSummary],
		ScheduleID: e.Attrs[runs.SearchAttrScheduledBy],
		Door:       e.Memo[runs.MemoDoor],
	}
}
