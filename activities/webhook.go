package activities

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/safehttp"
	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/internal/usercreds"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
)

// Bounds of one delivery attempt.
const (
	// WebhookAttemptTimeout bounds one attempt: connecting, sending the
	// event and reading the answer.
	WebhookAttemptTimeout = 15 * time.Second
	// webhookMaxBody bounds the event sent (it names a run; it never
	// carries its answer).
	webhookMaxBody = 64 << 10
	// webhookMaxAnswer bounds what is read of the receiver's answer: its
	// status is what counts, a little of the body says why it refused.
	webhookMaxAnswer = 4 << 10
)

// WebhookSecretPrefix starts every webhook secret.
const WebhookSecretPrefix = "whsec_"

// WebhookTargets returns the ids of the webhooks that take an event of
// req.Type of a run of req.Owner: the owner's subscriptions to it, then
// the run's own webhooks, which take every event of their run: the one it
// started with (req.Run) unless it was deleted since, and those added
// while it runs (an A2A push notification config set on a running task),
// read from the store by the run's id, which is the calling workflow's.
// The workflow records the answer, so an event goes where the store said
// when it happened. A worker without a webhook store has none.
func (a *Activities) WebhookTargets(ctx context.Context, req contract.WebhookTargetsRequest) ([]string, error) {
	if a.Webhooks == nil {
		return nil, nil
	}
	ids, err := a.Webhooks.MatchWebhooks(ctx, req.Owner, req.Type)
	if err != nil {
		return nil, err
	}
	var own []string
	if activity.IsActivity(ctx) {
		ws, err := a.Webhooks.RunWebhooks(ctx, req.Owner, activity.GetInfo(ctx).WorkflowExecution.ID)
		if err != nil {
			return nil, err
		}
		for _, w := range ws {
			own = append(own, w.ID)
		}
	}
	if req.Run != "" && !slices.Contains(own, req.Run) {
		// The run's first webhook names another run (a fork's copy of
		// its input), or was deleted: only a deleted one is left out.
		if _, err := a.Webhooks.GetWebhook(ctx, req.Run); err == nil {
			own = append([]string{req.Run}, own...)
		} else if !errors.Is(err, store.ErrNoWebhook) {
			return nil, err
		}
	}
	for _, id := range own {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// DeliverWebhook makes one attempt to deliver in.Event to the webhook
// in.Webhook, signed with its secret, and records the attempt under the
// webhook. The URL and the secret are read from the store here, so the
// secret never enters workflow history. A 2xx answer is a delivery;
// 408, 429, 5xx and a network failure are retried (Temporal's retry
// policy, workflows/options.go); another 4xx, a destination the SSRF
// guard refuses and a deleted webhook are not.
func (a *Activities) DeliverWebhook(ctx context.Context, in contract.WebhookInput) (contract.WebhookResult, error) {
	if a.Webhooks == nil {
		return contract.WebhookResult{}, nonRetryable(longhaul.ErrTypeNoStore, errors.New("this worker keeps no webhooks"))
	}
	w, err := a.Webhooks.GetWebhook(ctx, in.Webhook)
	if errors.Is(err, store.ErrNoWebhook) {
		return contract.WebhookResult{}, nonRetryable(longhaul.ErrTypeWebhookGone, fmt.Errorf("webhook %s was deleted", in.Webhook))
	}
	if err != nil {
		return contract.WebhookResult{}, err
	}
	body, err := json.Marshal(in.Event)
	if err != nil || len(body) > webhookMaxBody {
		return contract.WebhookResult{}, nonRetryable(longhaul.ErrTypeBadInput, fmt.Errorf("event %s cannot be sent (%d bytes, %v)", in.Event.ID, len(body), err))
	}
	attempt := int(activity.GetInfo(ctx).Attempt)
	status, answer, sendErr := a.postWebhook(ctx, w, in.Event.ID, body)
	d := store.Delivery{Webhook: w.ID, EventID: in.Event.ID, EventType: in.Event.Type, Attempt: attempt, StatusCode: status}
	if sendErr != nil {
		d.Error = sendErr.Error()
	} else if status/100 != 2 {
		d.Error = "HTTP " + strconv.Itoa(status)
		if !a.WebhookPrivate {
			// With private hosts reachable, a receiver's body may be an
			// internal service's page: its owner reads the status only.
			d.Error += answerExcerpt(answer)
		}
	}
	if err := a.Webhooks.AddDelivery(ctx, d); err != nil {
		// The receiver's answer counts; a lost record does not make it
		// worth sending again.
		a.log.WarnContext(ctx, "webhook delivery not recorded", "webhook", w.ID, "event", in.Event.ID, "error", err)
	}
	if sendErr == nil && status == http.StatusGone {
		// The receiver is gone for good: no event goes there again, as
		// Standard Webhooks' senders disable an endpoint that answers 410.
		if _, err := a.Webhooks.DeleteWebhook(ctx, w.Owner, w.ID); err != nil {
			a.log.WarnContext(ctx, "disable a webhook whose receiver answered 410", "webhook", w.ID, "error", err)
		}
	}
	return contract.WebhookResult{StatusCode: status, Attempt: attempt}, webhookOutcome(status, sendErr, d.Error)
}

// webhookOutcome classifies an attempt: nil for a delivery, a
// non-retryable error for what retrying cannot change, else a retryable
// one.
func webhookOutcome(status int, sendErr error, why string) error {
	switch {
	case sendErr != nil && (errors.Is(sendErr, safehttp.ErrBlocked) || errors.Is(sendErr, safehttp.ErrTooManyRedirects)):
		return nonRetryable(longhaul.ErrTypeWebhookRejected, sendErr)
	case sendErr != nil:
		return sendErr
	case status/100 == 2:
		return nil
	case status/100 == 3:
		// A delivery follows no redirect, and sending again is redirected
		// again: blocked, not retried all day.
		return nonRetryable(longhaul.ErrTypeWebhookRejected, errors.New("the receiver redirected the event (webhooks follow no redirect): "+why))
	case status/100 == 4 && status != http.StatusRequestTimeout && status != http.StatusTooManyRequests:
		return nonRetryable(longhaul.ErrTypeWebhookRejected, errors.New("the receiver refused the event: "+why))
	}
	return temporal.NewApplicationError("the receiver did not take the event: "+why, "WebhookUnavailable")
}

// postWebhook sends body to w's URL through the SSRF guard and returns
// the answer's status and the start of its body.
func (a *Activities) postWebhook(ctx context.Context, w store.Webhook, id string, body []byte) (int, []byte, error) {
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	sig, err := SignWebhook(w.Secret, id, ts, body)
	if err != nil {
		return 0, nil, nonRetryable(longhaul.ErrTypeWebhookRejected, err)
	}
	ctx, cancel := context.WithTimeout(ctx, WebhookAttemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return 0, nil, nonRetryable(longhaul.ErrTypeWebhookRejected, fmt.Errorf("webhook URL: %w", err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Longhaul-Webhooks")
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", ts)
	req.Header.Set("webhook-signature", sig)
	resp, err := a.webhookClient().Do(req)
	if err != nil {
		// Without the URL, which may hold a token of its own (a chat
		// service's incoming webhook): the error goes into history.
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return 0, nil, err
	}
	defer resp.Body.Close()
	answer, _, _ := safehttp.ReadLimited(resp.Body, webhookMaxAnswer)
	return resp.StatusCode, answer, nil
}

// webhookClient is the SSRF-guarded client of deliveries: it follows no
// redirect (a receiver answers, it does not send the event on), and it
// reaches private and loopback hosts only when WebhookPrivate says so.
func (a *Activities) webhookClient() *http.Client {
	return safehttp.NewClient(safehttp.Options{Timeout: WebhookAttemptTimeout, MaxRedirects: -1, AllowPrivate: a.WebhookPrivate})
}

// answerExcerpt is a short, printable excerpt of a refusal's body.
func answerExcerpt(b []byte) string {
	s := strings.Join(strings.Fields(strings.ToValidUTF8(string(b), "")), " ")
	if len(s) > 200 {
		s = strings.ToValidUTF8(s[:200], "")
	}
	if s == "" {
		return ""
	}
	return ": " + s
}

// SignWebhook is the webhook-signature header of a delivery, as the
// Standard Webhooks specification (v1.0.0, "Signature scheme",
// https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md)
// defines it and OpenAI's webhooks use it: "v1," and the base64 HMAC-SHA256
// of "<webhook-id>.<webhook-timestamp>.<body>", keyed with the secret's
// base64-decoded bytes after its whsec_ prefix.
func SignWebhook(secret, id, timestamp string, body []byte) (string, error) {
	if strings.HasPrefix(secret, usercreds.SealedSecretPrefix) {
		return "", errors.New("the webhook's secret is sealed with LONGHAUL_TOKEN_KEY, which this worker is not given")
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, WebhookSecretPrefix))
	if err != nil || len(key) == 0 {
		return "", errors.New("the webhook's secret is not whsec_ and base64")
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + timestamp + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)), nil
}
