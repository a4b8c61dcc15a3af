package budget

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/testing/storetest"
)

// TestSettleGroupCommit: calls that settle while a commit is being
// written share the next one: twenty settlements held behind a first
// commit are written in one transaction, each Settle returns once its row
// is committed, and the usage counts every call once.
func TestSettleGroupCommit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, u string) {
		ctx := context.Background()
		l, err := Open(ctx, u, nil, Prices{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
		const n = 20
		release := make(chan struct{})
		var once sync.Once
		l.group.hold = func() { once.Do(func() { <-release }) }
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Go(func() {
				errs <- l.Settle(ctx, Call{ID: fmt.Sprintf("c%d", i), Principal: "alice", Agent: "assistant", Model: "m"}, 10, 1)
			})
		}
		// Every settlement waits in the group before the first commit.
		for {
			l.group.mu.Lock()
			pending := len(l.group.pending)
			l.group.mu.Unlock()
			if pending == n {
				break
			}
			runtime.Gosched()
		}
		close(release)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		l.group.mu.Lock()
		commits := l.group.commits
		l.group.mu.Unlock()
		if commits != 1 {
			t.Errorf("%d settlements took %d commits, want 1", n, commits)
		}
		rows, err := l.Usage(ctx, Filter{From: time.Now().Add(-time.Hour), To: time.Now().Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1 || rows[0].Calls != n || rows[0].TokensIn != 10*n || rows[0].TokensOut != n {
			t.Errorf("usage = %+v, want %d calls of 10 and 1 tokens", rows, n)
		}
	})
}

// BenchmarkSettle settles model calls from many goroutines at once, as a
// worker's concurrent activities do, on SQLite: the ledger's cost at the
// end of each call.
func BenchmarkSettle(b *testing.B) {
	l, err := Open(context.Background(), "sqlite://"+filepath.Join(b.TempDir(), "ledger.db"), nil, Prices{})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	var seq sync.Mutex
	next := 0
	b.SetParallelism(50)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			seq.Lock()
			next++
			id := fmt.Sprintf("c%d", next)
			seq.Unlock()
			if err := l.Settle(context.Background(), Call{ID: id, Principal: "alice", Agent: "assistant", Model: "m"}, 100, 10); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// TestSettleAfterClose: a call that settles once the ledger is closed (a
// worker's activity ending while the process stops) is refused, and Close
// waits for the group being written.
func TestSettleAfterClose(t *testing.T) {
	ctx := context.Background()
	l, err := Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "ledger.db"), nil, Prices{})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var once sync.Once
	l.group.hold = func() { once.Do(func() { <-release }) }
	settled := make(chan error, 1)
	go func() { settled <- l.Settle(ctx, Call{ID: "c1", Principal: "alice", Model: "m"}, 1, 1) }()
	for {
		l.group.mu.Lock()
		writing := l.group.writing
		l.group.mu.Unlock()
		if writing {
			break
		}
		runtime.Gosched()
	}
	closed := make(chan error, 1)
	go func() { closed <- l.Close() }()
	close(release)
	if err := <-settled; err != nil {
		t.Errorf("the settlement being written: %v", err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if err := l.Settle(ctx, Call{ID: "c2", Principal: "alice", Model: "m"}, 1, 1); !errors.Is(err, errClosed) {
		t.Errorf("a settlement after Close = %v, want errClosed", err)
	}
}
