// Package schedulesapi serves the schedules API (/v1/schedules): a
// principal's schedules of runs, each an agent, its input and metadata,
// and when to start it (an interval or a cron expression in a time zone),
// with an overlap policy and a catch-up window. Every fire is an ordinary
// run of the runs API, owned by the schedule's owner, whose run object
// names the schedule (schedule_id) and which GET /v1/runs?schedule_id=
// lists. The schedules are the engine's (runs.Schedules: Temporal
// Schedules, so each is seen in the Temporal UI and fires while no API
// runs); the package imports no Temporal client, and its tests serve it
// from the fake (internal/testing/runsfake). Another principal's schedule
// is a 404, as another's run is. Its wire types are in internal/wire
// (schedules.go).
package schedulesapi

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul/api/runweb"
	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/internal/runs"
)

// Handlers serves the schedules API's routes.
type Handlers struct {
	// Schedules keeps the schedules; nil answers every route 404.
	Schedules runs.Schedules
	// Images says which image URLs a schedule's messages may send.
	Images runweb.ImagePolicy
	// Gate is the one author of runs (runs.Gate): it resolves a
	// schedule's agent and builds what each fire starts from, and a
	// trigger waits its turn in its admission queue and is held to the
	// owner's run limit and budgets, as POST /v1/runs is.
	Gate *runs.Gate
	// Limits bound each principal's schedules.
	Limits Limits
	// Log takes what the engine failed to answer; nil is slog's default.
	Log *slog.Logger
}

// Limits bound what one principal may schedule; zero is no limit.
type Limits struct {
	// Schedules is the most schedules a principal may have (403
	// quota_exceeded beyond).
	Schedules int
	// MinInterval is the least time between two fires of a schedule.
	MinInterval time.Duration
	// CatchupWindow is a schedule's catch-up window when its request
	// names none; zero is the engine's default.
	CatchupWindow time.Duration
}

// Require answers 404 on a server without schedules.
func (h *Handlers) Require(c *fiber.Ctx) error {
	if h.Schedules == nil {
		return web.NotFound("schedules are not available on this server")
	}
	return c.Next()
}

func (h *Handlers) log() *slog.Logger {
	if h.Log == nil {
		return slog.Default()
	}
	return h.Log
}

// scheduleID is the schedule named in the path.
func scheduleID(c *fiber.Ctx) (string, error) {
	id, err := url.PathUnescape(c.Params("id"))
	if err != nil || id == "" {
		return "", web.BadRequest("bad schedule id")
	}
	return strings.Clone(id), nil
}

// read is the schedule named in the path, if it is the caller's; another
// principal's is as unknown as one that does not exist.
func (h *Handlers) read(c *fiber.Ctx) (runs.Schedule, error) {
	id, err := scheduleID(c)
	if err != nil {
		return runs.Schedule{}, err
	}
	s, err := h.Schedules.Get(c.UserContext(), id)
	if err == nil && s.Owner != web.Principal(c).Name {
		err = runs.ErrNotFound
	}
	return s, h.engineError("read", id, err)
}

// engineError says err, an answer of the engine about schedule id, in the
// API's words.
func (h *Handlers) engineError(what, id string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, runs.ErrNotFound), errors.Is(err, runs.ErrInvalid) && what == "read":
		// An id no schedule can have is one no schedule has.
		return web.NotFound("no schedule " + id)
	case errors.Is(err, runs.ErrInvalid):
		return web.BadRequest(fmt.Sprintf("the engine refused to %s schedule %s: %v", what, id, err))
	case errors.Is(err, runs.ErrAlreadyStarted):
		return web.Conflict("schedule " + id + " exists")
	case errors.Is(err, runs.ErrCorrupt):
		return web.Internal(err.Error())
	}
	h.log().Warn("schedules", "op", what, "schedule", id, "error", err)
	return web.Unavailable(fmt.Sprintf("cannot %s schedule %s: %v", what, id, err))
}

// quotaExceeded is the refusal of a schedule over the principal's limit.
func quotaExceeded(msg string) error {
	return web.New(web.KindQuotaExceeded, msg)
}
