// Package webhooksapi serves a principal's webhook subscriptions
// (/v1/webhooks: create, list, delete, and each one's delivery attempts)
// and makes the webhook a single run is started with (the webhook field
// of POST /v1/runs and of a background POST /v1/responses). The agent
// workflow delivers the events (workflows.WebhookWorkflow); these routes
// only read and write the store, so they are tested with it alone. Every
// route is owner-scoped: another principal's webhook is a 404.
package webhooksapi

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/safehttp"
	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// DefaultMaxWebhooks is Handlers.Max when none is set.
const DefaultMaxWebhooks = 20

// maxURL bounds a webhook's URL.
const maxURL = 2048

// Handlers serves the webhook routes.
type Handlers struct {
	// Store keeps the webhooks; nil answers the routes 404 and refuses a
	// run's webhook.
	Store store.Webhooks
	// Max is the most subscriptions one principal keeps
	// (LONGHAUL_MAX_WEBHOOKS); zero is DefaultMaxWebhooks, below zero no
	// cap.
	Max int
	// AllowPrivate accepts URLs of private and loopback hosts
	// (LONGHAUL_WEBHOOK_PRIVATE), as the deliveries then reach them.
	AllowPrivate bool
	// Log takes what the handlers log; nil is slog's default.
	Log *slog.Logger
}

func (h *Handlers) log() *slog.Logger {
	if h.Log == nil {
		return slog.Default()
	}
	return h.Log
}

func (h *Handlers) max() int {
	switch {
	case h.Max == 0:
		return DefaultMaxWebhooks
	case h.Max < 0:
		return 0
	}
	return h.Max
}

// Require answers 404 on a server that keeps no webhooks.
func (h *Handlers) Require(c *fiber.Ctx) error {
	if h.Store == nil {
		return web.NotFound("this server keeps no webhooks")
	}
	return c.Next()
}

// Create answers POST /v1/webhooks: a subscription of the caller's, with
// its secret, shown only in this answer.
func (h *Handlers) Create(c *fiber.Ctx) error {
	var req wire.WebhookRequest
	if err := web.DecodeStrict(c.Body(), &req); err != nil {
		return web.BadRequest(err.Error())
	}
	if err := h.CheckURL(req.URL); err != nil {
		return err
	}
	events, err := checkEvents(req.Events)
	if err != nil {
		return err
	}
	w, err := h.create(c.UserContext(), store.Webhook{Owner: web.Principal(c).User.Key(), URL: req.URL, Events: events})
	if errors.Is(err, store.ErrWebhookLimit) {
		return web.Forbidden(fmt.Sprintf("you have %d webhooks, the most this server keeps for one caller (LONGHAUL_MAX_WEBHOOKS); delete one first", h.max()))
	}
	if err != nil {
		return err
	}
	out := toWire(w)
	out.Secret = w.Secret
	return c.Status(fiber.StatusCreated).JSON(out)
}

// create stores w with a new id and secret.
func (h *Handlers) create(ctx context.Context, w store.Webhook) (store.Webhook, error) {
	w.ID, w.Secret = "wh_"+randomHex(12), NewSecret()
	w, err := h.Store.CreateWebhook(ctx, w, h.max())
	if err != nil && !errors.Is(err, store.ErrWebhookLimit) {
		h.log().ErrorContext(ctx, "create webhook", "error", err)
		return w, web.Internal("storing the webhook failed")
	}
	return w, err
}

// List answers GET /v1/webhooks: the caller's subscriptions, oldest
// first, without their secrets.
func (h *Handlers) List(c *fiber.Ctx) error {
	ws, err := h.Store.ListWebhooks(c.UserContext(), web.Principal(c).User.Key())
	if err != nil {
		h.log().ErrorContext(c.UserContext(), "list webhooks", "error", err)
		return web.Internal("reading the webhooks failed")
	}
	out := wire.WebhookList{Object: "list", Data: make([]wire.Webhook, 0, len(ws))}
	for _, w := range ws {
		out.Data = append(out.Data, toWire(w))
	}
	return c.JSON(out)
}

// Delete answers DELETE /v1/webhooks/{id}: no event is delivered to it
// any more, a delivery still retrying included.
func (h *Handlers) Delete(c *fiber.Ctx) error {
	id := c.Params("id")
	ok, err := h.Store.DeleteWebhook(c.UserContext(), web.Principal(c).User.Key(), id)
	if err != nil {
		h.log().ErrorContext(c.UserContext(), "delete webhook", "error", err)
		return web.Internal("deleting the webhook failed")
	}
	if !ok {
		return notFound(id)
	}
	return c.JSON(fiber.Map{"id": id, "object": "webhook.deleted", "deleted": true})
}

// Deliveries answers GET /v1/webhooks/{id}/deliveries?limit=: the
// webhook's latest delivery attempts, newest first.
func (h *Handlers) Deliveries(c *fiber.Ctx) error {
	limit, err := web.ListLimit(c)
	if err != nil {
		return err
	}
	id := c.Params("id")
	w, err := h.Store.GetWebhook(c.UserContext(), id)
	if errors.Is(err, store.ErrNoWebhook) || err == nil && w.Owner != web.Principal(c).User.Key() {
		return notFound(id)
	}
	if err != nil {
		h.log().ErrorContext(c.UserContext(), "get webhook", "error", err)
		return web.Internal("reading the webhook failed")
	}
	ds, err := h.Store.ListDeliveries(c.UserContext(), id, limit)
	if err != nil {
		h.log().ErrorContext(c.UserContext(), "list deliveries", "error", err)
		return web.Internal("reading the deliveries failed")
	}
	out := wire.WebhookDeliveryList{Object: "list", Data: make([]wire.WebhookDelivery, 0, len(ds))}
	for _, d := range ds {
		wd := wire.WebhookDelivery{Object: "webhook.delivery", EventID: d.EventID, Type: d.EventType, Attempt: d.Attempt,
			Error: d.Error, CreatedAt: d.At.Unix()}
		if d.StatusCode != 0 {
			wd.StatusCode = &d.StatusCode
		}
		out.Data = append(out.Data, wd)
	}
	return c.JSON(out)
}

