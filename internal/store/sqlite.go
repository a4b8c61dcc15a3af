package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/longhaul-dev/longhaul/internal/sqlitedb"
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
	// The conversation store (conversations.go); times in Unix
	// microseconds, UTC.
	`CREATE TABLE IF NOT EXISTS conversations (
		user_key   TEXT    NOT NULL,
		chat_id    TEXT    NOT NULL,
		title      TEXT    NOT NULL,
		created_at INTEGER NOT NULL,
		updated_at INTEGER NOT NULL,
		PRIMARY KEY (user_key, chat_id)
	)`,
	`CREATE INDEX IF NOT EXISTS conversations_user_updated ON conversations (user_key, updated_at, chat_id)`,
	`CREATE TABLE IF NOT EXISTS conversation_turns (
		user_key          TEXT    NOT NULL,
		chat_id           TEXT    NOT NULL,
		run_id            TEXT    NOT NULL,
		turn              INTEGER NOT NULL,
		agent             TEXT    NOT NULL,
		status            TEXT    NOT NULL,
		answer_key        TEXT    NOT NULL,
		visible_key       TEXT    NOT NULL,
		title             TEXT    NOT NULL,
		prompt_tokens     INTEGER NOT NULL,
		completion_tokens INTEGER NOT NULL,
		total_tokens      INTEGER NOT NULL,
		started_at        INTEGER NOT NULL,
		finished_at       INTEGER NOT NULL,
		PRIMARY KEY (user_key, chat_id, run_id)
	)`,
	`CREATE TABLE IF NOT EXISTS conversation_messages (
		user_key TEXT    NOT NULL,
		chat_id  TEXT    NOT NULL,
		run_id   TEXT    NOT NULL,
		seq      INTEGER NOT NULL,
		data     TEXT    NOT NULL,
		PRIMARY KEY (user_key, chat_id, run_id, seq)
	)`,
	// For the retention job (RunsBefore, DeleteRunTurns): a run's turns
	// and messages by run, turns by start.
	`CREATE INDEX IF NOT EXISTS conversation_turns_started ON conversation_turns (started_at)`,
	`CREATE INDEX IF NOT EXISTS conversation_turns_run ON conversation_turns (run_id)`,
	`CREATE INDEX IF NOT EXISTS conversation_messages_run ON conversation_messages (run_id)`,
	// Users' sealed credentials (credentials.go): OAuth tokens of MCP
	// servers, HTTP-tool secrets, pending OAuth states.
	`CREATE TABLE IF NOT EXISTS user_credentials (
		user_key   TEXT NOT NULL,
		kind       TEXT NOT NULL,
		name       TEXT NOT NULL,
		data       BLOB NOT NULL,
		updated_at INTEGER NOT NULL,
		PRIMARY KEY (user_key, kind, name)
	)`,
	`CREATE INDEX IF NOT EXISTS user_credentials_kind_updated ON user_credentials (kind, updated_at)`,
	// The backlog (backlog.go). Times are Unix microseconds, UTC, on both
	// backends; closed_at is 0 while an item is active. add_key is the
	// idempotency key of the tool call that added the item ('' for none).
	`CREATE TABLE IF NOT EXISTS backlog_items (
		user_key   TEXT    NOT NULL,
		id         INTEGER NOT NULL,
		title      TEXT    NOT NULL,
		notes      TEXT    NOT NULL,
		priority   TEXT    NOT NULL,
		status     TEXT    NOT NULL,
		chat_id    TEXT    NOT NULL,
		run_id     TEXT    NOT NULL,
		add_key    TEXT    NOT NULL,
		created_at INTEGER NOT NULL,
		updated_at INTEGER NOT NULL,
		closed_at  INTEGER NOT NULL,
		PRIMARY KEY (user_key, id)
	)`,
	`CREATE UNIQUE INDEX IF NOT EXISTS backlog_items_add_key ON backlog_items (user_key, add_key) WHERE add_key <> ''`,
	`CREATE INDEX IF NOT EXISTS backlog_items_chat ON backlog_items (user_key, chat_id)`,
	// The last id each user's backlog gave out; its row also serialises
	// one user's adds, so the cap holds under concurrent calls.
	`CREATE TABLE IF NOT EXISTS backlog_counters (
		user_key TEXT    NOT NULL PRIMARY KEY,
		last_id  INTEGER NOT NULL
	)`,
}

// sqliteReaders is the size of the read-only connection pool.
const sqliteReaders = 4

// sqliteStore is the SQLite Store: a pool of one connection for writes, so
// writers in this process queue in Go instead of spinning on SQLite's lock,
// and a small read-only pool, which WAL lets read while the writer writes.
type sqliteStore struct {
	w, r *sql.DB
	opts options
	// backlogImpl is the backlog, on the same connections (Backlog).
	backlogImpl
}

var _ Store = (*sqliteStore)(nil)

func openSQLite(ctx context.Context, path string, o options) (*sqliteStore, error) {
	w, r, err := sqlitedb.Open(ctx, path, sqliteSchema, sqliteReaders)
	if err != nil {
		return nil, fmt.Errorf("open store sqlite %s: %w", path, err)
	}
	s := &sqliteStore{w: w, r: r, opts: o}
	s.backlogImpl = backlogImpl{db: sqliteBacklog{s}, opts: o}
	return s, nil
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
	us := timestamp(t).UnixMicro()
	rows, err := s.r.QueryContext(ctx,
		`SELECT run FROM blobs WHERE created_at < ? UNION SELECT run_id FROM conversation_turns WHERE started_at < ?`, us, us)
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
