package api

import (
	"errors"
	"net/url"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/workflows"
	"go.temporal.io/api/serviceerror"
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
	if err := s.ownRun(c, id); err != nil {
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

// ownRun checks that run id exists and belongs to the caller; a run of
// another user is reported as unknown.
func (s *Server) ownRun(c *fiber.Ctx, id string) error {
	v, err := s.temporal.QueryWorkflow(c.UserContext(), id, "", workflows.QueryState)
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &nf):
		return errNotFound("no run " + id)
	case err != nil:
		return errUnavailable("cannot read run " + id + ": " + err.Error())
	}
	var st workflows.RunState
	if err := v.Get(&st); err != nil {
		return errInternal("cannot decode the state of run " + id)
	}
	if st.User != userFromHeaders(c).Key() {
		return errNotFound("no run " + id)
	}
	return nil
}
