package budget_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul/internal/budget"
	"github.com/longhaul-dev/longhaul/internal/sqldb"
	"github.com/longhaul-dev/longhaul/internal/testing/storetest"
)

// clock is a test's settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

func open(t *testing.T, u, limits string, clk *clock) *budget.Ledger {
	t.Helper()
	lims, err := budget.ParseBudgets(limits)
	if err != nil {
		t.Fatal(err)
	}
	prices, err := budget.ParsePrices("cheap=1/2,*=0/0")
	if err != nil {
		t.Fatal(err)
	}
	l, err := budget.Open(context.Background(), u, lims, prices, sqldb.WithClock(clk.now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

func call(id, principal string) budget.Call {
	return budget.Call{ID: id, Principal: principal, Key: budget.KeyOf(principal), Agent: "assistant", Model: "cheap"}
}

// TestLedgerReserveSettle: a reservation counts until it is settled, a
// settled call counts what it spent, a retried call replaces its own row,
// and a full limit refuses with when it resets.
func TestLedgerReserveSettle(t *testing.T) {
	storetest.Each(t, func(t *testing.T, u string) {
		ctx := context.Background()
		clk := &clock{t: time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)}
		l := open(t, u, "principal:*=1000tokens/day", clk)
		if err := l.Reserve(ctx, call("c1", "alice"), 300, 300); err != nil {
			t.Fatal(err)
		}
		// Retried: the same call reserves again, replacing its row.
		if err := l.Reserve(ctx, call("c1", "alice"), 300, 300); err != nil {
			t.Fatalf("retried reservation: %v", err)
		}
		var ex *budget.ExceededError
		if err := l.Reserve(ctx, call("c2", "alice"), 200, 300); !errors.As(err, &ex) {
			t.Fatalf("600 reserved + 500 > 1000: got %v, want ExceededError", err)
		}
		if want := time.Date(2026, 3, 11, 0, 0, 0, 0, time.UTC); !ex.Reset.Equal(want) || ex.Used != 600 || ex.Want != 500 {
			t.Fatalf("error = %+v, want used 600, want 500, reset %v", ex, want)
		}
		// Another principal has its own limit.
		if err := l.Reserve(ctx, call("b1", "bob"), 500, 500); err != nil {
			t.Fatal(err)
		}
		if err := l.Settle(ctx, call("c1", "alice"), 100, 50); err != nil {
			t.Fatal(err)
		}
		if err := l.Settle(ctx, call("c1", "alice"), 100, 50); err != nil {
			t.Fatalf("settled twice: %v", err)
		}
		if err := l.Reserve(ctx, call("c2", "alice"), 200, 300); err != nil {
			t.Fatalf("150 spent + 500: %v", err)
		}
		if err := l.Settle(ctx, call("c2", "alice"), 700, 150); err != nil {
			t.Fatal(err)
		}
		if err := l.Check(ctx, call("", "alice")); !errors.As(err, &ex) || ex.Used != 1000 {
			t.Fatalf("check after 1000 spent = %v, want ExceededError with 1000 used", err)
		}
		// The next day starts again.
		clk.set(clk.now().Add(24 * time.Hour))
		if err := l.Check(ctx, call("", "alice")); err != nil {
			t.Fatalf("next day: %v", err)
		}
		got, err := l.Usage(ctx, budget.Filter{From: time.Time{}, To: clk.now(), GroupBy: []string{"principal"}})
		if err != nil {
			t.Fatal(err)
		}
		// Bob's call is still open: only settled calls are reported.
		want := []budget.Row{{Principal: "alice", Calls: 2, TokensIn: 800, TokensOut: 200, Cost: 800*1 + 200*2}}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("usage (-want +got):\n%s", d)
		}
	})
}

// TestLedgerConcurrentReserve: 20 calls of one principal reserving at
// once never hold more than the limit together.
func TestLedgerConcurrentReserve(t *testing.T) {
	storetest.Each(t, func(t *testing.T, u string) {
		ctx := context.Background()
		clk := &clock{t: time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)}
		l := open(t, u, "principal:alice=1000tokens/total,key:alice=5usd/month", clk)
		var wg sync.WaitGroup
		var mu sync.Mutex
		ok, refused := 0, 0
		for i := range 20 {
			wg.Go(func() {
				err := l.Reserve(ctx, call(fmt.Sprint("c", i), "alice"), 60, 40)
				var ex *budget.ExceededError
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					ok++
				case errors.As(err, &ex):
					refused++
				default:
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if ok != 10 || refused != 10 {
			t.Fatalf("reserved %d, refused %d; want 10 and 10", ok, refused)
		}
	})
}

// TestLedgerUsage: grouping and the principal filter.
func TestLedgerUsage(t *testing.T) {
	storetest.Each(t, func(t *testing.T, u string) {
		ctx := context.Background()
		clk := &clock{t: time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)}
		l := open(t, u, "", clk)
		for i, c := range []budget.Call{call("a1", "alice"), call("a2", "alice"), call("b1", "k/bob")} {
			if i == 1 {
				c.Model = "other"
			}
			if err := l.Settle(ctx, c, 10, 5); err != nil {
				t.Fatal(err)
			}
		}
		from, to := clk.now().Add(-time.Hour), clk.now().Add(time.Hour)
		got, err := l.Usage(ctx, budget.Filter{From: from, To: to, GroupBy: []string{"principal", "model"}})
		if err != nil {
			t.Fatal(err)
		}
		want := []budget.Row{
			{Principal: "alice", Model: "cheap", Calls: 1, TokensIn: 10, TokensOut: 5, Cost: 20},
			{Principal: "alice", Model: "other", Calls: 1, TokensIn: 10, TokensOut: 5},
			{Principal: "k/bob", Model: "cheap", Calls: 1, TokensIn: 10, TokensOut: 5, Cost: 20},
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("usage by principal, model (-want +got):\n%s", d)
		}
		got, err = l.Usage(ctx, budget.Filter{From: from, To: to, Principal: "k/bob"})
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]budget.Row{{Calls: 1, TokensIn: 10, TokensOut: 5, Cost: 20}}, got); d != "" {
			t.Errorf("bob's total (-want +got):\n%s", d)
		}
		if _, err := l.Usage(ctx, budget.Filter{From: from, To: to, GroupBy: []string{"cost; DROP TABLE x"}}); err == nil {
			t.Error("an unknown group was accepted")
		}
	})
}
