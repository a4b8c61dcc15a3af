package store

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

var _ Backlog = (*postgresStore)(nil)

// postgresBacklog runs the backlog's statements on the PostgreSQL pool.
type postgresBacklog struct{ s *postgresStore }

// pgQuerier is what *pgxpool.Pool and pgx.Tx share.
type pgQuerier interface {
	Exec(ctx context.Context, q string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, q string, args ...any) pgx.Row
	Query(ctx context.Context, q string, args ...any) (pgx.Rows, error)
}

type pgBacklogTx struct{ q pgQuerier }

// numbered rewrites the ? placeholders of q as $1, $2, …; the backlog's
// statements have no ? anywhere else.
func numbered(q string) string {
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func (t pgBacklogTx) exec(ctx context.Context, q string, args ...any) (int64, error) {
	tag, err := t.q.Exec(ctx, numbered(q), args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

func (t pgBacklogTx) queryRow(ctx context.Context, q string, args []any, dest ...any) error {
	err := t.q.QueryRow(ctx, numbered(q), args...).Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return errNoRow
	}
	return err
}

func (t pgBacklogTx) query(ctx context.Context, q string, args ...any) (rows, func(), error) {
	rs, err := t.q.Query(ctx, numbered(q), args...)
	if err != nil {
		return nil, nil, err
	}
	return rs, rs.Close, nil
}

func (b postgresBacklog) write(ctx context.Context, fn func(backlogTx) error) error {
	return pgx.BeginFunc(ctx, b.s.pool, func(tx pgx.Tx) error { return fn(pgBacklogTx{tx}) })
}

func (b postgresBacklog) read() backlogTx { return pgBacklogTx{b.s.pool} }
