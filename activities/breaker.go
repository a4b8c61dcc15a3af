package activities

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/longhaul-dev/longhaul"
	"go.temporal.io/sdk/temporal"
)

// Breaker is a worker's memory of the model endpoints that keep failing,
// shared by all its model calls. After Failures consecutive failed calls
// to an endpoint (429, 5xx, timeouts, a refused connection) the endpoint
// is open for Cooldown: a call that has a fallback model fails at once
// (ErrTypeModelCoolingDown), so the run's next model answers without
// waiting out retries that would fail alike. A call without a fallback
// tries the endpoint all the same, as it has nowhere else to go. The first
// call after the cooldown tries the endpoint again; its success closes it.
//
// The state is the process's own, not the workflow's: a worker that
// restarts forgets it, and two workers learn on their own. It is a hint
// to skip a wait, never a decision a replay must repeat.
type Breaker struct {
	failures int
	cooldown time.Duration
	// now is time.Now, replaced in tests.
	now func() time.Time

	mu    sync.Mutex
	state map[string]*endpointHealth
}

// endpointHealth is one endpoint's run of failures and, when open, the end
// of its cooldown.
type endpointHealth struct {
	failed int
	until  time.Time
}

// NewBreaker returns a breaker that opens after failures consecutive
// failures for cooldown; failures <= 0 returns nil, which never opens.
func NewBreaker(failures int, cooldown time.Duration) *Breaker {
	if failures <= 0 || cooldown <= 0 {
		return nil
	}
	return &Breaker{failures: failures, cooldown: cooldown, now: time.Now, state: map[string]*endpointHealth{}}
}

// Open reports whether endpoint is cooling down, and until when.
func (b *Breaker) Open(endpoint string) (time.Time, bool) {
	if b == nil {
		return time.Time{}, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	h := b.state[endpoint]
	if h == nil || h.until.IsZero() || !b.now().Before(h.until) {
		return time.Time{}, false
	}
	return h.until, true
}

// Failed counts a failed call to endpoint, opening it at the limit.
func (b *Breaker) Failed(endpoint string) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	h := b.state[endpoint]
	if h == nil {
		h = &endpointHealth{}
		b.state[endpoint] = h
	}
	h.failed++
	if h.failed >= b.failures {
		h.until = b.now().Add(b.cooldown)
	}
}

// Succeeded closes endpoint: its run of failures is over.
func (b *Breaker) Succeeded(endpoint string) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.state, endpoint)
}

// resolveCall resolves a model call's model (see resolve); when the call
// has a fallback and the model's endpoint is cooling down, it fails at
// once, so that the fallback answers.
func (a *Activities) resolveCall(model string, fallback bool) (endpoint, error) {
	ep, err := a.resolve(model)
	if err != nil {
		return endpoint{}, err
	}
	if until, open := a.Breaker.Open(ep.Name); open && fallback {
		return endpoint{}, coolingDown(ep.Name, until)
	}
	return ep, nil
}

// noteHealth tells the breaker how a call to ep ended: an endpoint that
// did not answer (a refused connection, 429, 5xx, a stream gone silent, the
// call's time limit) failed; an answer, even one refused, means it is up.
// A call cancelled with its run says nothing of the endpoint.
func (a *Activities) noteHealth(ctx context.Context, ep endpoint, err error) {
	var appErr *temporal.ApplicationError
	switch {
	case err == nil:
		a.Breaker.Succeeded(ep.Name)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		a.Breaker.Failed(ep.Name)
	case ctx.Err() != nil:
	case errors.As(err, &appErr) && appErr.Type() == longhaul.ErrTypeModelUnavailable:
		a.Breaker.Failed(ep.Name)
	default:
		a.Breaker.Succeeded(ep.Name)
	}
}

// coolingDown is the error of a call skipped because its endpoint is
// open: not retried, as every attempt would be skipped alike until the
// cooldown ends; the workflow takes the next model.
func coolingDown(name string, until time.Time) error {
	if name == "" {
		name = "the default endpoint (LONGHAUL_LLM_BASE_URL)"
	} else {
		name = "endpoint " + name
	}
	return temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("%s failed repeatedly and is skipped until %s (LONGHAUL_MODEL_BREAKER_COOLDOWN)", name, until.UTC().Format(time.RFC3339)),
		longhaul.ErrTypeModelCoolingDown, nil)
}
