// Package sqlitedb opens a SQLite file the way Longhaul's stores share one:
// a pool of one connection for writes, so one store's writers queue in Go
// instead of spinning on SQLite's lock, and a small read-only pool, which
// WAL lets read while the writer writes. The claim-check and conversation
// store and the memory store open the same file this way, each with its
// own writer: between them (and between processes) SQLite's busy timeout
// orders the writes.
package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// BusyTimeout is how long a connection waits for another connection's or
// process's lock.
const BusyTimeout = 10 * time.Second

// FilePath returns the file path of a sqlite:// database URL (the form of
// LONGHAUL_DATABASE_URL) for a store that opens the file itself through
// Open: a plain path, with no query, no :memory: and no file: URI. store
// names the store in the error.
func FilePath(store, rawURL string) (string, error) {
	path, ok := strings.CutPrefix(rawURL, "sqlite://")
	switch {
	case !ok:
		return "", fmt.Errorf("open %s %q: want sqlite:// and a plain file path", store, rawURL)
	case path == "":
		return "", fmt.Errorf("open %s %q: no file path", store, rawURL)
	case strings.ContainsRune(path, '?'):
		return "", fmt.Errorf("open %s %q: query parameters are not supported for sqlite", store, rawURL)
	case path == ":memory:" || strings.HasPrefix(path, "file:"):
		return "", fmt.Errorf("open %s %q: want a plain file path", store, rawURL)
	}
	return path, nil
}

// Open opens the file at path (creating its directory), switches it to WAL
// and runs schema in one immediate transaction before any reader connects,
// and returns the writer pool and a read-only pool of readers connections.
func Open(ctx context.Context, path string, schema []string, readers int) (w, r *sql.DB, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, nil, err
	}
	busy := fmt.Sprintf("_pragma=busy_timeout(%d)", BusyTimeout.Milliseconds())
	// _txlock=immediate: a transaction takes the write lock when it begins,
	// so two processes never both read and then both try to upgrade.
	// journal_mode is not set here but in migrate: switching a new file to
	// WAL answers SQLITE_BUSY at once, without waiting, when another
	// connection is doing the same.
	w, err = sql.Open("sqlite", path+"?"+busy+"&_txlock=immediate")
	if err != nil {
		return nil, nil, err
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	// The writer creates the file, switches it to WAL and creates the
	// schema before any reader connects; readers then find WAL set in the
	// file.
	if err := migrate(ctx, w, schema); err != nil {
		w.Close()
		return nil, nil, err
	}
	r, err = sql.Open("sqlite", path+"?"+busy+"&_pragma=query_only(1)")
	if err != nil {
		w.Close()
		return nil, nil, err
	}
	r.SetMaxOpenConns(readers)
	r.SetMaxIdleConns(readers)
	return w, r, nil
}

// migrate switches the file to WAL and creates the schema. Two processes
// opening a new file at once take turns: the schema is created in one
// immediate transaction, and the switch to WAL, which does not wait for
// locks, is retried while it reports SQLITE_BUSY.
func migrate(ctx context.Context, w *sql.DB, schema []string) error {
	deadline := time.Now().Add(BusyTimeout)
	for {
		err := tryMigrate(ctx, w, schema)
		if err == nil || !Busy(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func tryMigrate(ctx context.Context, w *sql.DB, schema []string) error {
	var mode string
	if err := w.QueryRowContext(ctx, `PRAGMA journal_mode=WAL`).Scan(&mode); err != nil {
		return fmt.Errorf("set WAL mode: %w", err)
	}
	if mode != "wal" {
		// SQLite reports the old mode when it could not change it.
		return fmt.Errorf("set WAL mode: journal mode is still %q: %w", mode, errBusy)
	}
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("create schema: %w", err)
	}
	defer tx.Rollback()
	for _, q := range schema {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("create schema: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("create schema: %w", err)
	}
	return nil
}

// errBusy marks a migrate step that may succeed when tried again.
var errBusy = errors.New("database is busy")

// Busy reports whether err is SQLite saying another connection holds the
// lock it needs.
func Busy(err error) bool {
	if errors.Is(err, errBusy) {
		return true
	}
	var e *sqlite.Error
	if !errors.As(err, &e) {
		return false
	}
	code := e.Code() & 0xff // the primary result code
	return code == sqlite3.SQLITE_BUSY || code == sqlite3.SQLITE_LOCKED
}
