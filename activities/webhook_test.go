package activities_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/internal/testing/storetest"
	"github.com/longhaul-dev/longhaul/internal/usercreds"
	"go.temporal.io/sdk/temporal"
)

// testSecret is a webhook secret as the API makes them: whsec_ and 32
// bytes in base64.
var testSecret = "whsec_" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))

// webhookFixture is a worker's activities over a webhook store, and one
// webhook of alice's at url.
func webhookFixture(t *testing.T, url string, private bool) (*activities.Activities, store.Webhooks) {
	t.Helper()
	s := storetest.SQLiteStore(t)
	ws := s.(store.Webhooks)
	if _, err := ws.CreateWebhook(t.Context(), store.Webhook{ID: "wh_1", Owner: "alice", URL: url, Events: contract.WebhookEventTypes, Secret: testSecret}, 0); err != nil {
		t.Fatal(err)
	}
	acts := activities.New(activities.LLMConfig{BaseURL: "http://127.0.0.1:1/v1", Model: "m"}, nil, nil, slog.New(slog.DiscardHandler))
	acts.Webhooks, acts.WebhookPrivate = ws, private
	return acts, ws
}

var testEvent = contract.WebhookEvent{ID: "evt_1", Object: "event", Type: contract.WebhookRunCompleted, CreatedAt: 1767225600,
	Data: contract.WebhookEventData{ID: "run-1", Object: "run", Status: "completed", Agent: "assistant"}}

// deliver runs DeliverWebhook once, as Temporal would.
func deliver(t *testing.T, acts *activities.Activities, webhook string) (contract.WebhookResult, error) {
	t.Helper()
	env := quietSuite().NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	v, err := env.ExecuteActivity(acts.DeliverWebhook, contract.WebhookInput{Webhook: webhook, Event: testEvent})
	var res contract.WebhookResult
	if err == nil {
		err = v.Get(&res)
	}
	return res, err
}

// TestDeliverWebhookSigns checks a delivery against the Standard Webhooks
// scheme, computed here independently of SignWebhook: the three headers,
// the signed "id.timestamp.body", and the event's body.
func TestDeliverWebhookSigns(t *testing.T) {
	got := make(chan *http.Request, 1)
	bodies := make(chan []byte, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- r
		bodies <- b
	}))
	defer srv.Close()
	acts, ws := webhookFixture(t, srv.URL+"/hook", true)
	res, err := deliver(t, acts, "wh_1")
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("DeliverWebhook = %+v, %v; want 200", res, err)
	}
	r, body := <-got, <-bodies
	if r.Header.Get("webhook-id") != testEvent.ID {
		t.Errorf("webhook-id = %q, want the event's id %q", r.Header.Get("webhook-id"), testEvent.ID)
	}
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(testSecret, "whsec_"))
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(r.Header.Get("webhook-id") + "." + r.Header.Get("webhook-timestamp") + "." + string(body)))
	if want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)); r.Header.Get("webhook-signature") != want {
		t.Errorf("webhook-signature = %q, want %q", r.Header.Get("webhook-signature"), want)
	}
	var ev map[string]any
	if err := json.Unmarshal(body, &ev); err != nil || ev["object"] != "event" || ev["type"] != "run.completed" || ev["id"] != "evt_1" {
		t.Errorf("body = %s (%v), want the event", body, err)
	}
	if data, _ := ev["data"].(map[string]any); data["id"] != "run-1" || data["status"] != "completed" {
		t.Errorf("data = %v, want the run's id and status", ev["data"])
	}
	if strings.Contains(string(body), testSecret) {
		t.Error("the body holds the secret")
	}
	ds, err := ws.ListDeliveries(t.Context(), "wh_1", 10)
	if err != nil || len(ds) != 1 || ds[0].StatusCode != 200 || ds[0].EventID != "evt_1" || ds[0].Attempt != 1 {
		t.Errorf("recorded deliveries = %+v, %v; want attempt 1 of evt_1, 200", ds, err)
	}
}

