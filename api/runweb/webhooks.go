package runweb

import (
	"context"
	"errors"

	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// Webhooks makes the webhook a single run is started with (the webhook
// field of POST /v1/runs and of a background POST /v1/responses):
// webhooksapi.Handlers, which keeps it and its secret in the store.
type Webhooks interface {
	RunWebhook(ctx context.Context, owner, run, url string) (wire.RunWebhook, error)
	// DropRunWebhook deletes the webhook of a run that did not start.
	DropRunWebhook(ctx context.Context, owner, id string)
}

// StartWithWebhook starts the run as Start does, and deletes the run's own
// webhook (hook, if any) when the start was refused (a principal over its
// limit, say), so that refusals leave nothing behind. A start that failed
// otherwise (Temporal did not answer) may have started the run, which
// keeps its webhook.
func StartWithWebhook(ctx context.Context, gate *runs.Gate, ws Webhooks, hook *wire.RunWebhook, r runs.Request) error {
	_, err := Start(ctx, gate, r)
	var refused *web.Error
	if hook != nil && errors.As(err, &refused) && refused.Status < 500 {
		ws.DropRunWebhook(context.WithoutCancel(ctx), r.User.Key(), hook.ID)
	}
	return err
}

// RunWebhook makes run's own webhook at url for owner, when url is set,
// and returns what the run's input carries of it (the store's id, never
// the secret) and what the answer that started the run shows (the
// secret, once). No url is neither; a server without webhooks refuses one.
func RunWebhook(ctx context.Context, ws Webhooks, owner, run, url string) (*contract.RunWebhook, *wire.RunWebhook, error) {
	if url == "" {
		return nil, nil, nil
	}
	if ws == nil {
		return nil, nil, web.BadRequest("webhook: this server keeps no webhooks")
	}
	w, err := ws.RunWebhook(ctx, owner, run, url)
	if err != nil {
		return nil, nil, err
	}
	return &contract.RunWebhook{ID: w.ID}, &w, nil
}
