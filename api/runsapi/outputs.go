package runsapi

import (
	"errors"
	"net/url"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/internal/store"
)

// Output serves the whole of a stored tool output (a claim check) that the
// run's events and the model saw only an excerpt of: GET
// /v1/runs/{id}/outputs/{ref}. Only the run's own user may read it; to anyone
// else the output does not exist.
func (h *Handlers) Output(c *fiber.Ctx) error {
	if h.Blobs == nil {
		return web.NotFound("this server keeps no stored outputs")
	}
	id, err := url.PathUnescape(c.Params("id"))
	if err != nil {
		return web.BadRequest("bad run id")
	}
	ref, err := url.PathUnescape(c.Params("ref"))
	if err != nil {
		return web.BadRequest("bad output reference")
	}
	if _, err := h.Runs.ReadState(c.UserContext(), id, web.Principal(c).Name); err != nil {
		return err
	}
	b, err := h.Blobs.Get(c.UserContext(), ref)
	switch {
	case errors.Is(err, store.ErrNotFound) || err == nil && b.Run != id:
		return web.NotFound("run " + id + " has no output " + ref)
	case err != nil:
		return web.Internal("reading the stored output failed")
	}
	c.Set(fiber.HeaderContentType, fiber.MIMETextPlainCharsetUTF8)
	c.Set("X-Longhaul-Output-Kind", b.Kind)
	c.Set("X-Longhaul-Output-Name", b.Name)
	return c.Send(b.Data)
}

// Audit answers GET /v1/runs/{id}/audit: the run's audit trail, as a chat
// completion carries it.
func (h *Handlers) Audit(c *fiber.Ctx) error {
	id, err := runID(c)
	if err != nil {
		return err
	}
	a, err := h.Runs.ReadAudit(c.UserContext(), id, web.Principal(c).Name)
	if err != nil {
		return err
	}
	return c.JSON(a)
}
