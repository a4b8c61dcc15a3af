package store

import (
	"context"
	"database/sql"
	"errors"
)

var _ Backlog = (*sqliteStore)(nil)

// sqliteBacklog runs the backlog's statements on the SQLite store: writes
// on its one writer connection, reads on the read-only pool.
type sqliteBacklog struct{ s *sqliteStore }

// sqliteQuerier is what *sql.DB and *sql.Tx share.
type sqliteQuerier interface {
	ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
}

type sqliteBacklogTx struct{ q sqliteQuerier }

func (t sqliteBacklogTx) exec(ctx context.Context, q string, args ...any) (int64, error) {
	res, err := t.q.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (t sqliteBacklogTx) queryRow(ctx context.Context, q string, args []any, dest ...any) error {
	err := t.q.QueryRowContext(ctx, q, args...).Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return errNoRow
	}
	return err
}

func (t sqliteBacklogTx) query(ctx context.Context, q string, args ...any) (rows, func(), error) {
	rs, err := t.q.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, nil, err
	}
	return rs, func() { rs.Close() }, nil
}

func (b sqliteBacklog) write(ctx context.Context, fn func(backlogTx) error) error {
	tx, err := b.s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(sqliteBacklogTx{tx}); err != nil {
		return err
	}
	return tx.Commit()
}

func (b sqliteBacklog) read() backlogTx { return sqliteBacklogTx{b.s.r} }
