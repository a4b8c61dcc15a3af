package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/longhaul-dev/longhaul/api/mcpapi"
)

// mcpRoutes serves the agents as an MCP server (api/mcpapi) at
// mcpapi.Path, behind the same auth as /v1 (routes' part): POST for
// messages, DELETE to end a session, GET refused with 405 (no standalone
// stream).
func (s *Server) mcpRoutes() {
	h := (&mcpapi.Handler{
		Runs: s.runsWeb, Gate: s.gate, Catalog: s.catalog, Stopping: s.stopping, Log: s.log,
	}).Init()
	for _, m := range []string{fiber.MethodPost, fiber.MethodGet, fiber.MethodDelete} {
		s.app.Add(m, mcpapi.Path, s.auth, h.Serve)
	}
}
