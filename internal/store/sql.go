package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/longhaul-dev/longhaul/internal/sqldb"
)

// schema creates the store's tables, in sqldb.Schema's words: {time} is
// Unix microseconds on SQLite and a timestamptz on PostgreSQL. The backlog
// keeps Unix microseconds on both. id orders a run's blobs by creation;
// data comes last so List does not read the overflow pages of big
// payloads.
var schema = []string{
	`CREATE TABLE IF NOT EXISTS blobs (
		id         {rowid},
		ref        TEXT    NOT NULL UNIQUE,
		run        TEXT    NOT NULL,
		kind       TEXT    NOT NULL,
		name       TEXT    NOT NULL,
		size       {int}   NOT NULL,
		created_at {time}  NOT NULL,
		data       {bytes} NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS blobs_run_id ON blobs (run, id)`,
	// For the retention job; created on the next open of a database made
	// before it existed.
	`CREATE INDEX IF NOT EXISTS blobs_created_at ON blobs (created_at)`,
	// The conversation store (conversations.go).
	`CREATE TABLE IF NOT EXISTS conversations (
		user_key   TEXT   NOT NULL,
		chat_id    TEXT   NOT NULL,
		title      TEXT   NOT NULL,
		created_at {time} NOT NULL,
		updated_at {time} NOT NULL,
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
		prompt_tokens     {int}   NOT NULL,
		completion_tokens {int}   NOT NULL,
		total_tokens      {int}   NOT NULL,
		started_at        {time}  NOT NULL,
		finished_at       {time}  NOT NULL,
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
		user_key   TEXT    NOT NULL,
		kind       TEXT    NOT NULL,
		name       TEXT    NOT NULL,
		data       {bytes} NOT NULL,
		updated_at {time}  NOT NULL,
		PRIMARY KEY (user_key, kind, name)
	)`,
	`CREATE INDEX IF NOT EXISTS user_credentials_kind_updated ON user_credentials (kind, updated_at)`,
	// The backlog (backlog.go). Times are Unix microseconds, UTC;
	// closed_at is 0 while an item is active. add_key is the idempotency
	// key of the tool call that added the item ('' for none).
	`CREATE TABLE IF NOT EXISTS backlog_items (
		user_key   TEXT  NOT NULL,
		id         {int} NOT NULL,
		title      TEXT  NOT NULL,
		notes      TEXT  NOT NULL,
		priority   TEXT  NOT NULL,
		status     TEXT  NOT NULL,
		chat_id    TEXT  NOT NULL,
		run_id     TEXT  NOT NULL,
		add_key    TEXT  NOT NULL,
		created_at {int} NOT NULL,
		updated_at {int} NOT NULL,
		closed_at  {int} NOT NULL,
		PRIMARY KEY (user_key, id)
	)`,
	`CREATE UNIQUE INDEX IF NOT EXISTS backlog_items_add_key ON backlog_items (user_key, add_key) WHERE add_key <> ''`,
	`CREATE INDEX IF NOT EXISTS backlog_items_chat ON backlog_items (user_key, chat_id)`,
	// The last id each user's backlog gave out; its row also serialises
	// one user's adds, so the cap holds under concurrent calls.
	`CREATE TABLE IF NOT EXISTS backlog_counters (
		user_key TEXT  NOT NULL PRIMARY KEY,
		last_id  {int} NOT NULL
	)`,
	// Webhooks (webhooks.go): a principal's subscriptions and single
	// runs' own webhooks (run_id set), and every delivery attempt.
	`CREATE TABLE IF NOT EXISTS webhooks (
		id         TEXT   NOT NULL PRIMARY KEY,
		user_key   TEXT   NOT NULL,
		url        TEXT   NOT NULL,
		events     TEXT   NOT NULL,
		secret     TEXT   NOT NULL,
		run_id     TEXT   NOT NULL,
		created_at {time} NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS webhooks_user ON webhooks (user_key, run_id, created_at)`,
	`CREATE TABLE IF NOT EXISTS webhook_deliveries (
		id          {rowid},
		webhook_id  TEXT   NOT NULL,
		event_id    TEXT   NOT NULL,
		event_type  TEXT   NOT NULL,
		attempt     {int}  NOT NULL,
		status_code {int}  NOT NULL,
		error       TEXT   NOT NULL,
		at          {time} NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS webhook_deliveries_webhook ON webhook_deliveries (webhook_id, id)`,
	// The retention job deletes deliveries by age.
	`CREATE INDEX IF NOT EXISTS webhook_deliveries_at ON webhook_deliveries (at)`,
}

