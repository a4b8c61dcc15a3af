//go:build unix

package webhooks

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/proctest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/internal/testing/webtest"
	"github.com/longhaul-dev/longhaul/internal/usercreds"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// delivery is a line receiver.js prints for each request it answers.
type delivery struct {
	Path      string `json:"path"`
	ID        string `json:"id"`
	Status    int    `json:"status"`
	Verified  bool   `json:"verified"`
	Error     string `json:"error"`
	Processed bool   `json:"processed"`
	Duplicate bool   `json:"duplicate"`
	Event     struct {
		ID     string `json:"id"`
		Object string `json:"object"`
		Type   string `json:"type"`
		Data   struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"data"`
	} `json:"event"`
	Listening int `json:"listening"`
}

// TestWebhookThroughReceiverRestart: a run with a webhook of its own, and
// a subscription of its principal, end; both events reach a receiver that
// is down at first (503), then restarted while the worker is killed and
// started again, and whose first answer to each event is lost (500 after
// processing): every delivery verifies with the
// Standard Webhooks library, every attempt of an event carries the same
// webhook-id, each event is processed exactly once, the deliveries
// routes list every attempt, and neither the run's history nor the
// deliveries' holds a secret. With LONGHAUL_TOKEN_KEY set, as here, the
// store keeps both secrets sealed, and the worker signs with them opened.
func TestWebhookThroughReceiverRestart(t *testing.T) {
	proctest.NeedNode(t, "test/webhooks", "standardwebhooks")
	env := testenv.Start(t, testenv.Options{WebhookPrivate: true, TokenKey: strings.Repeat("5a", usercreds.KeySize)})
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	sub := webtest.Decode[wire.Webhook](t, post(t, env.URL+"/v1/webhooks", map[string]any{"url": base + "/hook", "events": []string{"run.completed"}}, 201))
	env.Model.Enqueue(llmtest.Text("Done."))
	run := webtest.Decode[wire.RunCreated](t, post(t, env.URL+"/v1/runs", map[string]any{
		"agent": "assistant", "messages": []map[string]string{{"role": "user", "content": "Hi"}}, "webhook": base + "/run",
	}, 202))
	secrets := map[string]string{"/hook": sub.Secret, "/run": run.Webhook.Secret}
	for _, id := range []string{sub.ID, run.Webhook.ID} {
		if w, err := env.Blobs.(store.Webhooks).GetWebhook(t.Context(), id); err != nil || !strings.HasPrefix(w.Secret, usercreds.SealedSecretPrefix) {
			t.Fatalf("the store keeps webhook %s's secret as %.12q… (%v), want it sealed", id, w.Secret, err)
		}
	}
	seen := filepath.Join(t.TempDir(), "seen")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	var all []delivery
	down := startReceiver(t, port, secrets, seen, "down")
	all = append(all, down.until(ctx, t, func(ds []delivery) bool { return answered(ds, 503, "/hook", "/run") })...)
	down.stop(t)
	// The worker dies too, while the deliveries wait for their next
	// attempt; a new one carries them on.
	env.StopWorker()
	up := startReceiver(t, port, secrets, seen, "up")
	env.StartWorker()
	all = append(all, up.until(ctx, t, func(ds []delivery) bool { return answered(ds, 200, "/hook", "/run") })...)
	up.stop(t)

	ids := map[string]string{}
	processed := map[string]int{}
	for _, d := range all {
		if !d.Verified {
			t.Fatalf("a delivery did not verify: %+v", d)
		}
		if prev, ok := ids[d.Path]; ok && prev != d.ID {
			t.Errorf("%s got webhook-ids %s and %s, want one event's", d.Path, prev, d.ID)
		}
		ids[d.Path] = d.ID
		if d.Processed {
			processed[d.ID]++
		}
		if d.Event.ID != d.ID || d.Event.Object != "event" || d.Event.Type != "run.completed" || d.Event.Data.ID != run.ID || d.Event.Data.Status != "completed" {
			t.Errorf("%s got %+v, want run.completed of %s under its webhook-id", d.Path, d.Event, run.ID)
		}
	}
	if ids["/hook"] == ids["/run"] || processed[ids["/hook"]] != 1 || processed[ids["/run"]] != 1 {
		t.Errorf("processed %v of ids %v, want each of two events exactly once", processed, ids)
	}
	// The receiver has answered 200, but the attempt is recorded after the
	// answer reaches the worker: the delivery's workflow ends only once it
	// has been.
	for webhook, event := range map[string]string{sub.ID: ids["/hook"], run.Webhook.ID: ids["/run"]} {
		if err := env.Client.GetWorkflow(ctx, contract.WebhookWorkflowID(event, webhook), "").Get(ctx, nil); err != nil {
			t.Fatalf("delivery of %s to %s: %v", event, webhook, err)
		}
		checkDeliveries(t, env.URL, webhook, event)
	}
	for _, id := range []string{run.ID, contract.WebhookWorkflowID(ids["/hook"], sub.ID), contract.WebhookWorkflowID(ids["/run"], run.Webhook.ID)} {
		noSecret(ctx, t, env, id, sub.Secret, run.Webhook.Secret)
	}
}

// noSecret fails t when the history of workflow id holds a secret.
func noSecret(ctx context.Context, t *testing.T, env *testenv.Env, id string, secrets ...string) {
	t.Helper()
	it := env.Client.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	n := 0
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatalf("history of %s: %v", id, err)
		}
		n++
		for _, s := range secrets {
			if strings.Contains(e.String(), strings.TrimPrefix(s, "whsec_")) {
				t.Errorf("event %d of %s holds a webhook secret", e.GetEventId(), id)
			}
		}
	}
	if n == 0 {
		t.Errorf("no history of %s", id)
	}
}

// checkDeliveries: GET /v1/webhooks/{id}/deliveries lists every attempt
// of the one event, numbered, newest first, the last a 200.
func checkDeliveries(t *testing.T, api, webhook, event string) {
	t.Helper()
	resp, err := http.Get(api + "/v1/webhooks/" + webhook + "/deliveries")
	if err != nil {
		t.Fatal(err)
	}
	list := webtest.Decode[wire.WebhookDeliveryList](t, resp)
	resp.Body.Close()
	if len(list.Data) < 3 || list.Data[0].StatusCode == nil || *list.Data[0].StatusCode != 200 {
		t.Fatalf("deliveries of %s = %+v, want at least a 503, a 500 and the last a 200", webhook, list)
	}
	for i, d := range list.Data {
		if d.EventID != event || d.Type != "run.completed" || d.Attempt != len(list.Data)-i {
			t.Errorf("delivery %d of %s = %+v, want attempt %d of %s", i, webhook, d, len(list.Data)-i, event)
		}
	}
}

// answered reports whether each of paths got an answer of status.
func answered(ds []delivery, status int, paths ...string) bool {
	for _, p := range paths {
		found := false
		for _, d := range ds {
			found = found || d.Path == p && d.Status == status
		}
		if !found {
			return false
		}
	}
	return true
}

func post(t *testing.T, url string, body any, status int) *http.Response {
	t.Helper()
	resp, err := http.DefaultClient.Do(webtest.NewRequest("POST", url, body, nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != status {
		t.Fatalf("POST %s = %d, want %d", url, resp.StatusCode, status)
	}
	return resp
}
