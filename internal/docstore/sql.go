package docstore

import (
	"context"
	"fmt"

	"github.com/longhaul-dev/longhaul/internal/pgvector"
	"github.com/longhaul-dev/longhaul/internal/sqldb"
)

// sqlStore is the Store of both databases: the same tables and statements
// on SQLite and PostgreSQL (internal/sqldb binds the placeholders), with
// the search's full-text ranking and, on PostgreSQL with pgvector, its
// vector ranking asked of the database's own indexes.
//
// Times are kept as Unix microseconds (0 = none) and ids are the objects'
// own; seq columns number the rows in the order they were created, which
// is the order the List methods page in.
type sqlStore struct {
	db   *sqldb.DB
	opts options
	// vec is the chunks' embedding column on PostgreSQL (zero on SQLite).
	vec pgvector.Column
}

var _ Store = (*sqlStore)(nil)

func (s *sqlStore) Backend() string {
	switch {
	case !s.db.Postgres():
		return "sqlite (exact search, fts5)"
	case s.vec.Vector:
		return "postgres (pgvector hnsw, tsvector)"
	}
	return "postgres (exact search: " + s.vec.Why + "; tsvector)"
}

func (s *sqlStore) Close() error { return s.db.Close() }

func checkOwner(op, owner string) error {
	if owner == "" || !sqldb.ValidText(owner) {
		return fmt.Errorf("%s: %w: no owner", op, ErrInvalid)
	}
	return nil
}

// deleteOne runs a DELETE of one row; no row is ErrNotFound.
func deleteOne(ctx context.Context, tx sqldb.Querier, q string, args ...any) error {
	n, err := sqldb.Affected(tx.ExecContext(ctx, q, args...))
	if err == nil && n == 0 {
		err = ErrNotFound
	}
	return err
}
