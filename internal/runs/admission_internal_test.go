package runs

import (
	"context"
	"errors"
	"testing"
)

func wantDepth(t *testing.T, depth <-chan int, want int) {
	t.Helper()
	if got := <-depth; got != want {
		t.Fatalf("admission queue length %d, want %d", got, want)
	}
}

// TestAdmissionLeftQueue: a request whose client leaves while it waits
// leaves the queue, and the slot goes to the next one; a release called
// twice frees one slot.
func TestAdmissionLeftQueue(t *testing.T) {
	a := newAdmission(Admission{Concurrency: 1, Queue: 2})
	hold, err := a.acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan error, 1)
	depth := make(chan int, 10)
	a.depth = func(n int) { depth <- n }
	go func() {
		_, err := a.acquire(ctx)
		gone <- err
	}()
	wantDepth(t, depth, 1)
	next := make(chan func(), 1)
	go func() {
		r, err := a.acquire(context.Background())
		if err != nil {
			t.Error(err)
		}
		next <- r
	}()
	wantDepth(t, depth, 2)
	cancel()
	if err := <-gone; !errors.Is(err, context.Canceled) {
		t.Fatalf("a request that left: %v, want context.Canceled", err)
	}
	wantDepth(t, depth, 1)
	hold()
	hold()
	r := <-next
	wantDepth(t, depth, 0)
	if a.idle() {
		t.Fatal("no start in flight, want 1 (a release called twice frees once)")
	}
	r()
	if !a.idle() || a.waiting.Load() != 0 {
		t.Fatalf("after every release: idle %v, %d waiting; want idle and none", a.idle(), a.waiting.Load())
	}
}

// idle reports whether no start holds a slot.
func (a *admission) idle() bool {
	if !a.sem.TryAcquire(int64(a.cfg.Concurrency)) {
		return false
	}
	a.sem.Release(int64(a.cfg.Concurrency))
	return true
}
