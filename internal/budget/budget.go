// Package budget keeps what model calls spend and holds it to limits: the
// price of each model (LONGHAUL_MODEL_PRICES), the limits of principals,
// agents and API keys (LONGHAUL_BUDGETS), and a durable ledger of calls in
// the stores' database (SQLite or PostgreSQL) where each model call first
// reserves what it may spend and then settles what it did. The reserve is
// one transaction that checks every limit that applies, so concurrent
// calls of one principal cannot together pass a limit; the ledger is
// keyed by the call (workflow, run, activity), so a retried call replaces
// its own reservation instead of adding another.
package budget

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Scope is what a limit counts the spend of.
type Scope string

// The scopes.
const (
	ScopePrincipal Scope = "principal"
	ScopeAgent     Scope = "agent"
	ScopeKey       Scope = "key"
)

// Unit is what a limit counts.
type Unit string

// The units: tokens (prompt and completion together) and US dollars.
const (
	Tokens Unit = "tokens"
	USD    Unit = "usd"
)

// Period is the span a limit counts over; it starts again at each
// period's start, in UTC.
type Period string

// The periods.
const (
	Day   Period = "day"
	Month Period = "month"
	Total Period = "total"
)

// Any is the name of a limit that applies to each principal, agent or key
// separately.
const Any = "*"

// Limit is one entry of LONGHAUL_BUDGETS: at most Amount (tokens, or
// micro-dollars for USD) per Period for the Name of Scope.
type Limit struct {
	Scope  Scope
	Name   string // Any: each one on its own
	Unit   Unit
	Amount int64 // tokens, or millionths of a dollar
	Period Period
}

// Start is when the period of l that holds t began (UTC); the zero time
// for Total.
func (l Limit) Start(t time.Time) time.Time {
	t = t.UTC()
	switch l.Period {
	case Day:
		return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	case Month:
		return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
	return time.Time{}
}

// Reset is when the period of l that holds t ends; the zero time for
// Total, which never does.
func (l Limit) Reset(t time.Time) time.Time {
	s := l.Start(t)
	switch l.Period {
	case Day:
		return s.AddDate(0, 0, 1)
	case Month:
		return s.AddDate(0, 1, 0)
	}
	return time.Time{}
}

// Applies reports whether l counts the spend of the call c.
func (l Limit) Applies(c Call) bool {
	v := c.value(l.Scope)
	return v != "" && (l.Name == Any || l.Name == v)
}

// String is l as LONGHAUL_BUDGETS writes it.
func (l Limit) String() string {
	return fmt.Sprintf("%s:%s=%s/%s", l.Scope, l.Name, l.amount(l.Amount), l.Period)
}

// amount is n in l's unit, as written: "1000tokens", "2.5usd".
func (l Limit) amount(n int64) string {
	if l.Unit == USD {
		return strconv.FormatFloat(float64(n)/1e6, 'f', -1, 64) + "usd"
	}
	return strconv.FormatInt(n, 10) + "tokens"
}

var limitForm = regexp.MustCompile(`^(principal|agent|key):([^=\s]+)=([0-9]+(?:\.[0-9]+)?)(tokens|usd)/(day|month|total)$`)

// ParseBudgets reads LONGHAUL_BUDGETS: comma-separated entries
// scope:name=amount unit/period, such as
//
//	principal:alice=200000tokens/day
//	principal:*=5usd/month
//	agent:researcher=1000000tokens/total
//	key:openwebui=50usd/month
//
// A name of * applies to each principal, agent or key separately. Tokens
// are whole; dollars have at most six decimals.
func ParseBudgets(s string) ([]Limit, error) {
	var out []Limit
	var errs []error
	for e := range strings.SplitSeq(s, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		m := limitForm.FindStringSubmatch(e)
		if m == nil {
			errs = append(errs, fmt.Errorf("budget %q: want scope:name=<amount>tokens|usd/day|month|total, scope principal, agent or key", e))
			continue
		}
		l := Limit{Scope: Scope(m[1]), Name: m[2], Unit: Unit(m[4]), Period: Period(m[5])}
		n, err := parseAmount(m[3], l.Unit)
		if err != nil {
			errs = append(errs, fmt.Errorf("budget %q: %w", e, err))
			continue
		}
		l.Amount = n
		out = append(out, l)
	}
	return out, errors.Join(errs...)
}

// parseAmount reads a limit's amount: whole tokens, or dollars as
// micro-dollars.
func parseAmount(s string, u Unit) (int64, error) {
	if u == Tokens {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("tokens are a whole number: %q", s)
		}
		return n, nil
	}
	return parseMicros(s)
}

// parseMicros reads a non-negative dollar amount as micro-dollars.
func parseMicros(s string) (int64, error) {
	whole, frac, _ := strings.Cut(s, ".")
	if len(frac) > 6 {
		return 0, fmt.Errorf("%q has more than six decimals", s)
	}
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || w > math.MaxInt64/1_000_000-1 {
		return 0, fmt.Errorf("%q is not an amount of dollars", s)
	}
	var f int64
	if frac != "" {
		f, err = strconv.ParseInt(frac+strings.Repeat("0", 6-len(frac)), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not an amount of dollars", s)
		}
	}
	return w*1e6 + f, nil
}

// Call is one model call as the ledger knows it.
type Call struct {
	// ID keys the call: the workflow id, run id and activity id, the same
	// on each attempt, so a retry replaces its reservation.
	ID        string
	Principal string
	// Key is the API key the principal came with: its name, or for a
	// proxy key's user the part of the principal before '/'.
	Key   string
	Agent string
	Model string
}

// KeyOf is the API key of a principal as internal/identity names it: the
// part before '/' of a proxy key's user ("owui/alice" is key owui's), the
// whole name otherwise (an API key's principal is the key's name).
func KeyOf(principal string) string {
	k, _, _ := strings.Cut(principal, "/")
	return k
}

func (c Call) value(s Scope) string {
	switch s {
	case ScopePrincipal:
		return c.Principal
	case ScopeAgent:
		return c.Agent
	case ScopeKey:
		return c.Key
	}
	return ""
}

// ExceededError is a call, or a request, refused because a limit is
// used up.
type ExceededError struct {
	Limit Limit
	// Name is the principal, agent or key whose limit it is.
	Name string
	// Used is what the period has spent and reserved so far; Want what
	// the call would have reserved (zero at admission).
	Used, Want int64
	// Reset is when the limit's period starts again; zero for a total.
	Reset time.Time
}

func (e *ExceededError) Error() string {
	when := "it does not reset (a total)"
	if !e.Reset.IsZero() {
		when = "it resets at " + e.Reset.Format(time.RFC3339)
	}
	per := "per " + string(e.Limit.Period)
	if e.Limit.Period == Total {
		per = "in total"
	}
	return fmt.Sprintf("budget exceeded: %s %s's limit of %s %s (%s) has %s used or reserved",
		e.Limit.Scope, e.Name, e.Limit.amount(e.Limit.Amount), per, e.Limit, e.Limit.amount(e.Used)) +
		want(e) + "; " + when
}

func want(e *ExceededError) string {
	if e.Want == 0 {
		return ""
	}
	return ", and this model call would reserve " + e.Limit.amount(e.Want)
}
