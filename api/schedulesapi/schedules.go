package schedulesapi

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/api/runweb"
	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/longhaul-dev/longhaul/internal/tools"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// Create creates a schedule: POST /v1/schedules. It answers 201 with the
// schedule and when it fires next.
func (h *Handlers) Create(c *fiber.Ctx) error {
	var req wire.ScheduleRequest
	if err := runweb.DecodeRequest(c.Body(), &req, tools.CheckSchema); err != nil {
		return err
	}
	s := runs.Schedule{ID: runs.NewScheduleID(), Owner: web.Principal(c).Name, Paused: req.Paused}
	if err := h.setRun(c, &s, req.RunRequest()); err != nil {
		return err
	}
	if err := h.setTiming(&s, req); err != nil {
		return err
	}
	if err := h.checkQuota(c, s.Owner); err != nil {
		return err
	}
	// Its big images go to the blob store under its id, as a run's do.
	if err := h.Gate.ClaimSchedule(c.UserContext(), s.ID, &s.Input); err != nil {
		return runweb.Refused(err)
	}
	if err := h.engineError("create", s.ID, h.Schedules.Create(c.UserContext(), s)); err != nil {
		h.Gate.DropScheduleClaims(c.UserContext(), s.ID)
		return err
	}
	got, err := h.Schedules.Get(c.UserContext(), s.ID)
	if err != nil {
		// Created all the same: answer what was asked for.
		h.log().Warn("describe a new schedule", "schedule", s.ID, "error", err)
		got = s
	}
	return c.Status(fiber.StatusCreated).JSON(view(got))
}

// setRun sets what each fire of s starts from a run request, checked as
// POST /v1/runs checks it.
func (h *Handlers) setRun(c *fiber.Ctx, s *runs.Schedule, req *wire.RunRequest) error {
	if err := req.Validate(tools.CheckSchema); err != nil {
		return web.BadRequest(err.Error())
	}
	if err := h.Images.CheckChatImages(req.Messages); err != nil {
		return err
	}
	// The gate, the one author of runs, builds what each fire starts
	// from, as it builds a run's.
	in, err := h.Gate.Input(runs.Request{
		Agent: req.Agent, User: web.Principal(c).User, Messages: req.Conversation(), Metadata: req.Metadata,
	})
	if err != nil {
		return runweb.Refused(err)
	}
	s.Input, s.Summary = in, summaryOf(in.Agent, in.Messages)
	// The payload limit is checked once the big images are claimed
	// (runs.Gate.ClaimSchedule), as a run's is.
	return nil
}

// summaryOf is the one-line summary of a run of agent on msgs, as the
// runs API's (runs.Gate) reads.
func summaryOf(agent string, msgs []longhaul.Message) string {
	return runs.Summary(agent, runs.Summarize(msgs, 60))
}

// setTiming sets when s fires and its policies from req, checked against
// the engine's scheduler and the least interval.
func (h *Handlers) setTiming(s *runs.Schedule, req wire.ScheduleRequest) error {
	every, err := req.Interval()
	if err != nil {
		return web.BadRequest(err.Error())
	}
	s.Spec = runs.ScheduleSpec{Every: every, Cron: strings.TrimSpace(req.Cron), TimeZone: req.Timezone}
	if err := runs.CheckSpec(s.Spec, h.Limits.MinInterval, time.Now()); err != nil {
		return web.BadRequest(err.Error())
	}
	s.Overlap = runs.OverlapSkip
	if req.Overlap != "" {
		s.Overlap = req.Overlap
	}
	if req.Overlap != "" && !slices.Contains(runs.Overlaps, req.Overlap) {
		return web.BadRequest("overlap: must be one of " + strings.Join(runs.Overlaps, ", "))
	}
	if s.CatchupWindow, err = req.Catchup(); err != nil {
		return web.BadRequest(err.Error())
	}
	if s.CatchupWindow > runs.MaxCatchupWindow {
		return web.BadRequest(fmt.Sprintf("catchup_window: at most %s (a longer one starts a burst of missed runs after an outage)", runs.MaxCatchupWindow))
	}
	if s.CatchupWindow == 0 {
		s.CatchupWindow = h.Limits.CatchupWindow
	}
	if s.CatchupWindow == 0 || s.CatchupWindow > runs.MaxCatchupWindow {
		// None at all is Temporal's default, a year: the bound instead.
		s.CatchupWindow = runs.MaxCatchupWindow
	}
	s.Paused = req.Paused
	return nil
}

