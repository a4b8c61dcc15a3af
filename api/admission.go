package api

import (
	"context"
	"fmt"
	"sync"
	"time"
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

// retryAdmission is the Retry-After of a 429 for a full admission queue,
// in seconds: a start takes a fraction of a second once admitted.
const retryAdmission = 2

// admission is the queue of starts of this process (see Admission).
type admission struct {
	cfg Admission
	// observe, when set, is told of each start admitted after a wait, and
	// of how long it waited; depth, of the queue's length as it changes.
	observe func(wait time.Duration, admitted bool)
	depth   func(n int)

	mu       sync.Mutex
	inflight int
	queue    []*admitWaiter
}

// admitWaiter is a start in the queue; admitted is closed when it may go.
type admitWaiter struct {
	admitted chan struct{}
	done     bool // admitted or gone, under admission.mu
}

// acquire admits a start, waiting in the queue when Concurrency starts are
// under way; the caller calls release once its start is made. It fails
// with a 429 when the queue is full or the wait passes MaxWait, and with
// ctx's error when the request ends first.
func (a *admission) acquire(ctx context.Context) (release func(), err error) {
	if a == nil || a.cfg.Concurrency <= 0 {
		return func() {}, nil
	}
	a.mu.Lock()
	if a.inflight < a.cfg.Concurrency && len(a.queue) == 0 {
		a.inflight++
		a.mu.Unlock()
		return a.releaser(), nil
	}
	if len(a.queue) >= a.cfg.Queue {
		a.mu.Unlock()
		a.observeWait(0, false)
		return nil, a.tooMany(fmt.Sprintf("the server is starting as many runs as it can and %d more wait: try again shortly (LONGHAUL_ADMISSION_QUEUE)", a.cfg.Queue))
	}
	w := &admitWaiter{admitted: make(chan struct{})}
	a.queue = append(a.queue, w)
	a.setDepth(len(a.queue))
	a.mu.Unlock()

	start := time.Now()
	var timeout <-chan time.Time
	if a.cfg.MaxWait > 0 {
		t := time.NewTimer(a.cfg.MaxWait)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-w.admitted:
		a.observeWait(time.Since(start), true)
		return a.releaser(), nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-timeout:
		err = a.tooMany(fmt.Sprintf("the run waited %v to start and the server is still busy: try again shortly (LONGHAUL_ADMISSION_WAIT)", a.cfg.MaxWait))
	}
	a.mu.Lock()
	if w.done {
		// Admitted as it gave up: the slot is its own, so it goes.
		a.mu.Unlock()
		a.observeWait(time.Since(start), true)
		return a.releaser(), nil
	}
	w.done = true
	for i, q := range a.queue {
		if q == w {
			a.queue = append(a.queue[:i], a.queue[i+1:]...)
			break
		}
	}
	a.setDepth(len(a.queue))
	a.mu.Unlock()
	a.observeWait(time.Since(start), false)
	return nil, err
}

// releaser hands the caller's slot to the first start in the queue, or
// frees it; calling it more than once releases once.
func (a *admission) releaser() func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			a.mu.Lock()
			defer a.mu.Unlock()
			if len(a.queue) == 0 {
				a.inflight--
				return
			}
			w := a.queue[0]
			a.queue[0] = nil
			a.queue = a.queue[1:]
			w.done = true
			close(w.admitted)
			a.setDepth(len(a.queue))
		})
	}
}

func (a *admission) tooMany(msg string) error { return errTooMany(msg, retryAdmission) }

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

// admitStart waits for the request's turn to start a run (see Admission)
// and returns what lets the next one go; calling it again does nothing.
func (s *Server) admitStart(ctx context.Context) (func(), error) {
	release, err := s.admit.acquire(ctx)
	if err != nil && ctx.Err() != nil {
		// The client left while it waited: nobody reads the answer.
		return nil, errTooMany("the request ended while it waited to start", retryAdmission)
	}
	return release, err
}
