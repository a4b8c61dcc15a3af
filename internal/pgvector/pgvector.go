// Package pgvector turns on PostgreSQL's vector extension for a store that
// keeps embeddings (long-term memory, the documents' chunks), the same way
// for each: the extension when the server has it and the role may create
// it, an `embedding vector` column on the store's table, and whether the
// extension's HNSW index scans iteratively (pgvector 0.8), so a filtered
// search is not starved. A server without it leaves the store searching
// exactly, in Go, and says why.
package pgvector

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Tx is what Enable needs of a transaction; each store adapts its driver's
// (pgx.Tx, *sql.Tx) to it.
type Tx interface {
	Exec(ctx context.Context, sql string) error
	// QueryRow runs a query of one row and scans it into dest.
	QueryRow(ctx context.Context, sql string, dest ...any) error
}

// Support is what Enable found.
type Support struct {
	// Vector: the extension is on and table has an embedding column.
	Vector bool
	// Iterative: its HNSW index scans iteratively (pgvector 0.8 or later).
	Iterative bool
	// Why names the reason Vector is false, for the start-up line.
	Why string
}

// Enable, inside tx, creates the vector extension if the server has it and
// adds an `embedding vector` column to table. A server without the
// extension, or a role that may not create it, is no error: Support says
// why. Creating the extension is tried under a savepoint, so tx stays
// usable when it fails.
func Enable(ctx context.Context, tx Tx, table string) (Support, error) {
	var available bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')`, &available); err != nil {
		return Support{}, fmt.Errorf("look for pgvector: %w", err)
	}
	if !available {
		return Support{Why: "the server has no pgvector extension"}, nil
	}
	if err := tx.Exec(ctx, `SAVEPOINT vector`); err != nil {
		return Support{}, err
	}
	if err := tx.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS vector`); err != nil {
		if rerr := tx.Exec(ctx, `ROLLBACK TO SAVEPOINT vector`); rerr != nil {
			return Support{}, rerr
		}
		return Support{Why: "CREATE EXTENSION vector failed: " + err.Error()}, nil
	}
	if err := tx.Exec(ctx, `ALTER TABLE `+table+` ADD COLUMN IF NOT EXISTS embedding vector`); err != nil {
		return Support{}, fmt.Errorf("add the embedding column: %w", err)
	}
	var version string
	if err := tx.QueryRow(ctx, `SELECT extversion FROM pg_extension WHERE extname = 'vector'`, &version); err != nil {
		return Support{}, fmt.Errorf("read the pgvector version: %w", err)
	}
	return Support{Vector: true, Iterative: VersionAtLeast(version, 0, 8)}, nil
}

// VersionAtLeast reports whether the dotted version v is at least
// major.minor.
func VersionAtLeast(v string, major, minor int) bool {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}
