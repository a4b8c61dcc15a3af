package runsapi_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul/api/runsapi"
	"github.com/longhaul-dev/longhaul/api/sse"
	"github.com/longhaul-dev/longhaul/api/webhooksapi"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/internal/testing/runsfake"
	"github.com/longhaul-dev/longhaul/internal/testing/storetest"
	"github.com/longhaul-dev/longhaul/internal/testing/webtest"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// TestRunWebhook: a run started with a webhook answers with the webhook's
// id and secret, once; the run's input carries the id only, never the
// secret; a URL the SSRF guard refuses, or a server without webhooks,
// starts no run.
func TestRunWebhook(t *testing.T) {
	s := storetest.SQLiteStore(t)
	for _, tc := range []struct {
		name     string
		hooks    bool
		url      string
		status   int
		errorMsg string
	}{
		{name: "a webhook", hooks: true, url: "https://hooks.example.com/run", status: 202},
		{name: "a loopback webhook", hooks: true, url: "http://127.0.0.1:9/run", status: 400, errorMsg: "LONGHAUL_WEBHOOK_PRIVATE"},
		{name: "no webhooks here", url: "https://hooks.example.com/run", status: 400, errorMsg: "keeps no webhooks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := runsfake.New()
			rw, gate := webtest.RunsOver(fake)
			h := &runsapi.Handlers{Runs: rw, Gate: gate, Streams: &sse.Streams{}}
			if tc.hooks {
				h.Webhooks = &webhooksapi.Handlers{Store: s.(store.Webhooks)}
			}
			app := webtest.App(t, func(_, v1 fiber.Router) { v1.Post("/runs", h.CreateRun) })
			body := map[string]any{"agent": "assistant", "messages": []map[string]string{{"role": "user", "content": "hi"}}, "webhook": tc.url}
			resp := webtest.Do(t, app, "POST", "/v1/runs", body, webtest.Alice)
			if tc.status != 202 {
				webtest.WantError(t, resp, tc.status, tc.errorMsg)
				if n, _ := fake.Count(t.Context(), runs.Filter{Owner: "alice"}); n != 0 {
					t.Errorf("%d runs started, want none", n)
				}
				return
			}
			created := webtest.Decode[wire.RunCreated](t, resp)
			if n, _ := fake.Count(t.Context(), runs.Filter{Owner: "alice"}); n != 1 {
				t.Errorf("%d runs of alice's started, want 1", n)
			}
			if created.Webhook == nil || !strings.HasPrefix(created.Webhook.ID, "wh_") || !strings.HasPrefix(created.Webhook.Secret, "whsec_") || created.Webhook.URL != tc.url {
				t.Fatalf("created = %+v, want the run's webhook with its secret", created)
			}
			in, _, err := fake.FirstInput(t.Context(), created.ID)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := json.Marshal(in)
			if in.Webhook == nil || in.Webhook.ID != created.Webhook.ID || strings.Contains(string(raw), "whsec_") {
				t.Errorf("the run's input = %s, want the webhook's id and no secret", raw)
			}
			w, err := s.(store.Webhooks).GetWebhook(t.Context(), created.Webhook.ID)
			if err != nil || w.Run != created.ID || w.Secret != created.Webhook.Secret || w.Owner != webtest.Principal(t, webtest.Alice).User.Key() {
				t.Errorf("stored = %+v, %v; want alice's webhook of run %s", w, err, created.ID)
			}
		})
	}
}

// TestRefusedRunDropsWebhook: a start refused (the principal is at its
// limit of runs) leaves no webhook behind.
func TestRefusedRunDropsWebhook(t *testing.T) {
	s := storetest.SQLiteStore(t)
	ws := s.(store.Webhooks)
	fake := runsfake.New()
	rw, gate := webtest.RunsOver(fake, runs.Limits{Runs: 1})
	h := &runsapi.Handlers{Runs: rw, Gate: gate, Streams: &sse.Streams{}, Webhooks: &webhooksapi.Handlers{Store: ws}}
	app := webtest.App(t, func(_, v1 fiber.Router) { v1.Post("/runs", h.CreateRun) })
	body := map[string]any{"agent": "assistant", "input": "hi", "webhook": "https://hooks.example.com/run"}
	if resp := webtest.Do(t, app, "POST", "/v1/runs", body, webtest.Alice); resp.StatusCode != 202 {
		t.Fatalf("first run: %d, want 202", resp.StatusCode)
	}
	webtest.WantError(t, webtest.Do(t, app, "POST", "/v1/runs", body, webtest.Alice), 429, "")
	if n, err := ws.DeleteUserWebhooks(t.Context(), webtest.Principal(t, webtest.Alice).User.Key()); err != nil || n != 1 {
		t.Errorf("alice keeps %d webhooks (%v), want the first run's alone", n, err)
	}
}
