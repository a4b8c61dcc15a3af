// Package usageapi serves GET /v1/usage: what model calls spent (tokens
// and cost) by principal, agent and model over a time range, from the
// usage ledger (internal/budget). An operator (a request with an API key
// LONGHAUL_USAGE_OPERATOR_KEYS names) sees every principal's; a principal
// of role admin the principals of its own API key (a proxy key's users:
// its tenant); anyone else only their own.
package usageapi

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/internal/budget"
	"github.com/longhaul-dev/longhaul/internal/identity"
)

// Store sums the ledger's settled calls (budget.Ledger).
type Store interface {
	Usage(ctx context.Context, f budget.Filter) ([]budget.Row, error)
}

var _ Store = (*budget.Ledger)(nil)

// OperatorRole is the role whose principals see the usage of every
// principal of their own API key.
const OperatorRole = "admin"

// Handlers serve the usage route.
type Handlers struct {
	Store Store
	// Now is the clock the default range ends at; nil is time.Now.
	Now func() time.Time
	// Operators are the names of the API keys whose requests see every
	// principal's usage, of every key (LONGHAUL_USAGE_OPERATOR_KEYS).
	Operators []string
}

// Row is one group's spend, as the route answers it.
type Row struct {
	budget.Row
	// CostUSD is the cost in US dollars (LONGHAUL_MODEL_PRICES).
	CostUSD float64 `json:"cost_usd"`
}

// Response is GET /v1/usage's answer.
type Response struct {
	Object  string   `json:"object"` // "list"
	From    string   `json:"from"`
	To      string   `json:"to"`
	GroupBy []string `json:"group_by"`
	Data    []Row    `json:"data"`
}

// Get answers GET /v1/usage?from=&to=&group_by=&principal=. from and to
// are RFC 3339 times or dates (UTC); the range is [from, to), by default
// from the start of the current month to now. group_by is a
// comma-separated list of principal, agent and model; none sums the range
// into one row. principal narrows an operator's answer to one principal;
// anyone else may name only themselves.
func (h *Handlers) Get(c *fiber.Ctx) error {
	if h.Store == nil {
		return web.NotFound("usage is not recorded here")
	}
	f, err := h.filter(c)
	if err != nil {
		return err
	}
	rows, err := h.Store.Usage(c.UserContext(), f)
	if err != nil {
		return web.Internal("the usage could not be read")
	}
	out := Response{Object: "list", From: f.From.Format(time.RFC3339), To: f.To.Format(time.RFC3339), GroupBy: f.GroupBy, Data: make([]Row, 0, len(rows))}
	for _, r := range rows {
		out.Data = append(out.Data, Row{Row: r, CostUSD: float64(r.Cost) / 1e6})
	}
	return c.JSON(out)
}

// filter reads the request's range, grouping and principal, and confines
// a caller who is not an operator to their own spend.
func (h *Handlers) filter(c *fiber.Ctx) (budget.Filter, error) {
	now := time.Now
	if h.Now != nil {
		now = h.Now
	}
	t := now().UTC()
	f := budget.Filter{From: time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC), To: t.Add(time.Second)}
	var err error
	if v := c.Query("from"); v != "" {
		if f.From, err = parseTime(v); err != nil {
			return f, web.BadRequest("from: " + err.Error())
		}
	}
	if v := c.Query("to"); v != "" {
		if f.To, err = parseTime(v); err != nil {
			return f, web.BadRequest("to: " + err.Error())
		}
	}
	if !f.To.After(f.From) {
		return f, web.BadRequest("to must be after from")
	}
	f.GroupBy = []string{}
	for g := range strings.SplitSeq(c.Query("group_by"), ",") {
		g = strings.TrimSpace(g)
		switch {
		case g == "":
		case !slices.Contains(budget.GroupNames, g):
			return f, web.BadRequest("group_by: " + g + " is not one of " + strings.Join(budget.GroupNames, ", "))
		case !slices.Contains(f.GroupBy, g):
			f.GroupBy = append(f.GroupBy, g)
		}
	}
	p := web.Principal(c)
	f.Principal = c.Query("principal")
	switch {
	case h.operator(p):
	case p.User.Role == OperatorRole && p.Key != "":
		// An admin of a tenant: its own key's principals, no other's.
		f.Key = p.Key
		if f.Principal != "" && budget.KeyOf(f.Principal) != p.Key {
			return f, web.Forbidden("principal: an admin reads the usage of its own API key's principals only; every principal's needs an operator key (LONGHAUL_USAGE_OPERATOR_KEYS)")
		}
	default:
		if f.Principal != "" && f.Principal != p.Name {
			return f, web.Forbidden("principal: only an admin (role " + OperatorRole + ") of the same API key, or an operator key, may read another principal's usage")
		}
		f.Principal = p.Name
	}
	return f, nil
}

// operator reports whether p came with an operator key: one of
// h.Operators, and the key's own principal (a proxy key's end users,
// whatever their role, are not the operator).
func (h *Handlers) operator(p identity.Principal) bool {
	return p.Key != "" && p.Name == p.Key && slices.Contains(h.Operators, p.Key)
}

// parseTime reads an RFC 3339 time or a date, as UTC.
func parseTime(v string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t.UTC(), nil
	}
	t, err := time.Parse(time.DateOnly, v)
	if err != nil {
		return time.Time{}, &time.ParseError{Layout: "RFC 3339 or YYYY-MM-DD", Value: v, Message: ": want an RFC 3339 time (2026-03-01T00:00:00Z) or a date (2026-03-01)"}
	}
	return t, nil
}
