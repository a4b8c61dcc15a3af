package usercreds

import (
	"errors"
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
