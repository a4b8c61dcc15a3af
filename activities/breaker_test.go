package activities

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/internal/endpoints"
	"go.temporal.io/sdk/temporal"
)

// TestBreaker: an endpoint opens after its limit of consecutive failures,
// for the cooldown; a success in between starts the count over; other
// endpoints are not affected; nil and a zero limit never open.
func TestBreaker(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	b := NewBreaker(3, 30*time.Second)
	b.now = func() time.Time { return now }

	b.Failed("remote")
	b.Failed("remote")
	b.Succeeded("remote")
	b.Failed("remote")
	b.Failed("remote")
	if _, open := b.Open("remote"); open {
		t.Fatal("open after 2 consecutive failures, want closed (a success reset the count)")
	}
	b.Failed("remote")
	until, open := b.Open("remote")
	if !open || !until.Equal(now.Add(30*time.Second)) {
		t.Fatalf("Open = %v %v, want open until %v", until, open, now.Add(30*time.Second))
	}
	if _, open := b.Open(""); open {
		t.Error("the default endpoint opened with remote")
	}
	now = now.Add(29 * time.Second)
	if _, open := b.Open("remote"); !open {
		t.Error("closed before the cooldown ended")
	}
	now = now.Add(time.Second)
	if _, open := b.Open("remote"); open {
		t.Error("still open after the cooldown: the next call must try the endpoint")
	}
	// The try after the cooldown fails: open again at once.
	b.Failed("remote")
	if _, open := b.Open("remote"); !open {
		t.Error("a failed try after the cooldown did not open it again")
	}

	var off *Breaker = NewBreaker(0, time.Minute)
	off.Failed("x")
	if _, open := off.Open("x"); open || off != nil {
		t.Error("a breaker with no limit opened")
	}
}

// TestCoolingDownIsNotRetried: the error of a skipped call is of its own
// type and not retried, so the workflow takes the next model at once.
func TestCoolingDownIsNotRetried(t *testing.T) {
	err := coolingDown("remote", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != longhaul.ErrTypeModelCoolingDown || !appErr.NonRetryable() {
		t.Fatalf("coolingDown = %#v", err)
	}
	if want := "endpoint remote failed repeatedly and is skipped until 2026-01-02T03:04:05Z (LONGHAUL_MODEL_BREAKER_COOLDOWN)"; appErr.Message() != want {
		t.Errorf("message = %q, want %q", appErr.Message(), want)
	}
}

// TestResolveCallSkipsACoolingEndpoint: a call with a fallback skips an
// endpoint that cools down; one without tries it anyway; a list resolves
// to its first model; how a call ended opens or closes its endpoint.
func TestResolveCallSkipsACoolingEndpoint(t *testing.T) {
	a := New(LLMConfig{BaseURL: "http://127.0.0.1:1/v1", Model: "m", Endpoints: []endpoints.Endpoint{{Name: "remote", BaseURL: "http://127.0.0.1:2/v1"}}}, nil, nil, nil)
	a.Breaker = NewBreaker(2, time.Minute)
	ctx := context.Background()
	ep, err := a.resolveCall("remote:big,m", true)
	if err != nil || ep.Name != "remote" || ep.model != "big" {
		t.Fatalf("resolveCall of a list = %+v, %v; want its first model", ep, err)
	}
	a.noteHealth(ctx, ep, temporal.NewApplicationError("503", longhaul.ErrTypeModelUnavailable))
	expired, cancel := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer cancel()
	a.noteHealth(expired, ep, expired.Err())
	var appErr *temporal.ApplicationError
	if _, err := a.resolveCall("remote:big", true); !errors.As(err, &appErr) || appErr.Type() != longhaul.ErrTypeModelCoolingDown {
		t.Fatalf("after an outage and a timeout, resolveCall = %v, want ModelCoolingDown", err)
	}
	if _, err := a.resolveCall("remote:big", false); err != nil {
		t.Errorf("a call without a fallback was refused: %v", err)
	}
	if _, err := a.resolveCall("m", true); err != nil {
		t.Errorf("the default endpoint was refused with remote: %v", err)
	}
	// An answer, even a refusal, says the endpoint is up.
	a.noteHealth(ctx, ep, temporal.NewNonRetryableApplicationError("400", longhaul.ErrTypeModelRejected, nil))
	if _, err := a.resolveCall("remote:big", true); err != nil {
		t.Errorf("after an answer, resolveCall = %v", err)
	}
}
