package responsesapi_test

import (
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul/api/responsesapi"
	"github.com/longhaul-dev/longhaul/api/runweb"
	"github.com/longhaul-dev/longhaul/api/sse"
	"github.com/longhaul-dev/longhaul/api/webhooksapi"
	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/internal/testing/runsfake"
	"github.com/longhaul-dev/longhaul/internal/testing/storetest"
	"github.com/longhaul-dev/longhaul/internal/testing/webtest"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// TestBackgroundWebhook: a background response's run names its events
// after OpenAI's, with the response's id, whether or not the request
// names a webhook of its own; one that does gets its secret in the
// answer; a webhook on a response not in the background is a 400.
func TestBackgroundWebhook(t *testing.T) {
	s := storetest.SQLiteStore(t)
	fake := runsfake.New()
	rw, gate := webtest.RunsOver(fake)
	h := &responsesapi.Handlers{
		Runs: rw, Gate: gate, Agents: &runweb.Agents{Catalog: webtest.Catalog(t)}, Streams: &sse.Streams{},
		VectorStores: anyStores{}, Ranking: func(string) error { return nil },
		Webhooks: &webhooksapi.Handlers{Store: s.(store.Webhooks)},
	}
	app := webtest.App(t, func(_, v1 fiber.Router) { v1.Post("/responses", h.Create) })

	webtest.WantError(t, webtest.Do(t, app, "POST", "/v1/responses",
		map[string]any{"model": "assistant", "input": "hi", "webhook": "https://hooks.example.com/"}, webtest.Alice), 400, "background")

	for _, url := range []string{"https://hooks.example.com/resp", ""} {
		body := map[string]any{"model": "assistant", "input": "hi", "background": true}
		if url != "" {
			body["webhook"] = url
		}
		resp := webtest.Decode[wire.Response](t, webtest.Do(t, app, "POST", "/v1/responses", body, webtest.Alice))
		run, _, ok := wire.ParseResponseID(resp.ID)
		if !ok {
			t.Fatalf("response id %q", resp.ID)
		}
		in, _, err := fake.FirstInput(t.Context(), run)
		if err != nil {
			t.Fatal(err)
		}
		if in.Webhook == nil || in.Webhook.Response != resp.ID {
			t.Errorf("input's webhook = %+v, want the response id %s", in.Webhook, resp.ID)
		}
		switch {
		case url == "" && (resp.Webhook != nil || in.Webhook.ID != ""):
			t.Errorf("no webhook asked, got %+v and %+v", resp.Webhook, in.Webhook)
		case url != "" && (resp.Webhook == nil || !strings.HasPrefix(resp.Webhook.Secret, "whsec_") || in.Webhook.ID != resp.Webhook.ID):
			t.Errorf("webhook = %+v, input's %+v; want its id and secret", resp.Webhook, in.Webhook)
		}
	}
}
