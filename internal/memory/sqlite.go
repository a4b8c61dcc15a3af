package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/longhaul-dev/longhaul/internal/sqlitedb"
)

// sqliteSchema creates the memories table. vec is the unit vector as
// little-endian float32s; dim its length, so a search compares only
// vectors of the query's model.
var sqliteSchema = []string{
	`CREATE TABLE IF NOT EXISTS memories (
		id         TEXT    PRIMARY KEY,
		user_key   TEXT    NOT NULL,
		chat       TEXT    NOT NULL DEFAULT '',
		run        TEXT    NOT NULL DEFAULT '',
		text       TEXT    NOT NULL,
		dim        INTEGER NOT NULL,
		created_at INTEGER NOT NULL, -- Unix microseconds, UTC
		updated_at INTEGER NOT NULL,
		vec        BLOB    NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS memories_user_updated ON memories (user_key, updated_at, id)`,
	`CREATE INDEX IF NOT EXISTS memories_user_dim ON memories (user_key, dim)`,
	`CREATE INDEX IF NOT EXISTS memories_user_chat ON memories (user_key, chat)`,
}

// sqliteStore is the SQLite Store: one connection writes (so a Save's
// duplicate check and insert are one immediate transaction, never
// interleaved with another Save), a small pool reads.
type sqliteStore struct {
	w, r *sql.DB
	opts options
}

var _ Store = (*sqliteStore)(nil)

func openSQLite(ctx context.Context, path string, o options) (*sqliteStore, error) {
	// The memory tables live in the file of the claim-check store, opened
	// the same way (WAL, one writer, a few readers).
	w, r, err := sqlitedb.Open(ctx, path, sqliteSchema, 4)
	if err != nil {
		return nil, fmt.Errorf("open memory store sqlite %s: %w", path, err)
	}
	return &sqliteStore{w: w, r: r, opts: o}, nil
}

func (s *sqliteStore) Backend() string { return "sqlite (exact search)" }

