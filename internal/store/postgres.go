package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/longhaul-dev/longhaul/internal/redact"
)

// postgresSchema creates the blobs table in the first schema of the
// connection's search_path. id orders a run's blobs by creation.
var postgresSchema = []string{
	`CREATE TABLE IF NOT EXISTS blobs (
		id         BIGINT      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		ref        TEXT        NOT NULL UNIQUE,
		run        TEXT        NOT NULL,
		kind       TEXT        NOT NULL,
		name       TEXT        NOT NULL,
		size       BIGINT      NOT NULL,
		created_at TIMESTAMPTZ NOT NULL,
		data       BYTEA       NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS blobs_run_id ON blobs (run, id)`,
	// For the retention job; created on the next open of a database made
	// before it existed.
	`CREATE INDEX IF NOT EXISTS blobs_created_at ON blobs (created_at)`,
	// The conversation store (conversations.go).
	`CREATE TABLE IF NOT EXISTS conversations (
		user_key   TEXT        NOT NULL,
		chat_id    TEXT        NOT NULL,
		title      TEXT        NOT NULL,
		created_at TIMESTAMPTZ NOT NULL,
		updated_at TIMESTAMPTZ NOT NULL,
		PRIMARY KEY (user_key, chat_id)
	)`,
	`CREATE INDEX IF NOT EXISTS conversations_user_updated ON conversations (user_key, updated_at, chat_id)`,
	`CREATE TABLE IF NOT EXISTS conversation_turns (
		user_key          TEXT        NOT NULL,
		chat_id           TEXT        NOT NULL,
		run_id            TEXT        NOT NULL,
		turn              INTEGER     NOT NULL,
		agent             TEXT        NOT NULL,
		status            TEXT        NOT NULL,
		answer_key        TEXT        NOT NULL,
		visible_key       TEXT        NOT NULL,
		title             TEXT        NOT NULL,
		prompt_tokens     BIGINT      NOT NULL,
		completion_tokens BIGINT      NOT NULL,
		total_tokens      BIGINT      NOT NULL,
		started_at        TIMESTAMPTZ NOT NULL,
		finished_at       TIMESTAMPTZ NOT NULL,
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
		data       BYTEA NOT NULL,
		updated_at TIMESTAMPTZ NOT NULL,
		PRIMARY KEY (user_key, kind, name)
	)`,
	`CREATE INDEX IF NOT EXISTS user_credentials_kind_updated ON user_credentials (kind, updated_at)`,
	// The backlog (backlog.go). Times are Unix microseconds, UTC, on both
	// backends; closed_at is 0 while an item is active. add_key is the
	// idempotency key of the tool call that added the item ('' for none).
	`CREATE TABLE IF NOT EXISTS backlog_items (
		user_key   TEXT    NOT NULL,
		id         BIGINT  NOT NULL,
		title      TEXT    NOT NULL,
		notes      TEXT    NOT NULL,
		priority   TEXT    NOT NULL,
		status     TEXT    NOT NULL,
		chat_id    TEXT    NOT NULL,
		run_id     TEXT    NOT NULL,
		add_key    TEXT    NOT NULL,
		created_at BIGINT  NOT NULL,
		updated_at BIGINT  NOT NULL,
		closed_at  BIGINT  NOT NULL,
		PRIMARY KEY (user_key, id)
	)`,
	`CREATE UNIQUE INDEX IF NOT EXISTS backlog_items_add_key ON backlog_items (user_key, add_key) WHERE add_key <> ''`,
	`CREATE INDEX IF NOT EXISTS backlog_items_chat ON backlog_items (user_key, chat_id)`,
	// The last id each user's backlog gave out; its row also serialises
	// one user's adds, so the cap holds under concurrent calls.
	`CREATE TABLE IF NOT EXISTS backlog_counters (
		user_key TEXT    NOT NULL PRIMARY KEY,
		last_id  BIGINT  NOT NULL
	)`,
}

// postgresSchemaLock is the advisory lock key held while the schema is
// created: CREATE TABLE IF NOT EXISTS alone fails when two processes run it
// at the same moment.
const postgresSchemaLock = "longhaul/store/schema"

// postgresStore is the PostgreSQL Store, on a pgx connection pool.
type postgresStore struct {
	pool *pgxpool.Pool
	opts options
	// backlogImpl is the backlog, on the same pool (Backlog).
	backlogImpl
}

var _ Store = (*postgresStore)(nil)

