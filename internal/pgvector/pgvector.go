// Package pgvector turns on PostgreSQL's vector extension for a store that
// keeps embeddings (long-term memory, the documents' chunks), the same way
// for each: the extension when the server has it and the role may create
// it, an `embedding vector` column on the store's table, whether the
// extension's HNSW index scans iteratively (pgvector 0.8), so a filtered
// search is not starved, and one partial HNSW index per vector length. A
// server without it leaves the store searching exactly, in Go, and says
// why.
package pgvector

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/longhaul-dev/longhaul/internal/sqldb"
)

// Tx is what Enable needs of a transaction (*sql.Tx has it).
type Tx interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
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
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')`).Scan(&available); err != nil {
		return Support{}, fmt.Errorf("look for pgvector: %w", err)
	}
	if !available {
		return Support{Why: "the server has no pgvector extension"}, nil
	}
	if _, err := tx.ExecContext(ctx, `SAVEPOINT vector`); err != nil {
		return Support{}, err
	}
	if _, err := tx.ExecContext(ctx, `CREATE EXTENSION IF NOT EXISTS vector`); err != nil {
		if _, rerr := tx.ExecContext(ctx, `ROLLBACK TO SAVEPOINT vector`); rerr != nil {
			return Support{}, rerr
		}
		return Support{Why: "CREATE EXTENSION vector failed: " + err.Error()}, nil
	}
	if _, err := tx.ExecContext(ctx, `ALTER TABLE `+table+` ADD COLUMN IF NOT EXISTS embedding vector`); err != nil {
		return Support{}, fmt.Errorf("add the embedding column: %w", err)
	}
	var version string
	if err := tx.QueryRowContext(ctx, `SELECT extversion FROM pg_extension WHERE extname = 'vector'`).Scan(&version); err != nil {
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

// Literal is v in pgvector's text form, for a `?::vector` argument.
func Literal(v []float32) string {
	var b strings.Builder
	b.Grow(len(v) * 12)
	b.WriteByte('[')
	for i, f := range v {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatFloat(float64(f), 'g', -1, 32))
	}
	b.WriteByte(']')
	return b.String()
}

// Indexes builds a table's HNSW indexes (cosine), each once per process:
// a partial index per vector length, <table>_hnsw_<dim>, as one column
// holds the vectors of every embedding model.
type Indexes struct {
	// Table is the table with the embedding and dim columns.
	Table string
	// Lock is the advisory lock key the store's schema changes take.
	Lock string

	mu   sync.Mutex
	done map[int]bool
}

// Ensure builds the index of vectors of dim dimensions unless it exists.
func (x *Indexes) Ensure(ctx context.Context, db *sqldb.DB, dim int) error {
	x.mu.Lock()
	done := x.done[dim]
	x.mu.Unlock()
	if done {
		return nil
	}
	d := strconv.Itoa(dim) // an int: safe to put in the statement
	err := db.Write(ctx, func(tx sqldb.Tx) error {
		if err := tx.Lock(ctx, x.Lock); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `CREATE INDEX IF NOT EXISTS `+x.Table+`_hnsw_`+d+` ON `+x.Table+`
			USING hnsw ((embedding::vector(`+d+`)) vector_cosine_ops) WHERE dim = `+d)
		return err
	})
	if err != nil {
		return fmt.Errorf("create the hnsw index of %d dimensions: %w", dim, err)
	}
	x.mu.Lock()
	if x.done == nil {
		x.done = map[int]bool{}
	}
	x.done[dim] = true
	x.mu.Unlock()
	return nil
}

// Column is a store's embedding column: what Enable found for it and the
// HNSW indexes built on it. Open sets it up.
type Column struct {
	Support
	Indexes
}

// Open opens the column's store as sqldb.Open does, the column on table:
// once cfg.Schema is created, on PostgreSQL under cfg.Lock, it runs Enable
// on table and keeps what it found; on SQLite Support stays zero.
func (c *Column) Open(ctx context.Context, rawURL, table string, cfg sqldb.Config) (*sqldb.DB, error) {
	c.Table, c.Lock = table, cfg.Lock
	cfg.Setup = c.setup
	return sqldb.Open(ctx, rawURL, cfg)
}

func (c *Column) setup(ctx context.Context, tx sqldb.Tx) error {
	if !tx.Postgres() {
		return nil
	}
	sup, err := Enable(ctx, tx.Raw, c.Table)
	c.Support = sup
	return err
}

// Normalize returns v scaled to unit length, and false for a zero or
// non-finite vector: the vectors both stores keep, so a dot
// product is their cosine similarity.
func Normalize(v []float32) ([]float32, bool) {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	n := math.Sqrt(sum)
	if n == 0 || math.IsNaN(n) || math.IsInf(n, 0) {
		return nil, false
	}
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(float64(x) / n)
	}
	return out, true
}
