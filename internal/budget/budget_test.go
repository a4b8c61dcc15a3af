package budget_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul/internal/budget"
)

func TestParseBudgets(t *testing.T) {
	got, err := budget.ParseBudgets("principal:alice=200000tokens/day, principal:*=5usd/month,agent:researcher=1000000tokens/total,key:owui=0.25usd/month")
	if err != nil {
		t.Fatal(err)
	}
	want := []budget.Limit{
		{Scope: budget.ScopePrincipal, Name: "alice", Unit: budget.Tokens, Amount: 200000, Period: budget.Day},
		{Scope: budget.ScopePrincipal, Name: "*", Unit: budget.USD, Amount: 5_000_000, Period: budget.Month},
		{Scope: budget.ScopeAgent, Name: "researcher", Unit: budget.Tokens, Amount: 1000000, Period: budget.Total},
		{Scope: budget.ScopeKey, Name: "owui", Unit: budget.USD, Amount: 250_000, Period: budget.Month},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	for _, bad := range []string{"user:alice=1tokens/day", "principal:alice=1.5tokens/day", "principal:alice=1usd/week", "principal:alice=0.0000001usd/day", "alice=1usd/day"} {
		if _, err := budget.ParseBudgets(bad); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}

func TestParsePrices(t *testing.T) {
	p, err := budget.ParsePrices("llama3.1:8b=0/0,remote:gpt-4o=2.50/10.00,*=1/1")
	if err != nil {
		t.Fatal(err)
	}
	// 1000 in at $2.50/M and 100 out at $10/M: 2500 + 1000 micro-dollars.
	if got := p.Cost("remote:gpt-4o", 1000, 100); got != 3500 {
		t.Errorf("gpt-4o cost = %d micro-dollars, want 3500", got)
	}
	if got := p.Cost("llama3.1:8b", 1000, 100); got != 0 {
		t.Errorf("llama cost = %d, want 0", got)
	}
	if got := p.Cost("unnamed", 1, 1); got != 2 {
		t.Errorf("unnamed model (the * price) = %d, want 2", got)
	}
	for _, bad := range []string{"gpt-4o=2.5", "=1/1", "gpt=a/b"} {
		if _, err := budget.ParsePrices(bad); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}

func TestExceededMessage(t *testing.T) {
	lims, _ := budget.ParseBudgets("principal:*=1000tokens/day")
	at := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	err := error(&budget.ExceededError{Limit: lims[0], Name: "alice", Used: 1000, Reset: lims[0].Reset(at)})
	var ex *budget.ExceededError
	if !errors.As(err, &ex) {
		t.Fatal("not an ExceededError")
	}
	for _, want := range []string{"principal alice", "1000tokens per day", "principal:*=1000tokens/day", "resets at 2026-03-11T00:00:00Z"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
}