// sqlStore is the Store on either database.
type sqlStore struct {
	db   *sqldb.DB
	opts options
	// backlogImpl is the backlog, on the same database (Backlog).
	backlogImpl
}

var _ Store = (*sqlStore)(nil)

func openSQL(ctx context.Context, rawURL string, o options) (*sqlStore, error) {
	db, err := sqldb.Open(ctx, rawURL, sqldb.Config{Store: "store", Schema: schema, Lock: "longhaul/store/schema"})
	if err != nil {
		return nil, err
	}
	return &sqlStore{db: db, opts: o, backlogImpl: backlogImpl{db: db, opts: o}}, nil
}

func (s *sqlStore) Put(ctx context.Context, b Blob) (string, error) {
	b, err := prepare(b, s.opts)
	if err != nil {
		return "", err
	}
	_, err = s.db.Writer().ExecContext(ctx,
		`INSERT INTO blobs (ref, run, kind, name, size, created_at, data)
		 VALUES (?, ?, ?, ?, ?, ?, ?)
		 ON CONFLICT (ref) DO NOTHING`,
		b.Ref, b.Run, b.Kind, b.Name, b.Size, s.db.Time(b.CreatedAt), b.Data)
	if err != nil {
		return "", fmt.Errorf("put blob %s/%s/%s: %w", b.Run, b.Kind, b.Name, err)
	}
	return b.Ref, nil
}

func (s *sqlStore) Get(ctx context.Context, ref string) (Blob, error) {
	if !validRef(ref) {
		return Blob{}, fmt.Errorf("get blob %q: %w", ref, ErrNotFound)
	}
	b := Blob{Ref: ref}
	err := s.db.Reader().QueryRowContext(ctx,
		`SELECT run, kind, name, size, created_at, data FROM blobs WHERE ref = ?`, ref).
		Scan(&b.Run, &b.Kind, &b.Name, &b.Size, sqldb.TimeDest(&b.CreatedAt), &b.Data)
	if errors.Is(err, sql.ErrNoRows) {
		return Blob{}, fmt.Errorf("get blob %q: %w", ref, ErrNotFound)
	}
	if err != nil {
		return Blob{}, fmt.Errorf("get blob %q: %w", ref, err)
	}
	if b.Data == nil {
		b.Data = []byte{}
	}
	return b, nil
}

func (s *sqlStore) List(ctx context.Context, run string) ([]Blob, error) {
	if !sqldb.ValidText(run) {
		return []Blob{}, nil // Put never stored such a run
	}
	rows, err := s.db.Reader().QueryContext(ctx,
		`SELECT ref, kind, name, size, created_at FROM blobs WHERE run = ? ORDER BY id`, run)
	if err != nil {
		return nil, fmt.Errorf("list blobs of %q: %w", run, err)
	}
	defer rows.Close()
	out := []Blob{}
	for rows.Next() {
		b := Blob{Run: run}
		if err := rows.Scan(&b.Ref, &b.Kind, &b.Name, &b.Size, sqldb.TimeDest(&b.CreatedAt)); err != nil {
			return nil, fmt.Errorf("list blobs of %q: %w", run, err)
		}
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list blobs of %q: %w", run, err)
	}
	return out, nil
}

func (s *sqlStore) DeleteRun(ctx context.Context, run string) error {
	if !sqldb.ValidText(run) {
		return nil // Put never stored such a run
	}
	if _, err := s.db.Writer().ExecContext(ctx, `DELETE FROM blobs WHERE run = ?`, run); err != nil {
		return fmt.Errorf("delete blobs of %q: %w", run, err)
	}
	return nil
}

func (s *sqlStore) RunsBefore(ctx context.Context, t time.Time) ([]string, error) {
	at := s.db.Time(t)
	runs, err := sqldb.Strings(ctx, s.db.Reader(),
		`SELECT run FROM blobs WHERE created_at < ? UNION SELECT run_id FROM conversation_turns WHERE started_at < ?`, at, at)
	if err != nil {
		return nil, fmt.Errorf("list runs with blobs before %v: %w", t, err)
	}
	return runs, nil
}

func (s *sqlStore) DeleteBefore(ctx context.Context, run string, t time.Time) (int64, error) {
	if !sqldb.ValidText(run) {
		return 0, nil // Put never stored such a run
	}
	n, err := sqldb.Affected(s.db.Writer().ExecContext(ctx, `DELETE FROM blobs WHERE run = ? AND created_at < ?`, run, s.db.Time(t)))
	if err != nil {
		return 0, fmt.Errorf("delete blobs of %q before %v: %w", run, t, err)
	}
	return n, nil
}

func (s *sqlStore) Close() error { return s.db.Close() }
