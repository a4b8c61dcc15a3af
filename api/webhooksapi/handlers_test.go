package webhooksapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/google/go-cmp/cmp"

	"github.com/longhaul-dev/longhaul/api/webhooksapi"
	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/internal/testing/storetest"
	"github.com/longhaul-dev/longhaul/internal/testing/webtest"
	"github.com/longhaul-dev/longhaul/internal/usercreds"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// serve mounts h's routes as the server does, over a fresh SQLite store
// unless h has one (or is meant to have none: noStore).
func serve(t *testing.T, h *webhooksapi.Handlers, noStore bool) (*fiber.App, store.Webhooks) {
	t.Helper()
	if h.Store == nil && !noStore {
		s := storetest.SQLiteStore(t)
		h.Store = s.(store.Webhooks)
	}
	app := webtest.App(t, func(_, v1 fiber.Router) {
		v1.Post("/webhooks", h.Require, h.Create)
		v1.Get("/webhooks", h.Require, h.List)
		v1.Delete("/webhooks/:id", h.Require, h.Delete)
		v1.Get("/webhooks/:id/deliveries", h.Require, h.Deliveries)
	})
	return app, h.Store
}

// TestCreateWebhook is POST /v1/webhooks's table: what it stores, what
// it refuses and why.
func TestCreateWebhook(t *testing.T) {
	all := []string{"run.completed", "run.failed", "run.cancelled", "run.waiting"}
	for _, tc := range []struct {
		name       string
		private    bool
		body       any
		status     int
		events     []string
		errMessage string
	}{
		{name: "every event by default", body: map[string]any{"url": "https://hooks.example.com/longhaul"}, status: 201, events: all},
		{name: "some events, each once", body: map[string]any{"url": "https://hooks.example.com/", "events": []string{"run.failed", "run.waiting", "run.failed"}},
			status: 201, events: []string{"run.failed", "run.waiting"}},
		{name: "unknown event", body: map[string]any{"url": "https://hooks.example.com/", "events": []string{"run.started"}}, status: 400, errMessage: "run.started"},
		{name: "no url", body: map[string]any{"events": []string{"run.failed"}}, status: 400, errMessage: "url"},
		{name: "not http", body: map[string]any{"url": "ftp://hooks.example.com/"}, status: 400, errMessage: "http or https"},
		{name: "user info", body: map[string]any{"url": "https://u:p@hooks.example.com/"}, status: 400, errMessage: "user info"},
		{name: "unknown field", body: map[string]any{"url": "https://hooks.example.com/", "secret": "mine"}, status: 400, errMessage: "secret"},
		{name: "loopback", body: map[string]any{"url": "http://127.0.0.1/hook"}, status: 400, errMessage: "LONGHAUL_WEBHOOK_PRIVATE"},
		{name: "localhost", body: map[string]any{"url": "http://localhost/hook"}, status: 400, errMessage: "loopback"},
		{name: "private", body: map[string]any{"url": "http://10.1.2.3/hook"}, status: 400, errMessage: "refused"},
		{name: "metadata", body: map[string]any{"url": "http://[::ffff:169.254.169.254]/"}, status: 400, errMessage: "refused"},
		{name: "port", body: map[string]any{"url": "https://hooks.example.com:8443/"}, status: 400, errMessage: "port 8443"},
		{name: "loopback and port when private is allowed", private: true, body: map[string]any{"url": "http://127.0.0.1:9000/hook"}, status: 201, events: all},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app, _ := serve(t, &webhooksapi.Handlers{AllowPrivate: tc.private}, false)
			resp := webtest.Do(t, app, "POST", "/v1/webhooks", tc.body, webtest.Alice)
			if tc.status != 201 {
				webtest.WantError(t, resp, tc.status, tc.errMessage)
				return
			}
			if resp.StatusCode != 201 {
				t.Fatalf("status %d, want 201", resp.StatusCode)
			}
			w := webtest.Decode[wire.Webhook](t, resp)
			if !strings.HasPrefix(w.ID, "wh_") || w.Object != "webhook" || !strings.HasPrefix(w.Secret, "whsec_") || len(w.Secret) != len("whsec_")+44 {
				t.Errorf("created = %+v, want a wh_ id and a whsec_ secret of 32 bytes", w)
			}
			if diff := cmp.Diff(tc.events, w.Events); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWebhooksOwnerScoped: a principal lists, deletes and reads the
// deliveries of its own webhooks only; another's are 404, and no list
// shows a secret.
func TestWebhooksOwnerScoped(t *testing.T) {
	app, ws := serve(t, &webhooksapi.Handlers{}, false)
	w := webtest.Decode[wire.Webhook](t, webtest.Do(t, app, "POST", "/v1/webhooks", map[string]any{"url": "https://hooks.example.com/"}, webtest.Alice))
	for _, d := range []store.Delivery{
		{Webhook: w.ID, EventID: "evt_1", EventType: "run.completed", Attempt: 1, Error: "connection refused"},
		{Webhook: w.ID, EventID: "evt_1", EventType: "run.completed", Attempt: 2, StatusCode: 200},
	} {
		if err := ws.AddDelivery(t.Context(), d); err != nil {
			t.Fatal(err)
		}
	}
	list := webtest.Decode[wire.WebhookList](t, webtest.Do(t, app, "GET", "/v1/webhooks", nil, webtest.Alice))
	if len(list.Data) != 1 || list.Data[0].ID != w.ID || list.Data[0].Secret != "" {
		t.Errorf("alice's list = %+v, want her webhook without its secret", list)
	}
	if list := webtest.Decode[wire.WebhookList](t, webtest.Do(t, app, "GET", "/v1/webhooks", nil, webtest.Bob)); len(list.Data) != 0 {
		t.Errorf("bob's list = %+v, want none", list)
	}
	webtest.WantError(t, webtest.Do(t, app, "GET", "/v1/webhooks/"+w.ID+"/deliveries", nil, webtest.Bob), 404, "no webhook")
	webtest.WantError(t, webtest.Do(t, app, "DELETE", "/v1/webhooks/"+w.ID, nil, webtest.Bob), 404, "no webhook")

	ds := webtest.Decode[wire.WebhookDeliveryList](t, webtest.Do(t, app, "GET", "/v1/webhooks/"+w.ID+"/deliveries?limit=10", nil, webtest.Alice))
	if len(ds.Data) != 2 || ds.Data[0].Attempt != 2 || ds.Data[0].StatusCode == nil || *ds.Data[0].StatusCode != 200 ||
		ds.Data[1].StatusCode != nil || ds.Data[1].Error != "connection refused" || ds.Data[1].EventID != "evt_1" || ds.Data[1].Type != "run.completed" {
		t.Errorf("deliveries = %+v, want attempt 2 (200) then attempt 1 (its error, no status)", ds)
	}
	if resp := webtest.Do(t, app, "DELETE", "/v1/webhooks/"+w.ID, nil, webtest.Alice); resp.StatusCode != http.StatusOK {
		t.Errorf("DELETE = %d, want 200", resp.StatusCode)
	}
	webtest.WantError(t, webtest.Do(t, app, "GET", "/v1/webhooks/"+w.ID+"/deliveries", nil, webtest.Alice), 404, "no webhook")
}

// TestWebhookCap: LONGHAUL_MAX_WEBHOOKS bounds each principal's
// subscriptions, not another's, and a run's own webhook is not one.
func TestWebhookCap(t *testing.T) {
	h := &webhooksapi.Handlers{Max: 2}
	app, _ := serve(t, h, false)
	body := map[string]any{"url": "https://hooks.example.com/"}
	for range 2 {
		if resp := webtest.Do(t, app, "POST", "/v1/webhooks", body, webtest.Alice); resp.StatusCode != 201 {
			t.Fatalf("status %d, want 201", resp.StatusCode)
		}
	}
	webtest.WantError(t, webtest.Do(t, app, "POST", "/v1/webhooks", body, webtest.Alice), 403, "LONGHAUL_MAX_WEBHOOKS")
	if resp := webtest.Do(t, app, "POST", "/v1/webhooks", body, webtest.Bob); resp.StatusCode != 201 {
		t.Errorf("bob's first webhook: status %d, want 201", resp.StatusCode)
	}
	rw, err := h.RunWebhook(t.Context(), webtest.Principal(t, webtest.Alice).User.Key(), "run-1", "https://hooks.example.com/run")
	if err != nil || !strings.HasPrefix(rw.Secret, "whsec_") || !strings.HasPrefix(rw.ID, "wh_") {
		t.Errorf("RunWebhook over the cap = %+v, %v; want one", rw, err)
	}
	if _, err := h.RunWebhook(t.Context(), "alice", "run-2", "http://127.0.0.1/"); err == nil {
		t.Error("RunWebhook took a loopback URL")
	}
}

// TestWebhooksOff: a server without a webhook store answers 404.
func TestWebhooksOff(t *testing.T) {
	app, _ := serve(t, &webhooksapi.Handlers{}, true)
	webtest.WantError(t, webtest.Do(t, app, "GET", "/v1/webhooks", nil, webtest.Alice), 404, "no webhooks")
	if _, err := (*webhooksapi.Handlers)(nil).RunWebhook(t.Context(), "alice", "run-1", "https://hooks.example.com/"); err == nil {
		t.Error("RunWebhook without a store took the webhook")
	}
}

// TestSealedWebhookURLShownToOwner: with URLs sealed at rest
// (LONGHAUL_TOKEN_KEY), so that the database's rows do not give away a
// URL that is a bearer secret, the answers still carry it plain: the
// create's, a run's own webhook's, and its owner's GET /v1/webhooks (a
// subscription stored plain before URLs were sealed included).
func TestSealedWebhookURLShownToOwner(t *testing.T) {
	raw := storetest.SQLiteStore(t).(store.Webhooks)
	box, err := usercreds.NewBox(strings.Repeat("ab", usercreds.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	h := &webhooksapi.Handlers{Store: usercreds.SealedWebhooks{Webhooks: raw, Box: box}}
	app, _ := serve(t, h, false)
	old, err := raw.CreateWebhook(t.Context(), store.Webhook{ID: "wh_old", Owner: webtest.Principal(t, webtest.Alice).User.Key(), URL: "https://old.example.com/hook",
		Events: []string{"run.failed"}, Secret: webhooksapi.NewSecret()}, 0)
	if err != nil {
		t.Fatal(err)
	}
	const hookURL = "https://hooks.chat.example.com/services/T0123/B0456/q8Zx2LmN4pRtV6wY"
	created := webtest.Decode[wire.Webhook](t, webtest.Do(t, app, "POST", "/v1/webhooks", map[string]any{"url": hookURL}, webtest.Alice))
	if created.URL != hookURL {
		t.Errorf("created.url = %q, want %q", created.URL, hookURL)
	}
	rw, err := h.RunWebhook(t.Context(), webtest.Principal(t, webtest.Alice).User.Key(), "run-1", hookURL+"/run")
	if err != nil || rw.URL != hookURL+"/run" {
		t.Errorf("RunWebhook = %+v, %v; want its URL plain", rw, err)
	}
	for _, id := range []string{created.ID, rw.ID} {
		if row, err := raw.GetWebhook(t.Context(), id); err != nil || strings.Contains(row.URL, "q8Zx2LmN4pRtV6wY") || !strings.HasPrefix(row.URL, usercreds.SealedSecretPrefix) {
			t.Errorf("the row of %s keeps the URL as %q (%v), want it sealed", id, row.URL, err)
		}
	}
	list := webtest.Decode[wire.WebhookList](t, webtest.Do(t, app, "GET", "/v1/webhooks", nil, webtest.Alice))
	urls := map[string]string{}
	for _, w := range list.Data {
		urls[w.ID] = w.URL
	}
	if diff := cmp.Diff(map[string]string{old.ID: old.URL, created.ID: hookURL}, urls); diff != "" {
		t.Errorf("alice's list, id to URL (-want +got):\n%s", diff)
	}
	if resp := webtest.Do(t, app, "GET", "/v1/webhooks/"+created.ID+"/deliveries", nil, webtest.Alice); resp.StatusCode != http.StatusOK {
		t.Errorf("deliveries: %d, want 200", resp.StatusCode)
	}
}
