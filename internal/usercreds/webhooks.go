package usercreds

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/longhaul-dev/longhaul/internal/store"
)

// SealedSecretPrefix starts a webhook secret or URL sealed by
// SealedWebhooks, as the store keeps it; a plain secret starts with
// whsec_, a plain URL with http.
const SealedSecretPrefix = "sealed:v1:"

// SealedWebhooks is a webhook store whose secrets and URLs are sealed
// with LONGHAUL_TOKEN_KEY, as users' credentials are: the store's database
// then holds no secret that signs a delivery, and no URL (which is often a
// bearer secret itself: a chat service's incoming webhook holds its token
// in the path). The API seals both as it creates the webhook and opens the
// URLs it lists to their owner; the worker's delivery activity opens both
// by the webhook's id, so the API and the workers need the same key. A
// secret or URL stored plain (before the key was set, or before URLs were
// sealed) reads as it was stored.
type SealedWebhooks struct {
	store.Webhooks
	Box *Box
}

// webhookAAD binds a sealed secret to its webhook and owner, so a sealed
// value copied to another row does not open.
func webhookAAD(w store.Webhook) []byte {
	return []byte("webhook\x00" + w.ID + "\x00" + w.Owner)
}

// webhookURLAAD binds a sealed URL to its webhook and owner, apart from
// the secret's, so neither opens in the other's column.
func webhookURLAAD(w store.Webhook) []byte {
	return []byte("webhook-url\x00" + w.ID + "\x00" + w.Owner)
}

func (s SealedWebhooks) seal(plain string, aad []byte) string {
	return SealedSecretPrefix + base64.RawStdEncoding.EncodeToString(s.Box.Seal([]byte(plain), aad))
}

// open opens a value seal sealed; one stored plain is returned as it is.
func (s SealedWebhooks) open(v string, aad []byte) (string, error) {
	if !strings.HasPrefix(v, SealedSecretPrefix) {
		return v, nil
	}
	raw, err := base64.RawStdEncoding.DecodeString(strings.TrimPrefix(v, SealedSecretPrefix))
	if err != nil {
		return "", ErrSealed
	}
	plain, err := s.Box.Open(raw, aad)
	if err != nil {
		return "", err
	}
	return string(plain), nil
}

// openWebhook opens w's URL and, when withSecret, its secret.
func (s SealedWebhooks) openWebhook(w store.Webhook, withSecret bool) (store.Webhook, error) {
	u, err := s.open(w.URL, webhookURLAAD(w))
	if err != nil {
		return store.Webhook{}, fmt.Errorf("webhook %s's URL: %w", w.ID, err)
	}
	w.URL = u
	if withSecret {
		secret, err := s.open(w.Secret, webhookAAD(w))
		if err != nil {
			return store.Webhook{}, fmt.Errorf("webhook %s: %w", w.ID, err)
		}
		w.Secret = secret
	}
	return w, nil
}

// CreateWebhook stores w with its secret and URL sealed, and returns it
// with both plain (the secret is shown once to its owner).
func (s SealedWebhooks) CreateWebhook(ctx context.Context, w store.Webhook, max int) (store.Webhook, error) {
	plainSecret, plainURL := w.Secret, w.URL
	w.Secret, w.URL = s.seal(plainSecret, webhookAAD(w)), s.seal(plainURL, webhookURLAAD(w))
	got, err := s.Webhooks.CreateWebhook(ctx, w, max)
	got.Secret, got.URL = plainSecret, plainURL
	return got, err
}

// GetWebhook returns the webhook with its secret and URL opened.
func (s SealedWebhooks) GetWebhook(ctx context.Context, id string) (store.Webhook, error) {
	w, err := s.Webhooks.GetWebhook(ctx, id)
	if err != nil {
		return w, err
	}
	return s.openWebhook(w, true)
}

// ListWebhooks returns the owner's subscriptions with their URLs opened
// (and, as the store's, without their secrets).
func (s SealedWebhooks) ListWebhooks(ctx context.Context, owner string) ([]store.Webhook, error) {
	ws, err := s.Webhooks.ListWebhooks(ctx, owner)
	if err != nil {
		return nil, err
	}
	for i := range ws {
		if ws[i], err = s.openWebhook(ws[i], false); err != nil {
			return nil, fmt.Errorf("list webhooks: %w", err)
		}
	}
	return ws, nil
}

// RunWebhooks returns the owner's webhooks of run with their URLs opened
// (and, as the store's, without their secrets).
func (s SealedWebhooks) RunWebhooks(ctx context.Context, owner, run string) ([]store.Webhook, error) {
	ws, err := s.Webhooks.RunWebhooks(ctx, owner, run)
	if err != nil {
		return nil, err
	}
	for i := range ws {
		if ws[i], err = s.openWebhook(ws[i], false); err != nil {
			return nil, fmt.Errorf("list the webhooks of run %s: %w", run, err)
		}
	}
	return ws, nil
}
