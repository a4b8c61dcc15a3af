package runs

import (
	"container/list"
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

// RetryAdmission is the Retry-After of a 429 for a full admission queue,
// in seconds: a start takes a fraction of a second once admitted.
const RetryAdmission = 2

// admission is the queue of starts of this process (see Admission): at
// most Concurrency starts hold a slot, and the rest wait in a queue, first
// come first served; a freed slot goes to the head of the queue, never to
// a start that came after it. A start joins the queue and its new length
// is told (depth) under one lock, so the order in which lengths are told
// is the order of the queue.
type admission struct {
	cfg Admission
	// observe, when set, is told of each start admitted after a wait, and
	// of how long it waited; depth, of the queue's length as it changes.
	observe func(wait time.Duration, admitted bool)
	depth   func(n int)

	mu   sync.Mutex
	held int
	// queue holds a channel per waiting start, closed when a slot is
	// handed to it.
	queue list.List
}

func newAdmission(cfg Admission) *admission { return &admission{cfg: cfg} }

// acquire admits a start, waiting in the queue when Concurrency starts are
// under way; the caller calls release once its start is made. It fails
// with an ErrTooMany when the queue is full or the wait passes MaxWait,
// and with ctx's error when the request ends first.
func (a *admission) acquire(ctx context.Context) (release func(), err error) {
	if a == nil || a.cfg.Concurrency <= 0 {
		return func() {}, nil
	}
	a.mu.Lock()
	if a.held < a.cfg.Concurrency && a.queue.Len() == 0 {
		a.held++
		a.mu.Unlock()
		return a.releaser(), nil
	}
	if a.queue.Len() >= a.cfg.Queue {
		a.mu.Unlock()
		a.observeWait(0, false)
		return nil, tooMany(fmt.Sprintf("the server is starting as many runs as it can and %d more wait: try again shortly (LONGHAUL_ADMISSION_QUEUE)", a.cfg.Queue), RetryAdmission)
	}
	ready := make(chan struct{})
	place := a.queue.PushBack(ready)
	a.setDepth(a.queue.Len())
	a.mu.Unlock()
	wait := ctx
	if a.cfg.MaxWait > 0 {
		var cancel context.CancelFunc
		wait, cancel = context.WithTimeout(ctx, a.cfg.MaxWait)
		defer cancel()
	}
	start := time.Now()
	select {
	case <-ready:
		a.observeWait(time.Since(start), true)
		return a.releaser(), nil
	case <-wait.Done():
	}
	a.mu.Lock()
	select {
	case <-ready:
		// The slot came as the wait ended: it goes on to the next.
		a.mu.Unlock()
		a.release()
	default:
		a.queue.Remove(place)
		a.setDepth(a.queue.Len())
		a.mu.Unlock()
	}
	a.observeWait(time.Since(start), false)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return nil, tooMany(fmt.Sprintf("the run waited %v to start and the server is still busy: try again shortly (LONGHAUL_ADMISSION_WAIT)", a.cfg.MaxWait), RetryAdmission)
}

// releaser frees the caller's slot (see release); calling it more than
// once releases once.
func (a *admission) releaser() func() {
	var once sync.Once
	return func() { once.Do(a.release) }
}

// release hands a slot to the first start in the queue, or frees it.
func (a *admission) release() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if first := a.queue.Front(); first != nil {
		a.queue.Remove(first)
		a.setDepth(a.queue.Len())
		close(first.Value.(chan struct{}))
		return
	}
	a.held--
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
