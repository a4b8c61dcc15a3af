package api

import (
	"errors"
	"net/url"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul/internal/store"
)

// runOutput serves the whole of a stored tool output (a claim check) that the
// run's events and the model saw only an excerpt of: GET
// /v1/runs/{id}/outputs/{ref}. Only the run's own user may read it; to anyone
// else the output does not exist.
func (s *Server) runOutput(c *fiber.Ctx) error {
	if s.cfg.Blobs == nil {
		return errNotFound("this server keeps no stored outputs")
	}
	id, err := url.PathUnescape(c.Params("id"))
	if err != nil {
		return errBadRequest("bad run id")
	}
	ref, err := url.PathUnescape(c.Params("ref"))
	if err != nil {
		return errBadRequest("bad output reference")
	}
	if _, err := s.readState(c.UserContext(), id, principal(c).Name); err != nil {
		return err
	}
	b, err := s.cfg.Blobs.Get(c.UserContext(), ref)
	switch {
	case errors.Is(err, store.ErrNotFound) || err == nil && b.Run != id:
		return errNotFound("run " + id + " has no output " + ref)
	case err != nil:
		return errInternal("reading the stored output failed")
	}
	c.Set(fiber.HeaderContentType, fiber.MIMETextPlainCharsetUTF8)
	c.Set("X-Longhaul-Output-Kind", b.Kind)
	c.Set("X-Longhaul-Output-Name", b.Name)
	return c.Send(b.Data)
}
