package api

import (
	"context"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// auditKey is the fiber local that marks a chat request asking for the
// audit trail.
type auditKey struct{}

// wantsAudit reports whether a chat request asks for the audit trail: the
// body's "longhaul": {"audit": true}, or the X-Longhaul-Audit header.
func wantsAudit(c *fiber.Ctx, req *wire.ChatRequest) bool {
	if req.Longhaul != nil && req.Longhaul.Audit {
		return true
	}
	return headerOn(c.Get(HeaderAudit))
}

// headerOn reads a switch header: set and not a word for off.
func headerOn(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "0", "false", "no", "off":
		return false
	}
	return true
}

// asked reports whether the request being answered asked for the audit
// trail (see chatCompletions).
func asked(c *fiber.Ctx) bool {
	v, _ := c.Locals(auditKey{}).(bool)
	return v
}

// audit reads run's audit trail for owner. A run that cannot be read
// yields an Audit that says why, so the answer it rides on still goes out.
func (s *Server) audit(ctx context.Context, run, owner string) *wire.Audit {
	a, err := s.readAudit(ctx, run, owner)
	if err != nil {
		s.log.WarnContext(ctx, "read the audit trail", "run", run, "error", err)
		a = buildAudit(run, contract.RunState{}, nil)
		a.Status, a.Error = "", "the audit trail could not be read: "+err.Error()
	}
	return &a
}

// readAudit reads run's state with readState, which refuses another
// principal's run as unknown, and its whole event log (readLog).
func (s *Server) readAudit(ctx context.Context, run, owner string) (wire.Audit, error) {
	st, err := s.readState(ctx, run, owner)
	if err != nil {
		return wire.Audit{}, err
	}
	log, err := s.readLog(ctx, run)
	if err != nil {
		return wire.Audit{}, err
	}
	return buildAudit(run, st, log), nil
}

// runAudit answers GET /v1/runs/{id}/audit: the run's audit trail, as a
// chat completion carries it.
func (s *Server) runAudit(c *fiber.Ctx) error {
	id, err := runID(c)
	if err != nil {
		return err
	}
	a, err := s.readAudit(c.UserContext(), id, principal(c).Name)
	if err != nil {
		return err
	}
	return c.JSON(a)
}