func openPostgres(ctx context.Context, rawURL string, o options) (*postgresStore, error) {
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		// pgx's parse errors may quote the URL, password included.
		return nil, fmt.Errorf("open store %s: invalid postgres URL", redact.URLs(rawURL))
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", redact.URLs(rawURL), err)
	}
	s := &postgresStore{pool: pool, opts: o}
	s.backlogImpl = backlogImpl{db: postgresBacklog{s}, opts: o}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open store %s: %w", redact.URLs(rawURL), err)
	}
	return s, nil
}

// migrate creates the schema under a transaction-scoped advisory lock, so
// two processes starting at once take turns.
func (s *postgresStore) migrate(ctx context.Context) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, postgresSchemaLock); err != nil {
			return fmt.Errorf("create schema: %w", err)
		}
		for _, q := range postgresSchema {
			if _, err := tx.Exec(ctx, q); err != nil {
				return fmt.Errorf("create schema: %w", err)
			}
		}
		return nil
	})
}

func (s *postgresStore) Put(ctx context.Context, b Blob) (string, error) {
	b, err := prepare(b, s.opts)
	if err != nil {
		return "", err
	}
	_, err = s.pool.Exec(ctx,
		`INSERT INTO blobs (ref, run, kind, name, size, created_at, data)
		 VALUES ($1, $2, $3, $4, $5, $6, $7)
		 ON CONFLICT (ref) DO NOTHING`,
		b.Ref, b.Run, b.Kind, b.Name, b.Size, b.CreatedAt, b.Data)
	if err != nil {
		return "", fmt.Errorf("put blob %s/%s/%s: %w", b.Run, b.Kind, b.Name, err)
	}
	return b.Ref, nil
}

func (s *postgresStore) Get(ctx context.Context, ref string) (Blob, error) {
	if !validRef(ref) {
		return Blob{}, fmt.Errorf("get blob %q: %w", ref, ErrNotFound)
	}
	b := Blob{Ref: ref}
	err := s.pool.QueryRow(ctx,
		`SELECT run, kind, name, size, created_at, data FROM blobs WHERE ref = $1`, ref).
		Scan(&b.Run, &b.Kind, &b.Name, &b.Size, &b.CreatedAt, &b.Data)
	if errors.Is(err, pgx.ErrNoRows) {
		return Blob{}, fmt.Errorf("get blob %q: %w", ref, ErrNotFound)
	}
	if err != nil {
		return Blob{}, fmt.Errorf("get blob %q: %w", ref, err)
	}
	b.CreatedAt = b.CreatedAt.UTC()
	if b.Data == nil {
		b.Data = []byte{}
	}
	return b, nil
}

func (s *postgresStore) List(ctx context.Context, run string) ([]Blob, error) {
	if !validText(run) {
		return []Blob{}, nil // Put never stored such a run
	}
	rows, err := s.pool.Query(ctx,
		`SELECT ref, kind, name, size, created_at FROM blobs WHERE run = $1 ORDER BY id`, run)
	if err != nil {
		return nil, fmt.Errorf("list blobs of %q: %w", run, err)
	}
	out := []Blob{}
	for rows.Next() {
		b := Blob{Run: run}
		if err := rows.Scan(&b.Ref, &b.Kind, &b.Name, &b.Size, &b.CreatedAt); err != nil {
			rows.Close()
			return nil, fmt.Errorf("list blobs of %q: %w", run, err)
		}
		b.CreatedAt = b.CreatedAt.UTC()
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list blobs of %q: %w", run, err)
	}
	return out, nil
}

func (s *postgresStore) DeleteRun(ctx context.Context, run string) error {
	if !validText(run) {
		return nil // Put never stored such a run
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM blobs WHERE run = $1`, run); err != nil {
		return fmt.Errorf("delete blobs of %q: %w", run, err)
	}
	return nil
}

func (s *postgresStore) RunsBefore(ctx context.Context, t time.Time) ([]string, error) {
	rows, err := s.pool.Query(ctx,
		`SELECT run FROM blobs WHERE created_at < $1 UNION SELECT run_id FROM conversation_turns WHERE started_at < $1`, timestamp(t))
	if err != nil {
		return nil, fmt.Errorf("list runs with blobs before %v: %w", t, err)
	}
	runs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list runs with blobs before %v: %w", t, err)
	}
	return runs, nil
}

func (s *postgresStore) DeleteBefore(ctx context.Context, run string, t time.Time) (int64, error) {
	if !validText(run) {
		return 0, nil // Put never stored such a run
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM blobs WHERE run = $1 AND created_at < $2`, run, timestamp(t))
	if err != nil {
		return 0, fmt.Errorf("delete blobs of %q before %v: %w", run, t, err)
	}
	return tag.RowsAffected(), nil
}

func (s *postgresStore) Close() error {
	s.pool.Close()
	return nil
}
