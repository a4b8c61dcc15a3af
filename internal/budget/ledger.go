package budget

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/longhaul-dev/longhaul/internal/sqldb"
)

// schema is the ledger's one table, a row a model call. An open row (a
// reservation) holds what the call may spend, a settled one what it did;
// limits count both, so a reservation whose call never settles (its run
// was terminated between the two) stays counted at what it reserved.
// at is when the call was first reserved: the period it counts in.
var schema = []string{
	`CREATE TABLE IF NOT EXISTS model_spend (
		call_id    TEXT PRIMARY KEY,
		principal  TEXT NOT NULL,
		api_key    TEXT NOT NULL,
		agent      TEXT NOT NULL,
		model      TEXT NOT NULL,
		settled    {int} NOT NULL,
		tokens_in  {int} NOT NULL,
		tokens_out {int} NOT NULL,
		cost       {int} NOT NULL,
		at         {time} NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS model_spend_principal ON model_spend (principal, at)`,
	`CREATE INDEX IF NOT EXISTS model_spend_agent ON model_spend (agent, at)`,
	`CREATE INDEX IF NOT EXISTS model_spend_key ON model_spend (api_key, at)`,
	`CREATE INDEX IF NOT EXISTS model_spend_at ON model_spend (at)`,
}

// reserveLock serializes reservations on PostgreSQL (SQLite's write
// transactions already run one at a time): each reads the sums it checks
// and writes its row before the next reads.
const reserveLock = "longhaul/budget/reserve"

// Ledger records model calls' spend and holds it to the limits.
type Ledger struct {
	db     *sqldb.DB
	now    func() time.Time
	limits []Limit
	prices Prices
	group  committer
}

// Open opens the ledger in the database rawURL names (the forms of
// LONGHAUL_DATABASE_URL), creating its table if it is missing, with the
// limits and prices it applies.
func Open(ctx context.Context, rawURL string, limits []Limit, prices Prices, opts ...sqldb.Option) (*Ledger, error) {
	o := sqldb.NewOptions(opts...)
	db, err := sqldb.Open(ctx, rawURL, sqldb.Config{Store: "usage ledger", Schema: schema, Lock: "longhaul/budget/schema", MaxConns: o.MaxConns})
	if err != nil {
		return nil, err
	}
	if prices == nil {
		prices = Prices{}
	}
	l := &Ledger{db: db, now: o.Now, limits: limits, prices: prices}
	l.group.done = sync.NewCond(&l.group.mu)
	return l, nil
}

// Close closes the database, once the settlements being written are.
func (l *Ledger) Close() error {
	l.group.close()
	return l.db.Close()
}

// Limits are the limits the ledger applies.
func (l *Ledger) Limits() []Limit { return l.limits }

// Cost is what in and out tokens of model cost, in micro-dollars.
func (l *Ledger) Cost(model string, in, out int64) int64 { return l.prices.Cost(model, in, out) }

// Reserve records that c may spend in prompt and out completion tokens,
// if every limit that applies to c has room for them besides what its
// period has spent and reserved; otherwise it records nothing and returns
// an *ExceededError. A call reserved before (a retried attempt) has its
// reservation replaced, in the period it first counted in.
//
// A call no limit applies to reserves nothing (its settlement records it):
// without budgets, the model call waits on no write.
func (l *Ledger) Reserve(ctx context.Context, c Call, in, out int64) error {
	if !slices.ContainsFunc(l.limits, func(lim Limit) bool { return lim.Applies(c) }) {
		return nil
	}
	cost := l.prices.Cost(c.Model, in, out)
	return l.db.Write(ctx, func(tx sqldb.Tx) error {
		if err := tx.Lock(ctx, reserveLock); err != nil {
			return fmt.Errorf("reserve: %w", err)
		}
		at := l.now()
		var first time.Time
		switch err := tx.QueryRowContext(ctx, `SELECT at FROM model_spend WHERE call_id = ?`, c.ID).Scan(sqldb.TimeDest(&first)); {
		case err == nil:
			at = first
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("reserve: %w", err)
		}
		if err := l.check(ctx, tx, c, at, in+out, cost); err != nil {
			return err
		}
		return l.put(ctx, tx, c, false, in, out, cost, at)
	})
}

