package usercreds

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/internal/testing/storetest"
)

// TestSealedWebhooks: a webhook's secret reaches the store's database
// sealed, opens by the webhook's id with the key, reads as it was for a
// webhook stored plain before the key was set, and does not open with
// another key or in another webhook's row.
func TestSealedWebhooks(t *testing.T) {
	st := storetest.SQLiteStore(t)
	raw := st.(store.Webhooks)
	box, _ := NewBox(strings.Repeat("ab", KeySize))
	sealed := SealedWebhooks{Webhooks: raw, Box: box}
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	ctx := t.Context()

	created, err := sealed.CreateWebhook(ctx, store.Webhook{ID: "wh_1", Owner: "ann", URL: "https://example.com/hook", Secret: secret}, 0)
	if err != nil || created.Secret != secret {
		t.Fatalf("create = %+v, %v; want the plain secret back", created, err)
	}
	kept, err := raw.GetWebhook(ctx, "wh_1")
	if err != nil || !strings.HasPrefix(kept.Secret, SealedSecretPrefix) || strings.Contains(kept.Secret, strings.TrimPrefix(secret, "whsec_")) {
		t.Fatalf("the store keeps %q, %v; want it sealed", kept.Secret, err)
	}
	if got, err := sealed.GetWebhook(ctx, "wh_1"); err != nil || got.Secret != secret {
		t.Fatalf("get = %q, %v; want the secret opened", got.Secret, err)
	}

	// Stored before the key was set: read as it was.
	if _, err := raw.CreateWebhook(ctx, store.Webhook{ID: "wh_plain", Owner: "ann", URL: "https://example.com/hook", Secret: secret}, 0); err != nil {
		t.Fatal(err)
	}
	if got, err := sealed.GetWebhook(ctx, "wh_plain"); err != nil || got.Secret != secret {
		t.Errorf("a plain secret reads %q, %v", got.Secret, err)
	}

	// Another key, or the sealed value in another webhook's row: no secret.
	other, _ := NewBox(strings.Repeat("cd", KeySize))
	if _, err := (SealedWebhooks{Webhooks: raw, Box: other}).GetWebhook(ctx, "wh_1"); !errors.Is(err, ErrSealed) {
		t.Errorf("another key: %v, want ErrSealed", err)
	}
	if _, err := raw.CreateWebhook(ctx, store.Webhook{ID: "wh_2", Owner: "bob", URL: "https://example.com/hook", Secret: kept.Secret}, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := sealed.GetWebhook(ctx, "wh_2"); !errors.Is(err, ErrSealed) {
		t.Errorf("a sealed secret moved to bob's row: %v, want ErrSealed", err)
	}
}

// TestWebhookURLUnreadableAtRest: whoever reads the store's database (a
// backup, a dump, the SQLite file) does not learn a webhook's URL, which
// is often a bearer secret (a chat service's incoming webhook carries its
// token in the path): the row holds it sealed, the SQLite file holds no
// byte of it, and the owner's list and the delivery's read open it. A URL
// stored plain before URLs were sealed reads as it was; a sealed URL
// copied to another row does not open there.
func TestWebhookURLUnreadableAtRest(t *testing.T) {
	storetest.Each(t, func(t *testing.T, u string) {
		ctx := t.Context()
		openStore := func() store.Store {
			st, err := store.Open(ctx, u)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			return st
		}
		st := openStore()
		raw := st.(store.Webhooks)
		box, _ := NewBox(strings.Repeat("ab", KeySize))
		sealed := SealedWebhooks{Webhooks: raw, Box: box}
		const token = "T0123ABCD/B0456EFGH/q8Zx2LmN4pRtV6wY"
		hookURL := "https://hooks.chat.example/services/" + token

		created, err := sealed.CreateWebhook(ctx, store.Webhook{ID: "wh_1", Owner: "ann", URL: hookURL, Events: []string{"run.completed"}, Secret: "whsec_MfKQ9r8G"}, 0)
		if err != nil || created.URL != hookURL {
			t.Fatalf("create = %+v, %v; want the plain URL back", created, err)
		}
		// The raw row, as the database holds it.
		row, err := raw.GetWebhook(ctx, "wh_1")
		if err != nil || !strings.HasPrefix(row.URL, SealedSecretPrefix) || strings.Contains(row.URL, "hooks.chat.example") || strings.Contains(row.URL, "q8Zx2LmN4pRtV6wY") {
			t.Fatalf("the row keeps the URL as %q (%v), want it sealed", row.URL, err)
		}
		if strings.HasPrefix(u, "sqlite://") {
			// Every file of the database (WAL included) after a checkpoint.
			_ = st.Close()
			dir := filepath.Dir(strings.TrimPrefix(u, "sqlite://"))
			files, _ := filepath.Glob(filepath.Join(dir, "*"))
			var all []byte
			for _, f := range files {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				if bytes.Contains(b, []byte("q8Zx2LmN4pRtV6wY")) || bytes.Contains(b, []byte("hooks.chat.example")) {
					t.Fatalf("%s holds the webhook's URL", filepath.Base(f))
				}
				all = append(all, b...)
			}
			if !bytes.Contains(all, []byte("run.completed")) {
				t.Fatalf("the files of %s do not hold the row at all (its events): the scan reads nothing", dir)
			}
			raw = openStore().(store.Webhooks)
			sealed.Webhooks = raw
		}

		// The delivery's read and the owner's list open it.
		if got, err := sealed.GetWebhook(ctx, "wh_1"); err != nil || got.URL != hookURL || got.Secret != "whsec_MfKQ9r8G" {
			t.Fatalf("get = %+v, %v; want the URL and secret opened", got, err)
		}
		// A row stored before URLs were sealed reads as it was.
		if _, err := raw.CreateWebhook(ctx, store.Webhook{ID: "wh_old", Owner: "ann", URL: "https://old.example/hook", Events: []string{"run.failed"}, Secret: "whsec_old"}, 0); err != nil {
			t.Fatal(err)
		}
		if got, err := sealed.GetWebhook(ctx, "wh_old"); err != nil || got.URL != "https://old.example/hook" || got.Secret != "whsec_old" {
			t.Errorf("an old plain row reads %+v, %v", got, err)
		}
		list, err := sealed.ListWebhooks(ctx, "ann")
		if err != nil || len(list) != 2 || list[0].URL != hookURL || list[1].URL != "https://old.example/hook" || list[0].Secret != "" {
			t.Fatalf("list = %+v, %v; want both URLs plain, no secrets", list, err)
		}

		// The sealed URL copied to bob's row, or read with another key:
		// nothing opens.
		if _, err := raw.CreateWebhook(ctx, store.Webhook{ID: "wh_2", Owner: "bob", URL: row.URL, Secret: "whsec_b"}, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := sealed.GetWebhook(ctx, "wh_2"); !errors.Is(err, ErrSealed) {
			t.Errorf("a sealed URL moved to bob's row: %v, want ErrSealed", err)
		}
		if _, err := sealed.ListWebhooks(ctx, "bob"); !errors.Is(err, ErrSealed) {
			t.Errorf("bob's list with a moved URL: %v, want ErrSealed", err)
		}
		other, _ := NewBox(strings.Repeat("cd", KeySize))
		if _, err := (SealedWebhooks{Webhooks: raw, Box: other}).GetWebhook(ctx, "wh_1"); !errors.Is(err, ErrSealed) {
			t.Errorf("another key: %v, want ErrSealed", err)
		}
	})
}