// checkQuota refuses a new schedule to a principal who has as many as the
// limit allows. Visibility counts them, a moment behind: two requests at
// once may both pass.
func (h *Handlers) checkQuota(c *fiber.Ctx, owner string) error {
	if h.Limits.Schedules <= 0 {
		return nil
	}
	if !runs.LiteralOK(owner) {
		return web.Internal("your schedules cannot be counted: your principal's name cannot be matched by a visibility query")
	}
	n, err := h.Schedules.Count(c.UserContext(), owner)
	if err != nil {
		return h.engineError("count", "of "+owner, err)
	}
	if n >= int64(h.Limits.Schedules) {
		return quotaExceeded(fmt.Sprintf("you have %d schedules, the most allowed (LONGHAUL_MAX_SCHEDULES); delete one first", n))
	}
	return nil
}

// Get answers GET /v1/schedules/{id}.
func (h *Handlers) Get(c *fiber.Ctx) error {
	s, err := h.read(c)
	if err != nil {
		return err
	}
	return c.JSON(view(s))
}

// List answers GET /v1/schedules: the caller's schedules, newest first.
func (h *Handlers) List(c *fiber.Ctx) error {
	limit, err := web.ListLimit(c)
	if err != nil {
		return err
	}
	owner := web.Principal(c).Name
	if !runs.LiteralOK(owner) {
		return web.Internal("your schedules cannot be listed: your principal's name cannot be matched by a visibility query")
	}
	query := runs.OwnerQuery(owner)
	var token []byte
	if v := c.Query("page_token"); v != "" {
		var ok bool
		if token, ok = web.OpenPageToken(query, v); !ok {
			return web.BadRequest("page_token: not a token this API returned for this user")
		}
	}
	page, err := h.Schedules.List(c.UserContext(), owner, limit, token)
	if err != nil {
		return h.engineError("list", "of "+owner, err)
	}
	list := wire.ScheduleList{Object: "list", Data: []wire.Schedule{}}
	for _, s := range page.Schedules {
		list.Data = append(list.Data, view(s))
	}
	if len(page.Next) > 0 {
		list.NextPageToken = web.SealPageToken(query, page.Next)
	}
	return c.JSON(list)
}

// asOwnerNow makes s run as its owner is now, the caller: their role and
// groups as this request resolved them, not as they were when s was
// created or last changed. An owner who may no longer use s's agent is
// refused. It reports whether s's identity changed (and so must be
// written back).
func (h *Handlers) asOwnerNow(c *fiber.Ctx, s *runs.Schedule) (bool, error) {
	u := web.Principal(c).User
	if err := h.Gate.Resolve(&runs.Request{Agent: s.Input.Agent, User: u}); err != nil {
		return false, runweb.Refused(err)
	}
	if runs.SameUser(s.Input.User, u) {
		return false, nil
	}
	s.Input.User = u
	return true, nil
}

// refreshOwner is asOwnerNow with the change written to the engine.
func (h *Handlers) refreshOwner(c *fiber.Ctx, s runs.Schedule) error {
	changed, err := h.asOwnerNow(c, &s)
	if err != nil || !changed {
		return err
	}
	return h.Schedules.Update(c.UserContext(), s)
}

// Pause answers POST /v1/schedules/{id}/pause: it fires no more until
// resumed (a trigger still starts a run).
func (h *Handlers) Pause(c *fiber.Ctx) error {
	return h.act(c, "pause", func(s runs.Schedule) error {
		return h.Schedules.Pause(c.UserContext(), s.ID, "paused by "+s.Owner+" through the API")
	})
}