// put writes c's row; a row c has already keeps its at.
func (l *Ledger) put(ctx context.Context, tx sqldb.Tx, c Call, settled bool, in, out, cost int64, at time.Time) error {
	s := 0
	if settled {
		s = 1
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO model_spend (call_id, principal, api_key, agent, model, settled, tokens_in, tokens_out, cost, at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (call_id) DO UPDATE SET settled = excluded.settled, tokens_in = excluded.tokens_in,
			tokens_out = excluded.tokens_out, cost = excluded.cost, model = excluded.model`,
		c.ID, c.Principal, c.Key, c.Agent, c.Model, s, in, out, cost, tx.Time(at))
	if err != nil {
		return fmt.Errorf("record model call %s: %w", c.ID, err)
	}
	return nil
}

// Check returns an *ExceededError when a limit that applies to c is used
// up already: what admission asks before a run starts.
func (l *Ledger) Check(ctx context.Context, c Call) error {
	if len(l.limits) == 0 {
		return nil
	}
	return l.db.Read(ctx, func(tx sqldb.Tx) error {
		return l.check(ctx, tx, c, l.now(), 0, 0)
	})
}

// check returns an *ExceededError for the first limit that applies to c
// whose period (the one holding at) has no room for tokens and cost more,
// with the spend of calls other than c; with nothing more, for the first
// that is used up.
func (l *Ledger) check(ctx context.Context, tx sqldb.Tx, c Call, at time.Time, tokens, cost int64) error {
	for _, lim := range l.limits {
		if !lim.Applies(c) {
			continue
		}
		used, err := l.used(ctx, tx, lim, c, at)
		if err != nil {
			return err
		}
		want := tokens
		if lim.Unit == USD {
			want = cost
		}
		if used+want > lim.Amount || want == 0 && used >= lim.Amount {
			return &ExceededError{Limit: lim, Name: c.value(lim.Scope), Used: used, Want: want, Reset: lim.Reset(at)}
		}
	}
	return nil
}

// scopeColumn is the ledger's column of each scope.
var scopeColumn = map[Scope]string{ScopePrincipal: "principal", ScopeAgent: "agent", ScopeKey: "api_key"}

// used is what lim's period holding at has spent and reserved for c's
// principal, agent or key, leaving out c's own row.
func (l *Ledger) used(ctx context.Context, tx sqldb.Tx, lim Limit, c Call, at time.Time) (int64, error) {
	sum := "tokens_in + tokens_out"
	if lim.Unit == USD {
		sum = "cost"
	}
	q := `SELECT COALESCE(SUM(` + sum + `), 0) FROM model_spend WHERE ` + scopeColumn[lim.Scope] + ` = ? AND call_id <> ?`
	args := []any{c.value(lim.Scope), c.ID}
	if lim.Period != Total {
		q += ` AND at >= ? AND at < ?`
		args = append(args, tx.Time(lim.Start(at)), tx.Time(lim.Reset(at)))
	}
	var n int64
	if err := tx.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("sum %s spend: %w", lim.Scope, err)
	}
	return n, nil
}

// Filter selects the settled calls Usage reports.
type Filter struct {
	From, To time.Time // [From, To) by when each call was reserved
	// Principal, when set, keeps that principal's calls only.
	Principal string
	// Key, when set, keeps the calls of that API key's principals only.
	Key string
	// GroupBy are the dimensions rows are grouped by, of GroupNames, in
	// the order given; none sums everything into one row.
	GroupBy []string
}

// GroupNames are the dimensions Usage groups by.
var GroupNames = []string{"principal", "agent", "model"}

// Row is the spend of one group.
type Row struct {
	Principal string `json:"principal,omitempty"`
	Agent     string `json:"agent,omitempty"`
	Model     string `json:"model,omitempty"`
	Calls     int64  `json:"calls"`
	TokensIn  int64  `json:"input_tokens"`
	TokensOut int64  `json:"output_tokens"`
	// Cost is in micro-dollars.
	Cost int64 `json:"-"`
}

// Usage sums the settled calls f selects, by f.GroupBy, ordered by it.
func (l *Ledger) Usage(ctx context.Context, f Filter) ([]Row, error) {
	for _, g := range f.GroupBy {
		if !strings.Contains(" principal agent model ", " "+g+" ") {
			return nil, fmt.Errorf("group by %q: want one of %s", g, strings.Join(GroupNames, ", "))
		}
	}
	cols := strings.Join(f.GroupBy, ", ")
	q := `SELECT COUNT(*), COALESCE(SUM(tokens_in), 0), COALESCE(SUM(tokens_out), 0), COALESCE(SUM(cost), 0)`
	if cols != "" {
		q += ", " + cols
	}
	q += ` FROM model_spend WHERE settled = 1 AND at >= ? AND at < ?`
	args := []any{l.db.Time(f.From), l.db.Time(f.To)}
	if f.Principal != "" {
		q += ` AND principal = ?`
		args = append(args, f.Principal)
	}
	if f.Key != "" {
		q += ` AND api_key = ?`
		args = append(args, f.Key)
	}
	if cols != "" {
		q += ` GROUP BY ` + cols + ` ORDER BY ` + cols
	}
	rows, err := l.db.Reader().QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("usage: %w", err)
	}
	defer rows.Close()
	out := []Row{}
	for rows.Next() {
		var r Row
		dest := []any{&r.Calls, &r.TokensIn, &r.TokensOut, &r.Cost}
		for _, g := range f.GroupBy {
			dest = append(dest, map[string]*string{"principal": &r.Principal, "agent": &r.Agent, "model": &r.Model}[g])
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("usage: %w", err)
		}
		if r.Calls > 0 || cols == "" {
			out = append(out, r)
		}
	}
	return out, rows.Err()
}
