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
	if !a.idle() || a.waiting() != 0 {
		t.Fatalf("after every release: idle %v, %d waiting; want idle and none", a.idle(), a.waiting())
	}
}

// idle reports whether no start holds a slot.
func (a *admission) idle() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.held == 0
}

// waiting is the queue's length.
func (a *admission) waiting() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.queue.Len()
}

// TestAdmissionFirstComeFirstServed: starts that joined the queue one
// after another, each seen in the queue's length, are admitted in that
// order as slots free up.
func TestAdmissionFirstComeFirstServed(t *testing.T) {
	const n = 10
	a := newAdmission(Admission{Concurrency: 1, Queue: n})
	depth := make(chan int, 4*n)
	a.depth = func(d int) { depth <- d }
	hold, err := a.acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	admitted := make(chan int)
	releases := make([]chan func(), n)
	for i := range n {
		releases[i] = make(chan func(), 1)
		go func() {
			r, err := a.acquire(context.Background())
			if err != nil {
				t.Error(err)
				return
			}
			releases[i] <- r
			admitted <- i
		}()
		wantDepth(t, depth, i+1)
	}
	hold()
	for i := range n {
		if got := <-admitted; got != i {
			t.Fatalf("start %d admitted in turn %d", got, i)
		}
		wantDepth(t, depth, n-1-i)
		(<-releases[i])()
	}
	if !a.idle() || a.waiting() != 0 {
		t.Fatalf("after every release: idle %v, %d waiting", a.idle(), a.waiting())
	}
}
