package usercreds

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/longhaul-dev/longhaul/internal/store"
)

// SealedSecretPrefix starts a webhook secret sealed by SealedWebhooks, as
// the store keeps it; a plain one starts with whsec_.
const SealedSecretPrefix = "sealed:v1:"

// SealedWebhooks is a webhook store whose secrets are sealed with
// LONGHAUL_TOKEN_KEY, as users' credentials are: the store's database
// then holds no secret that signs a delivery. The API seals a secret as it
// creates the webhook; the worker's delivery activity opens it by the
// webhook's id, so the API and the workers need the same key. A secret
// stored plain (before the key was set) reads as it was stored.
type SealedWebhooks struct {
	store.Webhooks
	Box *Box
}

// webhookAAD binds a sealed secret to its webhook and owner, so a sealed
// value copied to another row does not open.
func webhookAAD(w store.Webhook) []byte {
	return []byte("webhook\x00" + w.ID + "\x00" + w.Owner)
}

// CreateWebhook stores w with its secret sealed, and returns it with the
// secret plain (shown once to its owner).
func (s SealedWebhooks) CreateWebhook(ctx context.Context, w store.Webhook, max int) (store.Webhook, error) {
	plain := w.Secret
	w.Secret = SealedSecretPrefix + base64.RawStdEncoding.EncodeToString(s.Box.Seal([]byte(plain), webhookAAD(w)))
	got, err := s.Webhooks.CreateWebhook(ctx, w, max)
	got.Secret = plain
	return got, err
}

// GetWebhook returns the webhook with its secret opened.
func (s SealedWebhooks) GetWebhook(ctx context.Context, id string) (store.Webhook, error) {
	w, err := s.Webhooks.GetWebhook(ctx, id)
	if err != nil || !strings.HasPrefix(w.Secret, SealedSecretPrefix) {
		return w, err
	}
	raw, err := base64.RawStdEncoding.DecodeString(strings.TrimPrefix(w.Secret, SealedSecretPrefix))
	if err != nil {
		return store.Webhook{}, fmt.Errorf("webhook %s: %w", id, ErrSealed)
	}
	plain, err := s.Box.Open(raw, webhookAAD(w))
	if err != nil {
		return store.Webhook{}, fmt.Errorf("webhook %s: %w", id, err)
	}
	w.Secret = string(plain)
	return w, nil
}
