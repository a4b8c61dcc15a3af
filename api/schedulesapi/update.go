package schedulesapi

import (
	"maps"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul/api/runweb"
	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// Update answers PATCH /v1/schedules/{id}: what the body names changes
// (every or cron replaces the other, input or messages the conversation),
// checked as a new schedule is; the rest stays. Its past runs are as they
// were; its next fires start the new run.
func (h *Handlers) Update(c *fiber.Ctx) error {
	s, err := h.read(c)
	if err != nil {
		return err
	}
	var p wire.SchedulePatch
	if err := web.DecodeStrict(c.Body(), &p); err != nil {
		return web.BadRequest(err.Error())
	}
	if err := h.patchRun(c, &s, p); err != nil {
		return err
	}
	if err := h.setTiming(&s, timingOf(s, p)); err != nil {
		return err
	}
	// Whatever the body changed, the schedule runs as its owner is now.
	if _, err := h.asOwnerNow(c, &s); err != nil {
		return err
	}
	// A new conversation's big images go to the blob store under the
	// schedule's id; the images of the one it replaces stay there until
	// the schedule is deleted (a run started before may still read them).
	if err := h.Gate.ClaimSchedule(c.UserContext(), s.ID, &s.Input); err != nil {
		return runweb.Refused(err)
	}
	if err := h.engineError("update", s.ID, h.Schedules.Update(c.UserContext(), s)); err != nil {
		return err
	}
	if after, err := h.Schedules.Get(c.UserContext(), s.ID); err == nil {
		s = after
	}
	return c.JSON(view(s))
}

// patchRun changes the run s starts as p says: a new conversation, agent
// or metadata is checked as a new schedule's is, with the rest kept.
func (h *Handlers) patchRun(c *fiber.Ctx, s *runs.Schedule, p wire.SchedulePatch) error {
	if p.Agent == nil && p.Input == nil && p.Messages == nil && p.Metadata == nil {
		return nil
	}
	req := wire.RunRequest{Agent: s.Input.Agent, Messages: p.Messages, Input: p.Input, Metadata: maps.Clone(s.Input.Metadata)}
	if p.Agent != nil {
		req.Agent = *p.Agent
	}
	if p.Metadata != nil {
		req.Metadata = *p.Metadata
	}
	kept := req.Messages == nil && req.Input == nil
	if kept {
		// The conversation stays: check the rest with a stand-in for it.
		stand := "-"
		req.Input = &stand
	}
	msgs := s.Input.Messages
	if err := h.setRun(c, s, &req); err != nil {
		return err
	}
	if kept {
		s.Input.Messages = msgs
		s.Summary = summaryOf(s.Input.Agent, msgs)
	}
	return nil
}

// timingOf is s's timing with p's changes, as a request would name it.
func timingOf(s runs.Schedule, p wire.SchedulePatch) wire.ScheduleRequest {
	req := wire.ScheduleRequest{Cron: s.Spec.Cron, Timezone: s.Spec.TimeZone, Overlap: s.Overlap, Paused: s.Paused}
	if s.Spec.Every > 0 {
		req.Every = s.Spec.Every.String()
	}
	if s.CatchupWindow > 0 && s.CatchupWindow <= runs.MaxCatchupWindow {
		// One kept from before the bound (Temporal's default of a year)
		// becomes the default.
		req.CatchupWindow = s.CatchupWindow.String()
	}
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&req.Timezone, p.Timezone)
	set(&req.Overlap, p.Overlap)
	set(&req.CatchupWindow, p.CatchupWindow)
	switch {
	case p.Every != nil && p.Cron != nil:
		req.Every, req.Cron = *p.Every, *p.Cron
	case p.Every != nil:
		req.Every, req.Cron = *p.Every, ""
	case p.Cron != nil:
		req.Every, req.Cron = "", *p.Cron
	}
	if p.Paused != nil {
		req.Paused = *p.Paused
	}
	return req
}
