package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/longhaul-dev/longhaul/api/a2aapi"
)

// a2aRoutes registers the A2A door (api/a2aapi): the catalog's agent card
// and each agent's, public but filtered by the caller's credentials when
// it brings them, and each agent's JSON-RPC and HTTP+JSON bindings behind
// the same keys as /v1.
func (s *Server) a2aRoutes() {
	h := &a2aapi.Handlers{
		Runs: s.runsWeb, Gate: s.gate, Streams: s.streams, Catalog: s.catalog,
		Webhooks: s.webhooks(), Wait: s.cfg.RequestTimeout,
	}
	s.app.Get("/.well-known/agent-card.json", s.cardAuth, h.CatalogCard)
	s.app.Get("/a2a/:agent/.well-known/agent-card.json", s.cardAuth, h.Card)
	s.app.Post("/a2a/:agent", s.auth, h.JSONRPC)
	s.app.All("/a2a/:agent/*", s.auth, h.REST)
}

// cardAuth resolves the principal of a card request that brings
// credentials, as auth does; one without is anonymous, and sees the
// agents anyone may.
func (s *Server) cardAuth(c *fiber.Ctx) error {
	if c.Get(fiber.HeaderAuthorization) == "" {
		return c.Next()
	}
	return s.auth(c)
}