// RunWebhook makes the webhook of the run about to start as run for
// owner: it takes every event of that run, and is signed with a secret
// of its own, which the answer that started the run shows once.
func (h *Handlers) RunWebhook(ctx context.Context, owner, run, rawURL string) (wire.RunWebhook, error) {
	if h == nil || h.Store == nil {
		return wire.RunWebhook{}, web.BadRequest("webhook: this server keeps no webhooks")
	}
	if err := h.CheckURL(rawURL); err != nil {
		return wire.RunWebhook{}, err
	}
	w, err := h.create(ctx, store.Webhook{Owner: owner, URL: rawURL, Events: contract.WebhookEventTypes, Run: run})
	if err != nil {
		return wire.RunWebhook{}, err
	}
	return wire.RunWebhook{ID: w.ID, URL: w.URL, Secret: w.Secret}, nil
}

// RunWebhooks lists owner's webhooks of run (its own: the one it started
// with and those added since), without their secrets.
func (h *Handlers) RunWebhooks(ctx context.Context, owner, run string) ([]wire.RunWebhook, error) {
	out := []wire.RunWebhook{}
	if h == nil || h.Store == nil {
		return out, nil
	}
	ws, err := h.Store.RunWebhooks(ctx, owner, run)
	if err != nil {
		h.log().ErrorContext(ctx, "list a run's webhooks", "run", run, "error", err)
		return nil, web.Internal("reading the run's webhooks failed")
	}
	for _, w := range ws {
		out = append(out, wire.RunWebhook{ID: w.ID, URL: w.URL})
	}
	return out, nil
}

// DeleteRunWebhook deletes owner's webhook id of run and reports whether
// there was one; no event goes to it any more.
func (h *Handlers) DeleteRunWebhook(ctx context.Context, owner, run, id string) (bool, error) {
	ws, err := h.RunWebhooks(ctx, owner, run)
	if err != nil || !slices.ContainsFunc(ws, func(w wire.RunWebhook) bool { return w.ID == id }) {
		return false, err
	}
	ok, err := h.Store.DeleteWebhook(ctx, owner, id)
	if err != nil {
		h.log().ErrorContext(ctx, "delete a run's webhook", "run", run, "error", err)
		return false, web.Internal("deleting the webhook failed")
	}
	return ok, nil
}

// DropRunWebhook deletes the webhook of a run that did not start.
func (h *Handlers) DropRunWebhook(ctx context.Context, owner, id string) {
	if _, err := h.Store.DeleteWebhook(ctx, owner, id); err != nil {
		h.log().WarnContext(ctx, "delete the webhook of a run that did not start", "webhook", id, "error", err)
	}
}

// CheckURL refuses, with a 400, a URL deliveries would never reach: not
// http or https, with user info, or, unless AllowPrivate, naming a
// loopback or private address or a port other than 80 and 443. A host
// name that resolves to such an address passes here and is refused at
// each delivery, after resolution (internal/safehttp).
func (h *Handlers) CheckURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case raw == "" || len(raw) > maxURL:
		return web.BadRequest("url: an http or https URL of at most " + strconv.Itoa(maxURL) + " bytes is required")
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil:
		return web.BadRequest("url: must be an absolute http or https URL with a host and no user info")
	case h.AllowPrivate:
		return nil
	}
	if port := u.Port(); port != "" && port != "80" && port != "443" {
		return web.BadRequest("url: port " + port + " is refused: webhooks reach ports 80 and 443 only (LONGHAUL_WEBHOOK_PRIVATE=true lifts it)")
	}
	host := strings.ToLower(u.Hostname())
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return web.BadRequest("url: loopback hosts are refused (LONGHAUL_WEBHOOK_PRIVATE=true allows them)")
	}
	if ip := net.ParseIP(host); ip != nil {
		addr, _ := netip.AddrFromSlice(ip)
		if why := safehttp.BlockReason(addr.Unmap()); why != "" {
			return web.BadRequest("url: " + host + " is refused (" + why + "; LONGHAUL_WEBHOOK_PRIVATE=true allows private addresses)")
		}
	}
	return nil
}

// checkEvents checks a subscription's event types; none is all of them.
func checkEvents(events []string) ([]string, error) {
	if len(events) == 0 {
		return slices.Clone(contract.WebhookEventTypes), nil
	}
	var out []string
	for _, e := range events {
		if !slices.Contains(contract.WebhookEventTypes, e) {
			return nil, web.BadRequest(fmt.Sprintf("events: %q is not one of %s", e, strings.Join(contract.WebhookEventTypes, ", ")))
		}
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out, nil
}

func toWire(w store.Webhook) wire.Webhook {
	return wire.Webhook{ID: w.ID, Object: "webhook", URL: w.URL, Events: w.Events, CreatedAt: w.CreatedAt.Unix()}
}

func notFound(id string) error { return web.NotFound("no webhook " + id) }

// NewSecret is a new webhook secret: whsec_ and 32 random bytes in
// base64, the form the Standard Webhooks libraries take.
func NewSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return "whsec_" + base64.StdEncoding.EncodeToString(b)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