// TestDeliverWebhookOutcomes classifies answers: 2xx delivers; 408, 429
// and 5xx are retried; another 4xx is not, nor is a destination the SSRF
// guard refuses or a deleted webhook.
func TestDeliverWebhookOutcomes(t *testing.T) {
	for _, tc := range []struct {
		status    int
		retryable bool
	}{{204, false}, {503, true}, {500, true}, {429, true}, {408, true}, {400, false}, {404, false}, {410, false}} {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				io.WriteString(w, strings.Repeat("why ", 5000))
			}))
			defer srv.Close()
			acts, ws := webhookFixture(t, srv.URL, true)
			_, err := deliver(t, acts, "wh_1")
			if tc.status/100 == 2 {
				if err != nil {
					t.Fatalf("DeliverWebhook: %v, want a delivery", err)
				}
				return
			}
			checkRetryable(t, err, tc.retryable)
			if tc.status == http.StatusGone {
				return // disabled, with its deliveries (TestWebhookRedirectGoneAndPrivateBody)
			}
			ds, _ := ws.ListDeliveries(t.Context(), "wh_1", 10)
			if len(ds) != 1 || ds[0].StatusCode != tc.status || len(ds[0].Error) > 300 {
				t.Errorf("recorded = %+v, want the status and a short error", ds)
			}
		})
	}
	t.Run("loopback without LONGHAUL_WEBHOOK_PRIVATE", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { t.Error("the guard let a delivery reach loopback") }))
		defer srv.Close()
		acts, ws := webhookFixture(t, srv.URL, false)
		_, err := deliver(t, acts, "wh_1")
		checkRetryable(t, err, false)
		if ds, _ := ws.ListDeliveries(t.Context(), "wh_1", 10); len(ds) != 1 || !strings.Contains(ds[0].Error, "safehttp") {
			t.Errorf("recorded = %+v, want the refusal", ds)
		}
	})
	t.Run("deleted webhook", func(t *testing.T) {
		acts, _ := webhookFixture(t, "https://example.com/", true)
		_, err := deliver(t, acts, "wh_gone")
		checkRetryable(t, err, false)
		var ae *temporal.ApplicationError
		if !errors.As(err, &ae) || ae.Type() != longhaul.ErrTypeWebhookGone {
			t.Errorf("err = %v, want %s", err, longhaul.ErrTypeWebhookGone)
		}
	})
}

func checkRetryable(t *testing.T, err error, retryable bool) {
	t.Helper()
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) {
		if err == nil || !retryable {
			t.Fatalf("err = %v, want an application error (retryable %v)", err, retryable)
		}
		return
	}
	if ae.NonRetryable() == retryable {
		t.Errorf("err = %v: non-retryable %v, want retryable %v", err, ae.NonRetryable(), retryable)
	}
}

// TestWebhookTargets: the owner's subscriptions to the type, then the
// run's own webhooks: the one it started with and one added while it ran,
// read by the calling workflow's id; a deleted one is left out.
func TestWebhookTargets(t *testing.T) {
	acts, ws := webhookFixture(t, "https://example.com/", true)
	const run = "default-test-workflow-id" // the test environment's workflow
	for _, w := range []store.Webhook{
		{ID: "wh_2", Owner: "alice", URL: "https://example.com/", Events: []string{"run.failed"}, Secret: testSecret},
		{ID: "wh_run", Owner: "alice", URL: "https://example.com/run", Events: contract.WebhookEventTypes, Secret: testSecret, Run: run},
		{ID: "wh_later", Owner: "alice", URL: "https://example.com/later", Events: contract.WebhookEventTypes, Secret: testSecret, Run: run},
		{ID: "wh_other", Owner: "alice", URL: "https://example.com/other", Events: contract.WebhookEventTypes, Secret: testSecret, Run: "run-other"},
	} {
		if _, err := ws.CreateWebhook(t.Context(), w, 0); err != nil {
			t.Fatal(err)
		}
	}
	targets := func(req contract.WebhookTargetsRequest) string {
		t.Helper()
		env := quietSuite().NewTestActivityEnvironment()
		env.RegisterActivity(acts)
		v, err := env.ExecuteLocalActivity(acts.WebhookTargets, req)
		var got []string
		if err == nil {
			err = v.Get(&got)
		}
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(got, ",")
	}
	if got := targets(contract.WebhookTargetsRequest{Owner: "alice", Type: "run.completed", Run: "wh_run"}); got != "wh_1,wh_run,wh_later" {
		t.Errorf("WebhookTargets = %s; want wh_1, wh_run, wh_later", got)
	}
	if got := targets(contract.WebhookTargetsRequest{Owner: "bob", Type: "run.completed"}); got != "" {
		t.Errorf("bob's targets = %v, want none", got)
	}
	// A first webhook that names another run (a fork's copy) still counts.
	if got := targets(contract.WebhookTargetsRequest{Owner: "alice", Type: "run.failed", Run: "wh_other"}); got != "wh_1,wh_2,wh_other,wh_run,wh_later" {
		t.Errorf("targets with another run's webhook = %s", got)
	}
	for _, id := range []string{"wh_run", "wh_other"} {
		if ok, err := ws.DeleteWebhook(t.Context(), "alice", id); err != nil || !ok {
			t.Fatal(ok, err)
		}
	}
	if got := targets(contract.WebhookTargetsRequest{Owner: "alice", Type: "run.completed", Run: "wh_run"}); got != "wh_1,wh_later" {
		t.Errorf("after deleting the first = %s; want wh_1, wh_later", got)
	}
}

