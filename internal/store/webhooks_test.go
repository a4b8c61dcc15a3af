package store_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul/internal/store"
)

// TestWebhooks is the webhook store's conformance suite: the same cases on
// SQLite and on PostgreSQL.
func TestWebhooks(t *testing.T) { conformance(t, webhookCases) }

var webhookCases = []conformanceCase{
	{"webhooks per owner", testWebhooksPerOwner},
	{"webhook cap under concurrent creates", testWebhookCap},
	{"deliveries", testWebhookDeliveries},
	{"deliveries of a receiver that fails all day are bounded", testWebhookDeliveriesBounded},
	{"old deliveries and runs' own webhooks are found for retention", testWebhookRetention},
}

// testWebhookRetention: deliveries and runs' own webhooks would otherwise
// grow without end; the retention job finds the runs' webhooks older than
// its cutoff (subscriptions never) and deletes the deliveries older than
// it, of every webhook, keeping the newer ones.
func testWebhookRetention(t *testing.T, u string) {
	old := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	recent := old.Add(48 * time.Hour)
	cutoff := old.Add(24 * time.Hour)
	ctx := t.Context()
	at := func(now time.Time) store.Webhooks {
		return kept[store.Webhooks](t, open(t, u, store.WithClock(func() time.Time { return now })))
	}
	oldWs, newWs := at(old), at(recent)
	for _, c := range []struct {
		ws store.Webhooks
		w  store.Webhook
	}{
		{oldWs, store.Webhook{ID: "wh_sub", Owner: "alice", URL: "https://a.example/", Secret: "whsec_1"}},
		{oldWs, store.Webhook{ID: "wh_run_old", Owner: "alice", URL: "https://a.example/", Secret: "whsec_2", Run: "run-1"}},
		{newWs, store.Webhook{ID: "wh_run_new", Owner: "bob", URL: "https://b.example/", Secret: "whsec_3", Run: "run-2"}},
	} {
		if _, err := c.ws.CreateWebhook(ctx, c.w, 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, ws := range []store.Webhooks{oldWs, newWs} {
		for _, id := range []string{"wh_sub", "wh_run_old", "wh_run_new"} {
			if err := ws.AddDelivery(ctx, store.Delivery{Webhook: id, EventID: "evt_1", EventType: "run.completed", Attempt: 1, StatusCode: 503}); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, err := newWs.RunWebhooksBefore(ctx, cutoff)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Webhook{{ID: "wh_run_old", Owner: "alice", URL: "https://a.example/", Events: []string{}, Run: "run-1", CreatedAt: old}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("RunWebhooksBefore (-want +got):\n%s", diff)
	}
	n, err := newWs.DeleteDeliveriesBefore(ctx, cutoff)
	if err != nil || n != 3 {
		t.Errorf("DeleteDeliveriesBefore = %d, %v; want 3 deleted", n, err)
	}
	for _, id := range []string{"wh_sub", "wh_run_old", "wh_run_new"} {
		ds, err := newWs.ListDeliveries(ctx, id, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) != 1 || !ds[0].At.Equal(recent) {
			t.Errorf("deliveries of %s after retention = %+v, want the recent one only", id, ds)
		}
	}
}

// testWebhookDeliveriesBounded: a receiver that fails every attempt adds a
// row per attempt; the webhook keeps its latest store.MaxDeliveries.
func testWebhookDeliveriesBounded(t *testing.T, u string) {
	ws := kept[store.Webhooks](t, open(t, u))
	ctx := t.Context()
	if _, err := ws.CreateWebhook(ctx, store.Webhook{ID: "wh_1", Owner: "alice", URL: "https://a.example/", Events: []string{"run.completed"}, Secret: "whsec_1"}, 0); err != nil {
		t.Fatal(err)
	}
	n := store.MaxDeliveries + 20
	for i := range n {
		if err := ws.AddDelivery(ctx, store.Delivery{Webhook: "wh_1", EventID: "evt_1", EventType: "run.completed", Attempt: i + 1, StatusCode: 503}); err != nil {
			t.Fatal(err)
		}
	}
	ds, err := ws.ListDeliveries(ctx, "wh_1", 10*n)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != store.MaxDeliveries || ds[0].Attempt != n || ds[len(ds)-1].Attempt != n-store.MaxDeliveries+1 {
		t.Errorf("kept %d deliveries (newest %d), want the latest %d", len(ds), ds[0].Attempt, store.MaxDeliveries)
	}
}

func testWebhooksPerOwner(t *testing.T, u string) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := now
	ws := kept[store.Webhooks](t, open(t, u, store.WithClock(func() time.Time { clock = clock.Add(time.Second); return clock })))
	ctx := t.Context()
	create := func(w store.Webhook) store.Webhook {
		t.Helper()
		got, err := ws.CreateWebhook(ctx, w, 0)
		if err != nil {
			t.Fatalf("CreateWebhook: %v", err)
		}
		return got
	}
	a1 := create(store.Webhook{ID: "wh_a1", Owner: "alice", URL: "https://a.example/1", Events: []string{"run.completed", "run.failed"}, Secret: "whsec_a1"})
	create(store.Webhook{ID: "wh_a2", Owner: "alice", URL: "https://a.example/2", Events: []string{"run.waiting"}, Secret: "whsec_a2"})
	create(store.Webhook{ID: "wh_b1", Owner: "bob", URL: "https://b.example/", Events: []string{"run.completed"}, Secret: "whsec_b1"})
	// A run's own webhook: not a subscription.
	create(store.Webhook{ID: "wh_r1", Owner: "alice", URL: "https://a.example/run", Events: []string{"run.completed"}, Secret: "whsec_r1", Run: "run-1"})

	got, err := ws.GetWebhook(ctx, "wh_a1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a1, got); diff != "" {
		t.Errorf("GetWebhook mismatch (-created +got):\n%s", diff)
	}
	if _, err := ws.GetWebhook(ctx, "wh_none"); !errors.Is(err, store.ErrNoWebhook) {
		t.Errorf("GetWebhook(unknown) = %v, want ErrNoWebhook", err)
	}
	list, err := ws.ListWebhooks(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, w := range list {
		ids = append(ids, w.ID)
		if w.Secret != "" {
			t.Errorf("ListWebhooks gave %s's secret", w.ID)
		}
	}
	if diff := cmp.Diff([]string{"wh_a1", "wh_a2"}, ids); diff != "" {
		t.Errorf("alice's subscriptions (-want +got):\n%s", diff)
	}
	match, err := ws.MatchWebhooks(ctx, "alice", "run.completed")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"wh_a1"}, match); diff != "" {
		t.Errorf("MatchWebhooks(alice, run.completed) (-want +got):\n%s", diff)
	}
	// A run's own webhooks are its owner's, found by the run.
	create(store.Webhook{ID: "wh_r2", Owner: "alice", URL: "https://a.example/later", Events: []string{"run.completed"}, Secret: "whsec_r2", Run: "run-1"})
	for _, c := range []struct {
		owner, run string
		want       []string
	}{{"alice", "run-1", []string{"wh_r1", "wh_r2"}}, {"bob", "run-1", nil}, {"alice", "", nil}} {
		rws, err := ws.RunWebhooks(ctx, c.owner, c.run)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, w := range rws {
			ids = append(ids, w.ID)
			if w.Secret != "" || w.Run != c.run || w.URL == "" {
				t.Errorf("RunWebhooks gave %+v: want its URL and run, no secret", w)
			}
		}
		if diff := cmp.Diff(c.want, ids); diff != "" {
			t.Errorf("RunWebhooks(%s, %q) (-want +got):\n%s", c.owner, c.run, diff)
		}
	}
	if ok, err := ws.DeleteWebhook(ctx, "alice", "wh_r2"); err != nil || !ok {
		t.Fatalf("DeleteWebhook(wh_r2) = %v, %v", ok, err)
	}
	if ok, err := ws.DeleteWebhook(ctx, "bob", "wh_a1"); err != nil || ok {
		t.Errorf("bob's DeleteWebhook(wh_a1) = %v, %v; want false: not his", ok, err)
	}
	if ok, err := ws.DeleteWebhook(ctx, "alice", "wh_a1"); err != nil || !ok {
		t.Errorf("DeleteWebhook(wh_a1) = %v, %v; want true", ok, err)
	}
	if _, err := ws.GetWebhook(ctx, "wh_a1"); !errors.Is(err, store.ErrNoWebhook) {
		t.Errorf("GetWebhook after delete = %v, want ErrNoWebhook", err)
	}
	// A user's deletion takes their subscriptions and runs' webhooks,
	// nobody else's.
	if n, err := ws.DeleteUserWebhooks(ctx, "alice"); err != nil || n != 2 {
		t.Errorf("DeleteUserWebhooks(alice) = %d, %v; want wh_a2 and wh_r1", n, err)
	}
	if _, err := ws.GetWebhook(ctx, "wh_r1"); !errors.Is(err, store.ErrNoWebhook) {
		t.Errorf("alice's run webhook after her deletion: %v, want ErrNoWebhook", err)
	}
	if _, err := ws.GetWebhook(ctx, "wh_b1"); err != nil {
		t.Errorf("bob's webhook after alice's deletion: %v", err)
	}
}

func testWebhookCap(t *testing.T, u string) {
	ws := kept[store.Webhooks](t, open(t, u))
	ctx := t.Context()
	const max, tries = 3, 8
	var wg sync.WaitGroup
	errs := make([]error, tries)
	for i := range tries {
		wg.Go(func() {
			_, errs[i] = ws.CreateWebhook(ctx, store.Webhook{
				ID: "wh_" + string(rune('a'+i)), Owner: "alice", URL: "https://a.example/", Events: []string{"run.completed"}, Secret: "whsec_x",
			}, max)
		})
	}
	wg.Wait()
	made := 0
	for _, err := range errs {
		switch {
		case err == nil:
			made++
		case !errors.Is(err, store.ErrWebhookLimit):
			t.Errorf("CreateWebhook: %v, want nil or ErrWebhookLimit", err)
		}
	}
	if made != max {
		t.Errorf("%d of %d concurrent creates succeeded, want the cap, %d", made, tries, max)
	}
	// A run's own webhook is not a subscription: the cap does not count it.
	if _, err := ws.CreateWebhook(ctx, store.Webhook{ID: "wh_run", Owner: "alice", URL: "https://a.example/", Secret: "whsec_x", Run: "run-1"}, max); err != nil {
		t.Errorf("a run's webhook over the cap: %v", err)
	}
}

func testWebhookDeliveries(t *testing.T, u string) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ws := kept[store.Webhooks](t, open(t, u, store.WithClock(func() time.Time { return now })))
	ctx := t.Context()
	if _, err := ws.CreateWebhook(ctx, store.Webhook{ID: "wh_1", Owner: "alice", URL: "https://a.example/", Secret: "whsec_x"}, 0); err != nil {
		t.Fatal(err)
	}
	for i, d := range []store.Delivery{
		{Webhook: "wh_1", EventID: "evt_1", EventType: "run.completed", Attempt: 1, Error: "connection refused"},
		{Webhook: "wh_1", EventID: "evt_1", EventType: "run.completed", Attempt: 2, StatusCode: 503},
		{Webhook: "wh_1", EventID: "evt_1", EventType: "run.completed", Attempt: 3, StatusCode: 200},
	} {
		if err := ws.AddDelivery(ctx, d); err != nil {
			t.Fatalf("AddDelivery %d: %v", i, err)
		}
	}
	got, err := ws.ListDeliveries(ctx, "wh_1", 2)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Delivery{
		{Webhook: "wh_1", EventID: "evt_1", EventType: "run.completed", Attempt: 3, StatusCode: 200, At: now},
		{Webhook: "wh_1", EventID: "evt_1", EventType: "run.completed", Attempt: 2, StatusCode: 503, At: now},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ListDeliveries (-want +got):\n%s", diff)
	}
	if ok, err := ws.DeleteWebhook(ctx, "alice", "wh_1"); err != nil || !ok {
		t.Fatalf("DeleteWebhook: %v, %v", ok, err)
	}
	if got, err := ws.ListDeliveries(ctx, "wh_1", 10); err != nil || len(got) != 0 {
		t.Errorf("deliveries of a deleted webhook: %v, %v; want none", got, err)
	}
}
