package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"modernc.org/sqlite" // the "sqlite" database/sql driver and its Error type
	sqlite3 "modernc.org/sqlite/lib"
)

// sqliteSchema creates the blobs table. id orders a run's blobs by creation;
// data comes last so List does not read the overflow pages of big payloads.
var sqliteSchema = []string{
	`CREATE TABLE IF NOT EXISTS blobs (
		id         INTEGER PRIMARY KEY,
		ref        TEXT    NOT NULL UNIQUE,
		run        TEXT    NOT NULL,
		kind       TEXT    NOT NULL,
		name       TEXT    NOT NULL,
		size       INTEGER NOT NULL,
		created_at INTEGER NOT NULL, -- Unix microseconds, UTC
		data       BLOB    NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS blobs_run_id ON blobs (run, id)`,
	// For the retention job; created on the next open of a file made
	// before it existed.
	`CREATE INDEX IF NOT EXISTS blobs_created_at ON blobs (created_at)`,
}

const (
	// sqliteBusyTimeout is how long a connection waits for another
	// connection's or process's lock before giving up with SQLITE_BUSY.
	sqliteBusyTimeout = 10 * time.Second
	// sqliteReaders is the size of the read-only connection pool.
	sqliteReaders = 4
)

// sqliteStore is the SQLite Store: a pool of one connection for writes, so
// writers in this process queue in Go instead of spinning on SQLite's lock,
// and a small read-only pool, which WAL lets read while the writer writes.
type sqliteStore struct {
	w, r *sql.DB
	opts options
}

var _ Store = (*sqliteStore)(nil)

func openSQLite(ctx context.Context, path string, o options) (*sqliteStore, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("open store sqlite %s: %w", path, err)
	}
	busy := fmt.Sprintf("_pragma=busy_timeout(%d)", sqliteBusyTimeout.Milliseconds())
	// _txlock=immediate: a transaction takes the write lock when it begins,
	// so two processes never both read and then both try to upgrade.
	// journal_mode is not set here but in migrate: switching a new file to
	// WAL answers SQLITE_BUSY at once, without waiting, when another
	// connection is doing the same.
	w, err := sql.Open("sqlite", path+"?"+busy+"&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("open store sqlite %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	s := &sqliteStore{w: w, opts: o}
	// The writer creates the file, switches it to WAL and creates the
	// schema before any reader connects; readers then find WAL set in the
	// file.
	if err := s.migrate(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("open store sqlite %s: %w", path, err)
	}
	r, err := sql.Open("sqlite", path+"?"+busy+"&_pragma=query_only(1)")
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open store sqlite %s: %w", path, err)
	}
	r.SetMaxOpenConns(sqliteReaders)
	r.SetMaxIdleConns(sqliteReaders)
	s.r = r
	return s, nil
}