// TestWebhookRedirectGoneAndPrivateBody: a receiver that redirects is not
// followed nor retried all day; one that answers 410 is disabled (no
// event goes there again); with private hosts reachable
// (LONGHAUL_WEBHOOK_PRIVATE) an internal host's error body is not shown
// to the webhook's owner through its deliveries.
func TestWebhookRedirectGoneAndPrivateBody(t *testing.T) {
	t.Run("redirect", func(t *testing.T) {
		target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { t.Error("the redirect was followed") }))
		defer target.Close()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target.URL, http.StatusFound)
		}))
		defer srv.Close()
		acts, ws := webhookFixture(t, srv.URL, true)
		_, err := deliver(t, acts, "wh_1")
		checkRetryable(t, err, false)
		if ds, _ := ws.ListDeliveries(t.Context(), "wh_1", 10); len(ds) != 1 || !strings.Contains(ds[0].Error, "redirect") {
			t.Errorf("recorded = %+v, want the redirect refused", ds)
		}
	})
	t.Run("gone", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusGone) }))
		defer srv.Close()
		acts, ws := webhookFixture(t, srv.URL, true)
		_, err := deliver(t, acts, "wh_1")
		checkRetryable(t, err, false)
		if _, err := ws.GetWebhook(t.Context(), "wh_1"); !errors.Is(err, store.ErrNoWebhook) {
			t.Errorf("after a 410 the webhook is %v, want it disabled", err)
		}
	})
	t.Run("private body", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, "admin console of db-7.internal: token=abc")
		}))
		defer srv.Close()
		acts, ws := webhookFixture(t, srv.URL, true)
		_, _ = deliver(t, acts, "wh_1")
		if ds, _ := ws.ListDeliveries(t.Context(), "wh_1", 10); len(ds) != 1 || ds[0].Error != "HTTP 404" {
			t.Errorf("recorded = %+v, want the status only", ds)
		}
	})
}

// TestSealedWebhookURLStillDelivers: with webhook URLs sealed at rest
// (LONGHAUL_TOKEN_KEY), so that the database's rows do not give away a
// URL that is a bearer secret, a delivery still reaches the URL the owner
// gave, and a webhook stored plain before URLs were sealed still delivers.
func TestSealedWebhookURLStillDelivers(t *testing.T) {
	paths := make(chan string, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { paths <- r.URL.Path }))
	defer srv.Close()
	acts, raw := webhookFixture(t, srv.URL+"/old-plain-hook", true) // wh_1: stored plain, as before
	box, err := usercreds.NewBox(strings.Repeat("ab", usercreds.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	sealed := usercreds.SealedWebhooks{Webhooks: raw, Box: box}
	acts.Webhooks = sealed
	const token = "/services/T0123/B0456/q8Zx2LmN4pRtV6wY"
	if _, err := sealed.CreateWebhook(t.Context(), store.Webhook{ID: "wh_sealed", Owner: "alice", URL: srv.URL + token, Events: contract.WebhookEventTypes, Secret: testSecret}, 0); err != nil {
		t.Fatal(err)
	}
	if row, err := raw.GetWebhook(t.Context(), "wh_sealed"); err != nil || strings.Contains(row.URL, "q8Zx2LmN4pRtV6wY") || strings.Contains(row.URL, "127.0.0.1") {
		t.Fatalf("the row keeps the URL as %q (%v), want it sealed", row.URL, err)
	}
	for id, want := range map[string]string{"wh_sealed": token, "wh_1": "/old-plain-hook"} {
		if res, err := deliver(t, acts, id); err != nil || res.StatusCode != 200 {
			t.Fatalf("DeliverWebhook(%s) = %+v, %v; want 200", id, res, err)
		}
		if got := <-paths; got != want {
			t.Errorf("%s was delivered to %q, want %q", id, got, want)
		}
	}
}