func (s *sqliteStore) Save(ctx context.Context, m Memory) (Saved, error) {
	m, err := prepare(m)
	if err != nil {
		return Saved{}, err
	}
	now := timestamp(s.opts.now())
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return Saved{}, fmt.Errorf("save memory: %w", err)
	}
	defer tx.Rollback()
	dup, err := sqliteNearest(ctx, tx, m.User, m.Vector, 1, DuplicateThreshold)
	if err != nil {
		return Saved{}, fmt.Errorf("save memory: %w", err)
	}
	out := Saved{Memory: m}
	if len(dup) == 1 {
		id := dup[0].id
		var created int64
		err := tx.QueryRowContext(ctx,
			`UPDATE memories SET text = ?, chat = ?, run = ?, vec = ?, updated_at = ? WHERE id = ? RETURNING created_at`,
			m.Text, m.ChatID, m.Run, encodeVector(m.Vector), now.UnixMicro(), id).Scan(&created)
		if err != nil {
			return Saved{}, fmt.Errorf("save memory: update %s: %w", id, err)
		}
		out.ID, out.Updated = id, true
		out.CreatedAt, out.UpdatedAt = time.UnixMicro(created).UTC(), now
	} else {
		out.ID, out.CreatedAt, out.UpdatedAt = newID(), now, now
		_, err := tx.ExecContext(ctx,
			`INSERT INTO memories (id, user_key, chat, run, text, dim, created_at, updated_at, vec)
			 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			out.ID, m.User, m.ChatID, m.Run, m.Text, len(m.Vector), now.UnixMicro(), now.UnixMicro(), encodeVector(m.Vector))
		if err != nil {
			return Saved{}, fmt.Errorf("save memory: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return Saved{}, fmt.Errorf("save memory: %w", err)
	}
	return out, nil
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// sqliteNearest returns the k of the user's memories most similar to the
// unit vector v at or above threshold, comparing the vectors of its length.
func sqliteNearest(ctx context.Context, q querier, user string, v []float32, k int, threshold float64) ([]hit, error) {
	rows, err := q.QueryContext(ctx, `SELECT id, vec FROM memories WHERE user_key = ? AND dim = ?`, user, len(v))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return exactSearch(rows, v, k, threshold)
}

func (s *sqliteStore) Search(ctx context.Context, user string, vector []float32, k int, threshold float64) ([]Memory, error) {
	q, err := checkQuery(user, vector, k)
	if err != nil {
		return nil, err
	}
	hits, err := sqliteNearest(ctx, s.r, user, q, k, threshold)
	if err != nil {
		return nil, fmt.Errorf("search memories: %w", err)
	}
	if len(hits) == 0 {
		return []Memory{}, nil
	}
	// The hits' rows in one read, without the vectors already scored.
	args := []any{user}
	for _, h := range hits {
		args = append(args, h.id)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+sqliteColumns+` FROM memories WHERE user_key = ? AND id IN (?`+
		strings.Repeat(", ?", len(hits)-1)+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("search memories: %w", err)
	}
	defer rows.Close()
	var found []Memory
	for rows.Next() {
		m, err := scanSQLite(rows, nil)
		if err != nil {
			return nil, fmt.Errorf("search memories: %w", err)
		}
		found = append(found, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search memories: %w", err)
	}
	return inHitOrder(hits, found), nil
}

const sqliteColumns = `id, user_key, chat, run, text, created_at, updated_at`

func scanSQLite(sc interface{ Scan(...any) error }, vec *[]byte) (Memory, error) {
	var m Memory
	var created, updated int64
	dest := []any{&m.ID, &m.User, &m.ChatID, &m.Run, &m.Text, &created, &updated}
	if vec != nil {
		dest = append(dest, vec)
	}
	if err := sc.Scan(dest...); err != nil {
		return Memory{}, err
	}
	m.CreatedAt, m.UpdatedAt = time.UnixMicro(created).UTC(), time.UnixMicro(updated).UTC()
	return m, nil
}

func (s *sqliteStore) Get(ctx context.Context, user, id string) (Memory, error) {
	if !validID(id) || !validText(user) {
		return Memory{}, fmt.Errorf("get memory %q: %w", id, ErrNotFound)
	}
	var vec []byte
	m, err := scanSQLite(s.r.QueryRowContext(ctx,
		`SELECT `+sqliteColumns+`, vec FROM memories WHERE user_key = ? AND id = ?`, user, id), &vec)
	if errors.Is(err, sql.ErrNoRows) {
		return Memory{}, fmt.Errorf("get memory %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return Memory{}, fmt.Errorf("get memory %q: %w", id, err)
	}
	m.Vector = decodeVector(vec)
	return m, nil
}

func (s *sqliteStore) List(ctx context.Context, user string, page Page) ([]Memory, string, error) {
	limit, cur, err := listPage(page)
	if err != nil {
		return nil, "", err
	}
	if !validText(user) {
		return []Memory{}, "", nil
	}
	q := `SELECT ` + sqliteColumns + ` FROM memories WHERE user_key = ?`
	args := []any{user}
	if cur != nil {
		q += ` AND (updated_at < ? OR (updated_at = ? AND id < ?))`
		args = append(args, cur.at, cur.at, cur.id)
	}
	q += ` ORDER BY updated_at DESC, id DESC LIMIT ?`
	args = append(args, limit+1)
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, "", fmt.Errorf("list memories: %w", err)
	}
	defer rows.Close()
	out := []Memory{}
	for rows.Next() {
		m, err := scanSQLite(rows, nil)
		if err != nil {
			return nil, "", fmt.Errorf("list memories: %w", err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("list memories: %w", err)
	}
	return nextPage(out, limit)
}

// nextPage cuts a page read with one row more than limit and gives the
// next page's token when there was more.
func nextPage(out []Memory, limit int) ([]Memory, string, error) {
	if len(out) <= limit {
		return out, "", nil
	}
	out = out[:limit]
	last := out[limit-1]
	return out, cursor{at: last.UpdatedAt.UnixMicro(), id: last.ID}.token(), nil
}

func (s *sqliteStore) Delete(ctx context.Context, user, id string) error {
	if !validID(id) || !validText(user) {
		return fmt.Errorf("delete memory %q: %w", id, ErrNotFound)
	}
	res, err := s.w.ExecContext(ctx, `DELETE FROM memories WHERE user_key = ? AND id = ?`, user, id)
	if err != nil {
		return fmt.Errorf("delete memory %q: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("delete memory %q: %w", id, err)
	} else if n == 0 {
		return fmt.Errorf("delete memory %q: %w", id, ErrNotFound)
	}
	return nil
}

func (s *sqliteStore) ForgetConversation(ctx context.Context, user, chatID string) error {
	if chatID == "" || !validText(user) || !validText(chatID) {
		return nil
	}
	if _, err := s.w.ExecContext(ctx, `DELETE FROM memories WHERE user_key = ? AND chat = ?`, user, chatID); err != nil {
		return fmt.Errorf("forget the memories of chat %q: %w", chatID, err)
	}
	return nil
}

func (s *sqliteStore) Trim(ctx context.Context, user string, keep int) (int64, error) {
	if keep < 1 || !validText(user) {
		return 0, nil
	}
	res, err := s.w.ExecContext(ctx,
		`DELETE FROM memories WHERE user_key = ? AND id NOT IN (
			SELECT id FROM memories WHERE user_key = ? ORDER BY updated_at DESC, created_at DESC, id DESC LIMIT ?)`,
		user, user, keep)
	if err != nil {
		return 0, fmt.Errorf("trim memories to %d: %w", keep, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("trim memories to %d: %w", keep, err)
	}
	return n, nil
}

func (s *sqliteStore) Count(ctx context.Context, user string) (int, error) {
	var n int
	if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM memories WHERE user_key = ?`, user).Scan(&n); err != nil {
		return 0, fmt.Errorf("count memories: %w", err)
	}
	return n, nil
}

func (s *sqliteStore) Close() error { return errors.Join(s.r.Close(), s.w.Close()) }

// Import implements Importer, in one transaction.
func (s *sqliteStore) Import(ctx context.Context, ms []Memory) error {
	now := timestamp(s.opts.now())
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("import memories: %w", err)
	}
	defer tx.Rollback()
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO memories (id, user_key, chat, run, text, dim, created_at, updated_at, vec)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("import memories: %w", err)
	}
	defer stmt.Close()
	for _, m := range ms {
		m, err := prepare(m)
		if err != nil {
			return err
		}
		if _, err := stmt.ExecContext(ctx, newID(), m.User, m.ChatID, m.Run, m.Text, len(m.Vector), now.UnixMicro(), now.UnixMicro(), encodeVector(m.Vector)); err != nil {
			return fmt.Errorf("import memories: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("import memories: %w", err)
	}
	return nil
}