// migrate switches the file to WAL and creates the schema. Two processes
// opening a new file at once take turns: the schema is created in one
// immediate transaction, and the switch to WAL, which does not wait for
// locks, is retried while it reports SQLITE_BUSY.
func (s *sqliteStore) migrate(ctx context.Context) error {
	deadline := time.Now().Add(sqliteBusyTimeout)
	for {
		err := s.tryMigrate(ctx)
		if err == nil || !sqliteBusy(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (s *sqliteStore) tryMigrate(ctx context.Context) error {
	var mode string
	if err := s.w.QueryRowContext(ctx, `PRAGMA journal_mode=WAL`).Scan(&mode); err != nil {
		return fmt.Errorf("set WAL mode: %w", err)
	}
	if mode != "wal" {
		// SQLite reports the old mode when it could not change it.
		return fmt.Errorf("set WAL mode: journal mode is still %q: %w", mode, errSQLiteBusy)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("create schema: %w", err)
	}
	defer tx.Rollback()
	for _, q := range sqliteSchema {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("create schema: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("create schema: %w", err)
	}
	return nil
}

// errSQLiteBusy marks a migrate step that may succeed when tried again.
var errSQLiteBusy = errors.New("database is busy")

// sqliteBusy reports whether err is SQLite saying another connection holds
// the lock it needs.
func sqliteBusy(err error) bool {
	if errors.Is(err, errSQLiteBusy) {
		return true
	}
	var e *sqlite.Error
	if !errors.As(err, &e) {
		return false
	}
	code := e.Code() & 0xff // the primary result code
	return code == sqlite3.SQLITE_BUSY || code == sqlite3.SQLITE_LOCKED
}

func (s *sqliteStore) Put(ctx context.Context, b Blob) (string, error) {
	b, err := prepare(b, s.opts)
	if err != nil {
		return "", err
	}
	_, err = s.w.ExecContext(ctx,
		`INSERT INTO blobs (ref, run, kind, name, size, created_at, data)
		 VALUES (?, ?, ?, ?, ?, ?, ?)
		 ON CONFLICT (ref) DO NOTHING`,
		b.Ref, b.Run, b.Kind, b.Name, b.Size, b.CreatedAt.UnixMicro(), b.Data)
	if err != nil {
		return "", fmt.Errorf("put blob %s/%s/%s: %w", b.Run, b.Kind, b.Name, err)
	}
	return b.Ref, nil
}

func (s *sqliteStore) Get(ctx context.Context, ref string) (Blob, error) {
	if !validRef(ref) {
		return Blob{}, fmt.Errorf("get blob %q: %w", ref, ErrNotFound)
	}
	b := Blob{Ref: ref}
	var created int64
	err := s.r.QueryRowContext(ctx,
		`SELECT run, kind, name, size, created_at, data FROM blobs WHERE ref = ?`, ref).
		Scan(&b.Run, &b.Kind, &b.Name, &b.Size, &created, &b.Data)
	if errors.Is(err, sql.ErrNoRows) {
		return Blob{}, fmt.Errorf("get blob %q: %w", ref, ErrNotFound)
	}
	if err != nil {
		return Blob{}, fmt.Errorf("get blob %q: %w", ref, err)
	}
	b.CreatedAt = time.UnixMicro(created).UTC()
	if b.Data == nil {
		b.Data = []byte{}
	}
	return b, nil
}

func (s *sqliteStore) List(ctx context.Context, run string) ([]Blob, error) {
	if !validText(run) {
		return []Blob{}, nil // Put never stored such a run
	}
	rows, err := s.r.QueryContext(ctx,
		`SELECT ref, kind, name, size, created_at FROM blobs WHERE run = ? ORDER BY id`, run)
	if err != nil {
		return nil, fmt.Errorf("list blobs of %q: %w", run, err)
	}
	defer rows.Close()
	out := []Blob{}
	for rows.Next() {
		b := Blob{Run: run}
		var created int64
		if err := rows.Scan(&b.Ref, &b.Kind, &b.Name, &b.Size, &created); err != nil {
			return nil, fmt.Errorf("list blobs of %q: %w", run, err)
		}
		b.CreatedAt = time.UnixMicro(created).UTC()
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list blobs of %q: %w", run, err)
	}
	return out, nil
}

func (s *sqliteStore) DeleteRun(ctx context.Context, run string) error {
	if !validText(run) {
		return nil // Put never stored such a run
	}
	if _, err := s.w.ExecContext(ctx, `DELETE FROM blobs WHERE run = ?`, run); err != nil {
		return fmt.Errorf("delete blobs of %q: %w", run, err)
	}
	return nil
}

func (s *sqliteStore) RunsBefore(ctx context.Context, t time.Time) ([]string, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT DISTINCT run FROM blobs WHERE created_at < ?`, timestamp(t).UnixMicro())
	if err != nil {
		return nil, fmt.Errorf("list runs with blobs before %v: %w", t, err)
	}
	defer rows.Close()
	runs := []string{}
	for rows.Next() {
		var run string
		if err := rows.Scan(&run); err != nil {
			return nil, fmt.Errorf("list runs with blobs before %v: %w", t, err)
		}
		runs = append(runs, run)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list runs with blobs before %v: %w", t, err)
	}
	return runs, nil
}

func (s *sqliteStore) DeleteBefore(ctx context.Context, run string, t time.Time) (int64, error) {
	if !validText(run) {
		return 0, nil // Put never stored such a run
	}
	res, err := s.w.ExecContext(ctx, `DELETE FROM blobs WHERE run = ? AND created_at < ?`, run, timestamp(t).UnixMicro())
	if err != nil {
		return 0, fmt.Errorf("delete blobs of %q before %v: %w", run, t, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("delete blobs of %q before %v: %w", run, t, err)
	}
	return n, nil
}

func (s *sqliteStore) Close() error {
	return errors.Join(s.r.Close(), s.w.Close())
}
