package runs

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/longhaul-dev/longhaul/internal/store"
)

// Limits bound the runs and streams one principal holds at once. Zero is
// no limit.
type Limits struct {
	// Runs is the most runs a principal may have running (or waiting) at
	// once, across every API process: a new run beyond it is refused with
	// 429. Counted by Temporal's visibility, so a burst may overshoot by the
	// few runs visibility has not shown yet.
	Runs int
	// Streams is the most event streams (chat and runs API) a principal may
	// hold open on one API process.
	Streams int
}

// Retry-After values of the 429s, in seconds: a stream frees up when a
// client leaves, a run when it ends.
const (
	RetryStreams = 5
	RetryRuns    = 30
)

// Gate is what bounds the work the API asks of runs: the starts this
// process makes at once (its admission queue, see Admission) and what each
// principal holds (see Limits). It sits over any Service, so the Temporal
// runs and the fake of handler tests are bounded by the same code. Its
// refusals are *Refusal errors.
type Gate struct {
	limits Limits
	admit  *admission
	svc    Service
	budget func(ctx context.Context, principal, agent string) error
	blobs  store.Store
	agents Agents
	// settings go into every run's input (Input).
	settings Settings
	log      *slog.Logger
	mu       sync.Mutex
	streams  map[string]int
}

// GateConfig configures a Gate.
type GateConfig struct {
	Limits    Limits
	Admission Admission
	// Blobs takes the big inline images of a run's conversation before it
	// starts (see StartOrAttach); nil keeps them inline.
	Blobs store.Store
	// Budget, when set, refuses a start while a budget of the principal,
	// its key or the agent is used up: it answers OverBudget, or nil (a
	// ledger that cannot be read is the run's own reservation's to judge,
	// activities/budget.go).
	Budget func(ctx context.Context, principal, agent string) error
	// Agents resolves the agent each request names; nil takes the name
	// as the agent's id.
	Agents Agents
	// Settings are the operator's settings every run's input carries.
	Settings Settings
	Log      *slog.Logger
}

// NewGate bounds the work asked of svc as cfg says.
func NewGate(svc Service, cfg GateConfig) *Gate {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Gate{limits: cfg.Limits, admit: newAdmission(cfg.Admission), svc: svc, budget: cfg.Budget, blobs: cfg.Blobs, agents: cfg.Agents, settings: cfg.Settings, log: cfg.Log, streams: map[string]int{}}
}

// Observe tells wait of each start's wait in the admission queue (how long,
// and whether it was admitted), and depth of the queue's length as it
// changes. Call it before the gate is used.
func (g *Gate) Observe(wait func(d time.Duration, admitted bool), depth func(n int)) {
	g.admit.observe, g.admit.depth = wait, depth
}

// Admit waits for the caller's turn to start a run (see Admission) and
// returns what lets the next one go; calling that again does nothing.
func (g *Gate) Admit(ctx context.Context) (release func(), err error) {
	release, err = g.admit.acquire(ctx)
	if err != nil && ctx.Err() != nil {
		// The client left while it waited: nobody reads the answer.
		return nil, tooMany("the request ended while it waited to start", RetryAdmission)
	}
	return release, err
}

// Stream takes one of principal's open streams, or refuses it with an
// ErrTooMany: the caller must call the release it returns when the stream
// ends.
func (g *Gate) Stream(principal string) (release func(), err error) {
	limit := g.limits.Streams
	if limit <= 0 {
		return func() {}, nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.streams[principal] >= limit {
		return nil, tooMany(fmt.Sprintf("too many open streams: at most %d at once (LONGHAUL_MAX_STREAMS)", limit), RetryStreams)
	}
	g.streams[principal]++
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			if g.streams[principal]--; g.streams[principal] <= 0 {
				delete(g.streams, principal)
			}
		})
	}, nil
}

// CheckRuns refuses a new run of a principal who has as many running as
// the limit allows.
func (g *Gate) CheckRuns(ctx context.Context, principal string) error {
	limit := g.limits.Runs
	if limit <= 0 {
		return nil
	}
	if !LiteralOK(principal) {
		// Counted by another's name, or by none: refuse rather than let
		// the limit count someone else's runs (see LiteralOK).
		return refuse(ErrInternal, "your runs cannot be counted: your principal's name cannot be matched by a visibility query")
	}
	n, err := g.svc.Count(ctx, Filter{Owner: principal, Running: true})
	if err != nil {
		return refuse(ErrUnreachable, "cannot count your runs: "+err.Error())
	}
	if n >= int64(limit) {
		return tooMany(fmt.Sprintf("too many runs: you have %d running, at most %d at once (LONGHAUL_MAX_RUNS); cancel one or wait for one to end", n, limit), RetryRuns)
	}
	return nil
}

// MaxPayload bounds the encoded input of a new run and of a person's
// input to a running one. Temporal refuses a payload over 2 MB (its default
// blob size limit) and the run hands its conversation on to its first model
// call in another payload, with the call's own fields around it: the margin
// keeps that one under the limit too.
const MaxPayload = 3 << 19 // 1.5 MiB

// CheckPayload refuses, with an ErrTooLarge, a value that Temporal would
// refuse as a payload (see MaxPayload): said so at once, rather than as
// the unreachable engine of a failed start that clients retry.
func CheckPayload(what string, v any) error {
	n, err := PayloadSize(v)
	if err != nil {
		return refuse(ErrInternal, "cannot encode "+what)
	}
	if n > MaxPayload {
		return refuse(ErrTooLarge, fmt.Sprintf("%s is %s encoded; a run takes at most %s at once (Temporal's payload limit): "+
			"shorten the conversation or leave the large parts out (give the agent a URL it can fetch instead of a pasted document)",
			what, megabytes(n), megabytes(MaxPayload)))
	}
	return nil
}

func megabytes(n int) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
