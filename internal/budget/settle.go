package budget

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/longhaul-dev/longhaul/internal/sqldb"
)

// Settlements are written in group commits: every model call that ends
// while one transaction is being written waits for the next, which writes
// all of their rows at once. Settle returns only once its row is durable,
// so the activity that settles a call completes after the row is, as
// before; under load, concurrent calls share one commit (one fsync on
// SQLite, one round trip on PostgreSQL) instead of queuing on the single
// writer one by one.

// settleTimeout bounds one group commit.
const settleTimeout = 30 * time.Second

// settlement is one row waiting for its group commit, and where its
// outcome goes.
type settlement struct {
	c            Call
	in, out, cst int64
	at           time.Time
	done         chan error
}

// errClosed is a settlement after the ledger was closed.
var errClosed = errors.New("the usage ledger is closed")

// committer gathers settlements and writes them, one transaction a group.
type committer struct {
	mu      sync.Mutex
	pending []settlement
	// writing is set while a goroutine writes groups; done is signalled
	// when it stops. closed refuses settlements (Close).
	writing, closed bool
	done            *sync.Cond
	// commits counts the transactions written, for tests.
	commits int
	// hold, when set, runs before each group is taken (a test's gate).
	hold func()
}

// Settle records what c spent, replacing its reservation; a call never
// reserved (the ledger was off when it was) is recorded now. Settling
// again records the latest usage: a call is counted once. It returns once
// the row is committed, with the calls settled beside it (see committer).
func (l *Ledger) Settle(ctx context.Context, c Call, in, out int64) error {
	s := settlement{c: c, in: in, out: out, cst: l.prices.Cost(c.Model, in, out), at: l.now(), done: make(chan error, 1)}
	l.group.mu.Lock()
	if l.group.closed {
		l.group.mu.Unlock()
		return errClosed
	}
	l.group.pending = append(l.group.pending, s)
	if !l.group.writing {
		l.group.writing = true
		go l.commitGroups()
	}
	l.group.mu.Unlock()
	select {
	case err := <-s.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// commitGroups writes the pending settlements, a group a transaction,
// until none are left.
func (l *Ledger) commitGroups() {
	for {
		if l.group.hold != nil {
			l.group.hold()
		}
		l.group.mu.Lock()
		batch := l.group.pending
		l.group.pending = nil
		if len(batch) == 0 {
			l.group.writing = false
			l.group.done.Broadcast()
			l.group.mu.Unlock()
			return
		}
		l.group.commits++
		l.group.mu.Unlock()
		l.commitGroup(batch)
	}
}

// commitGroup writes batch in one transaction. Should it fail, each row is
// written in a transaction of its own, so that one row's failure is its
// call's alone.
func (l *Ledger) commitGroup(batch []settlement) {
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	err := l.db.Write(ctx, func(tx sqldb.Tx) error {
		for _, s := range batch {
			if err := l.put(ctx, tx, s.c, true, s.in, s.out, s.cst, s.at); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil || len(batch) == 1 {
		for _, s := range batch {
			s.done <- err
		}
		return
	}
	for _, s := range batch {
		s.done <- l.db.Write(ctx, func(tx sqldb.Tx) error { return l.put(ctx, tx, s.c, true, s.in, s.out, s.cst, s.at) })
	}
}

// close refuses settlements from now on and waits for the ones being
// written.
func (g *committer) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	for g.writing {
		g.done.Wait()
	}
}
