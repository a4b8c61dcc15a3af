package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/longhaul-dev/longhaul/api/webhooksapi"
	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/internal/usercreds"
)

// WebhookPolicy bounds the webhooks principals keep (see
// webhooksapi.Handlers).
type WebhookPolicy struct {
	// Max is the most subscriptions one principal keeps; zero is
	// webhooksapi.DefaultMaxWebhooks, below zero no cap.
	Max int
	// AllowPrivate accepts URLs of private and loopback hosts.
	AllowPrivate bool
}

// webhooks is the webhook routes' handlers, over the blob store's
// database; without a store (a server that keeps none) they answer 404.
func (s *Server) webhooks() *webhooksapi.Handlers {
	h := &webhooksapi.Handlers{Max: s.cfg.Webhooks.Max, AllowPrivate: s.cfg.Webhooks.AllowPrivate, Log: s.log}
	if ws, ok := s.cfg.Blobs.(store.Webhooks); ok {
		h.Store = ws
		// With LONGHAUL_TOKEN_KEY, secrets and URLs are kept sealed as users'
		// credentials are.
		if s.cfg.Credentials != nil {
			h.Store = usercreds.SealedWebhooks{Webhooks: ws, Box: s.cfg.Credentials.Box}
		}
	}
	return h
}

// webhookRoutes registers the webhook routes under v1 (routes' part);
// they answer 404 on a server without a store.
func (s *Server) webhookRoutes(v1 fiber.Router) {
	hooks := s.webhooks()
	v1.Post("/webhooks", hooks.Require, hooks.Create)
	v1.Get("/webhooks", hooks.Require, hooks.List)
	v1.Delete("/webhooks/:id", hooks.Require, hooks.Delete)
	v1.Get("/webhooks/:id/deliveries", hooks.Require, hooks.Deliveries)
}