// Resume answers POST /v1/schedules/{id}/resume.
func (h *Handlers) Resume(c *fiber.Ctx) error {
	return h.act(c, "resume", func(s runs.Schedule) error {
		if err := h.refreshOwner(c, s); err != nil {
			return err
		}
		return h.Schedules.Resume(c.UserContext(), s.ID, "resumed by "+s.Owner+" through the API")
	})
}

// Trigger answers POST /v1/schedules/{id}/trigger: a run now, under the
// schedule's overlap policy, paused or not; 202 with the schedule, whose
// recent runs name it once the engine started it. The trigger passes the
// gate POST /v1/runs passes (admission, the owner's run limit, budgets:
// 429 past them), and the run goes as the owner is now.
func (h *Handlers) Trigger(c *fiber.Ctx) error {
	return h.act(c, "trigger", func(s runs.Schedule) error {
		release, err := h.Gate.CheckStart(c.UserContext(), s.Owner, s.Input.Agent)
		if err != nil {
			return runweb.Refused(err)
		}
		defer release()
		if err := h.refreshOwner(c, s); err != nil {
			return err
		}
		if err := h.Schedules.Trigger(c.UserContext(), s.ID); err != nil {
			return err
		}
		c.Status(fiber.StatusAccepted)
		return nil
	})
}

// act does op to the caller's schedule named in the path and answers the
// schedule as it is after.
func (h *Handlers) act(c *fiber.Ctx, what string, op func(runs.Schedule) error) error {
	s, err := h.read(c)
	if err != nil {
		return err
	}
	if err := op(s); err != nil {
		var we *web.Error
		if errors.As(err, &we) {
			return err
		}
		return h.engineError(what, s.ID, err)
	}
	if after, err := h.Schedules.Get(c.UserContext(), s.ID); err == nil {
		s = after
	}
	return c.JSON(view(s))
}

// Delete answers DELETE /v1/schedules/{id}: it fires no more; its runs,
// finished or going, stay.
func (h *Handlers) Delete(c *fiber.Ctx) error {
	s, err := h.read(c)
	if err != nil {
		return err
	}
	if err := h.engineError("delete", s.ID, h.Schedules.Delete(c.UserContext(), s.ID)); err != nil {
		return err
	}
	return c.JSON(wire.ScheduleDeleted{ID: s.ID, Object: "schedule.deleted", Deleted: true})
}

// view is s as the API answers it.
func view(s runs.Schedule) wire.Schedule {
	v := wire.Schedule{
		ID: s.ID, Object: "schedule", Agent: s.Input.Agent, Input: longhaul.LastUserText(s.Input.Messages),
		Metadata: s.Input.Metadata, Cron: s.Spec.Cron, Timezone: s.Spec.TimeZone, Overlap: s.Overlap,
		CatchupWindow: s.CatchupWindow.String(), Paused: s.Paused, NextRuns: []time.Time{},
		RunCount: s.Actions, RecentRuns: []wire.ScheduledRun{}, CreatedAt: s.Created, UpdatedAt: s.Updated,
		RunsURL: "/v1/runs?schedule_id=" + url.QueryEscape(s.ID),
	}
	if v.Metadata == nil {
		v.Metadata = map[string]string{}
	}
	if v.Timezone == "" {
		v.Timezone = "UTC"
	}
	if s.Spec.Every > 0 {
		v.Every = s.Spec.Every.String()
	}
	if !s.Paused {
		next := s.Next
		if len(next) == 0 {
			// The engine has not computed them yet (a schedule just
			// created): they are the spec's, computed as it computes them.
			next = runs.NextFires(s.Spec, time.Now(), 5)
		}
		v.NextRuns = append(v.NextRuns, next...)
	}
	if len(v.NextRuns) > 0 {
		v.NextRunAt = &v.NextRuns[0]
	}
	for _, f := range s.Recent {
		v.RecentRuns = append(v.RecentRuns, wire.ScheduledRun{ID: f.RunID, ScheduledAt: f.ScheduledAt, StartedAt: f.StartedAt})
	}
	return v
}
