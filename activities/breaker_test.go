package activities

import (
	"errors"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul"
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
