package runsapi

import (
	"errors"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul/api/runweb"
	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/longhaul-dev/longhaul/internal/tools"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// maxForks bounds the forks GET /v1/runs/{id} lists.
const maxForks = 100

// Fork starts a new run from a run's state at a point: POST
// /v1/runs/{id}/fork. What the old run did before the point is reused (its
// finished plan steps, its recorded tool results), never done again; the
// new run goes on from there with the overrides, under its own id. Only
// the old run's owner may fork it, and the fork counts against the
// owner's limits as any run does.
func (h *Handlers) Fork(c *fiber.Ctx) error {
	id, err := runID(c)
	if err != nil {
		return err
	}
	var req wire.ForkRequest
	if err := runweb.DecodeRequest(c.Body(), &req, tools.CheckSchema); err != nil {
		return err
	}
	if err := h.Images.CheckChatImages(req.Messages); err != nil {
		return err
	}
	at, err := runs.ParseForkAt(req.At)
	if err != nil {
		return web.BadRequest(err.Error())
	}
	who := web.Principal(c)
	src, err := h.Runs.ReadForkSource(c.UserContext(), id, who.Name)
	if err != nil {
		return err
	}
	fork, err := runs.ForkPoint(src.State, src.Log, at)
	if errors.Is(err, runs.ErrForkPoint) {
		return web.BadRequest(err.Error())
	}
	old := src.Request
	// The model applies to every role of the fork: it must be one the
	// caller may use already, whatever string names it.
	if req.Model != "" {
		if err := h.Models.Check(req.Model, who.User); err != nil {
			return err
		}
	}
	fork.Run, fork.Model = id, req.Model
	r := runs.Request{
		ID: runs.NewRunID(), Agent: old.Agent, User: who.User, Messages: req.Conversation(),
		Options: old.Options, Metadata: old.Metadata, VectorStores: old.VectorStores, Fork: &fork,
		Door: runs.DoorFork,
	}
	if req.Agent != "" {
		r.Agent = req.Agent
	}
	if r.Messages == nil {
		r.Messages = old.Messages
	}
	r.Question = "fork of " + id + " at " + fork.At + ": " + runs.Summarize(r.Messages, 60)
	newID, err := runweb.Start(c.UserContext(), h.Gate, r)
	if err != nil {
		return err
	}
	c.Set(web.HeaderRunID, newID)
	return c.Status(fiber.StatusAccepted).JSON(wire.ForkCreated{
		ID: newID, Status: contract.StatusRunning, EventsURL: runweb.EventsURL(newID),
		ForkedFrom: wire.ForkedFrom{Run: id, At: fork.At},
	})
}

// lineage is what GET /v1/runs/{id} shows of a run's forks: the run it was
// forked from (its memo), and the caller's runs forked from it (a
// visibility query; none when visibility does not answer), nil for none.
func (h *Handlers) lineage(c *fiber.Ctx, id string, info runs.Info) (*wire.ForkedFrom, []wire.RunFork) {
	var from *wire.ForkedFrom
	if run := info.Memo[runs.MemoForkedFrom]; run != "" {
		from = &wire.ForkedFrom{Run: run, At: info.Memo[runs.MemoForkAt]}
	}
	var forks []wire.RunFork
	owner := web.Principal(c).Name
	if !runs.LiteralOK(owner) || !runs.LiteralOK(id) || len(id) > 200 {
		return from, forks
	}
	page, err := h.Runs.Service.List(c.UserContext(), runs.Filter{Owner: owner, ForkedFrom: id}, maxForks, nil)
	if err != nil {
		h.Runs.Logger().Warn("list the forks of a run", "run", id, "error", err)
		return from, forks
	}
	for _, e := range page.Runs {
		forks = append(forks, wire.RunFork{
			ID: e.ID, At: e.Memo[runs.MemoForkAt], CreatedAt: e.Started,
			Status: runweb.StatusOf(e.Attrs[contract.SearchAttrStatus.GetName()], e),
		})
	}
	return from, forks
}
