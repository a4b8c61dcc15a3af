package runs

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
)

// Admission bounds the runs this API process starts at once. Starting a run
// is a few calls to Temporal (describe, count, start); a burst of a
// thousand of them at once makes each slow enough to pass the Temporal
// timeout, which answered 503 for a healthy server. With a limit, a start
// past it waits in a queue, first come first served, and goes as a start
// before it ends; only past the queue's depth, or after waiting MaxWait,
// is a request refused, with a 429 and Retry-After. Zero Concurrency admits
// every start at once (no queue).
type Admission struct {
	// Concurrency is the most starts this process makes at once.
	Concurrency int
	// Queue is the most starts waiting for one of them; past it a
	// request gets 429 at once.
	Queue int
	// MaxWait bounds a start's wait in the queue; after it the request
	// gets 429. Zero waits as long as the request does.
	MaxWait time.Duration
}

// RetryAdmission is the Retry-After of a 429 for a full admission queue,
// in seconds: a start takes a fraction of a second once admitted.
const RetryAdmission = 2

// admission is the queue of starts of this process (see Admission): a
// FIFO semaphore (golang.org/x/sync/semaphore, whose waiters are served in
// the order they came and whose TryAcquire never overtakes one) and the
// count of the starts waiting for it.
type admission struct {
	cfg Admission
	sem *semaphore.Weighted
	// observe, when set, is told of each start admitted after a wait, and
	// of how long it waited; depth, of the queue's length as it changes.
	observe func(wait time.Duration, admitted bool)
	depth   func(n int)

	waiting atomic.Int64
}

func newAdmission(cfg Admission) *admission {
	a := &admission{cfg: cfg}
	if cfg.Concurrency > 0 {
		a.sem = semaphore.NewWeighted(int64(cfg.Concurrency))
	}
	return a
}

// acquire admits a start, waiting in the queue when Concurrency starts are
// under way; the caller calls release once its start is made. It fails
// with an ErrTooMany when the queue is full or the wait passes MaxWait,
// and with ctx's error when the request ends first.
func (a *admission) acquire(ctx context.Context) (release func(), err error) {
	if a == nil || a.sem == nil {
		return func() {}, nil
	}
	if a.sem.TryAcquire(1) {
		return a.releaser(), nil
	}
	n := a.waiting.Add(1)
	if n > int64(a.cfg.Queue) {
		a.waiting.Add(-1)
		a.observeWait(0, false)
		return nil, tooMany(fmt.Sprintf("the server is starting as many runs as it can and %d more wait: try again shortly (LONGHAUL_ADMISSION_QUEUE)", a.cfg.Queue), RetryAdmission)
	}
	a.setDepth(int(n))
	defer func() { a.setDepth(int(a.waiting.Add(-1))) }()
	wait := ctx
	if a.cfg.MaxWait > 0 {
		var cancel context.CancelFunc
		wait, cancel = context.WithTimeout(ctx, a.cfg.MaxWait)
		defer cancel()
	}
	start := time.Now()
	if err := a.sem.Acquire(wait, 1); err != nil {
		a.observeWait(time.Since(start), false)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, tooMany(fmt.Sprintf("the run waited %v to start and the server is still busy: try again shortly (LONGHAUL_ADMISSION_WAIT)", a.cfg.MaxWait), RetryAdmission)
	}
	a.observeWait(time.Since(start), true)
	return a.releaser(), nil
}

// releaser frees the caller's slot (to the first start in the queue);
// calling it more than once releases once.
func (a *admission) releaser() func() {
	var once sync.Once
	return func() { once.Do(func() { a.sem.Release(1) }) }
}

func (a *admission) setDepth(n int) {
	if a.depth != nil {
		a.depth(n)
	}
}

func (a *admission) observeWait(d time.Duration, admitted bool) {
	if a.observe != nil {
		a.observe(d, admitted)
	}
}
