package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/longhaul-dev/longhaul/internal/pgvector"
	"github.com/longhaul-dev/longhaul/internal/sqldb"
)

// schema creates the memories table, in sqldb.Schema's words. vec is the
// unit vector as little-endian float32s, always kept, so a PostgreSQL
// database that gains or loses pgvector keeps its memories; dim its
// length, so a search compares only vectors of the query's model. With
// pgvector, embedding is the same vector as a pgvector value.
var schema = []string{
	`CREATE TABLE IF NOT EXISTS memories (
		id         TEXT    PRIMARY KEY,
		user_key   TEXT    NOT NULL,
		chat       TEXT    NOT NULL DEFAULT '',
		run        TEXT    NOT NULL DEFAULT '',
		text       TEXT    NOT NULL,
		dim        INTEGER NOT NULL,
		created_at {time}  NOT NULL,
		updated_at {time}  NOT NULL,
		vec        {bytes} NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS memories_user_updated ON memories (user_key, updated_at, id)`,
	`CREATE INDEX IF NOT EXISTS memories_user_dim ON memories (user_key, dim)`,
	`CREATE INDEX IF NOT EXISTS memories_user_chat ON memories (user_key, chat)`,
}

// schemaLock is the advisory lock key of schema changes on PostgreSQL.
const schemaLock = "longhaul/memory/schema"

// sqlStore is the Store on either database. With pgvector, Search and the
// duplicate check of Save ask an HNSW index (one partial index per vector
// length, built the first time a memory of that length is saved); without
// it (SQLite, or a server without the extension) they compare the user's
// vectors in Go.
type sqlStore struct {
	db   *sqldb.DB
	opts sqldb.Options
	// vec is the embedding column on PostgreSQL: with pgvector 0.8,
	// iterative index scans keep finding a user's memories however many
	// other users' are nearer.
	vec pgvector.Column
}

var _ Store = (*sqlStore)(nil)

func openSQL(ctx context.Context, rawURL string, o sqldb.Options) (*sqlStore, error) {
	s := &sqlStore{opts: o}
	db, err := s.vec.Open(ctx, rawURL, "memories", sqldb.Config{
		Store: "memory store", Schema: schema, Lock: schemaLock, MaxConns: o.MaxConns,
	})
	if err != nil {
		return nil, err
	}
	s.db = db
	return s, nil
}

func (s *sqlStore) Backend() string {
	switch {
	case !s.db.Postgres():
		return "sqlite (exact search)"
	case s.vec.Vector:
		return "postgres (pgvector hnsw)"
	}
	return "postgres (exact search: " + s.vec.Why + ")"
}

const columns = `id, user_key, chat, run, text, created_at, updated_at`

func scan(sc interface{ Scan(...any) error }, extra ...any) (Memory, error) {
	var m Memory
	dest := append([]any{&m.ID, &m.User, &m.ChatID, &m.Run, &m.Text,
		sqldb.TimeDest(&m.CreatedAt), sqldb.TimeDest(&m.UpdatedAt)}, extra...)
	if err := sc.Scan(dest...); err != nil {
		return Memory{}, err
	}
	return m, nil
}

// annQuery is the nearest-neighbour query of dim dimensions: the user, the
// query vector, how many. The ORDER BY matches the partial index.
func annQuery(dim int) string {
	d := fmt.Sprint(dim)
	return `SELECT ` + columns + `, 1 - (embedding::vector(` + d + `) <=> ?::vector(` + d + `)) AS score
		FROM memories WHERE user_key = ? AND dim = ` + d + ` AND embedding IS NOT NULL
		ORDER BY embedding::vector(` + d + `) <=> ?::vector(` + d + `) LIMIT ?`
}

// nearest returns up to k of the user's memories nearest to the unit
// vector q at or above threshold, with their scores, through the index
// (pgvector) or in Go.
func (s *sqlStore) nearest(ctx context.Context, tx sqldb.Tx, user string, q []float32, k int, threshold float64) ([]Memory, error) {
	if s.vec.Vector {
		if s.vec.Iterative {
			if _, err := tx.ExecContext(ctx, `SET LOCAL hnsw.iterative_scan = strict_order`); err != nil {
				return nil, err
			}
		}
		lit := pgvector.Literal(q)
		rows, err := tx.QueryContext(ctx, annQuery(len(q)), lit, user, lit, k)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		out := []Memory{}
		for rows.Next() {
			var score float64
			m, err := scan(rows, &score)
			if err != nil {
				return nil, err
			}
			if score >= threshold {
				m.Score = score
				out = append(out, m)
			}
		}
		return out, rows.Err()
	}
	rows, err := tx.QueryContext(ctx, `SELECT id, vec FROM memories WHERE user_key = ? AND dim = ?`, user, len(q))
	if err != nil {
		return nil, err
	}
	hits, err := exactSearch(rows, q, k, threshold)
	rows.Close()
	if err != nil || len(hits) == 0 {
		return []Memory{}, err
	}
	// The hits' rows in one read, without the vectors already scored.
	args := []any{user}
	for _, h := range hits {
		args = append(args, h.id)
	}
	rows, err = tx.QueryContext(ctx, `SELECT `+columns+` FROM memories WHERE user_key = ? AND id IN (`+
		sqldb.Placeholders(len(hits))+`)`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var found []Memory
	for rows.Next() {
		m, err := scan(rows)
		if err != nil {
			return nil, err
		}
		found = append(found, m)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return inHitOrder(hits, found), nil
}

func (s *sqlStore) Save(ctx context.Context, m Memory) (Saved, error) {
	m, err := prepare(m)
	if err != nil {
		return Saved{}, err
	}
	if s.vec.Vector {
		if err := s.vec.Ensure(ctx, s.db, len(m.Vector)); err != nil {
			return Saved{}, fmt.Errorf("save memory: %w", err)
		}
	}
	now := timestamp(s.opts.Now())
	out := Saved{Memory: m}
	// The user's saves take turns (SQLite's write transactions do
	// anyway), so two saves of near-duplicates do not both insert.
	err = s.db.Write(ctx, func(tx sqldb.Tx) error {
		if err := tx.Lock(ctx, "longhaul/memory/user/"+m.User); err != nil {
			return err
		}
		dup, err := s.nearest(ctx, tx, m.User, m.Vector, 1, DuplicateThreshold)
		if err != nil {
			return err
		}
		// The columns a save writes, the embedding only with pgvector.
		cols, vals := `text, chat, run, vec, updated_at`, `?, ?, ?, ?, ?`
		set := `text = ?, chat = ?, run = ?, vec = ?, updated_at = ?`
		args := []any{m.Text, m.ChatID, m.Run, encodeVector(m.Vector), tx.Time(now)}
		if s.vec.Vector {
			cols, vals, set = cols+`, embedding`, vals+`, ?::vector`, set+`, embedding = ?::vector`
			args = append(args, pgvector.Literal(m.Vector))
		}
		if len(dup) == 1 {
			out.ID, out.Updated, out.CreatedAt, out.UpdatedAt = dup[0].ID, true, dup[0].CreatedAt, now
			_, err := tx.ExecContext(ctx, `UPDATE memories SET `+set+` WHERE id = ?`, append(args, out.ID)...)
			return err
		}
		out.ID, out.CreatedAt, out.UpdatedAt = newID(), now, now
		_, err = tx.ExecContext(ctx, `INSERT INTO memories (`+cols+`, id, user_key, dim, created_at) VALUES (`+vals+`, ?, ?, ?, ?)`,
			append(args, out.ID, m.User, len(m.Vector), tx.Time(now))...)
		return err
	})
	if err != nil {
		return Saved{}, fmt.Errorf("save memory: %w", err)
	}
	return out, nil
}

func (s *sqlStore) Search(ctx context.Context, user string, vector []float32, k int, threshold float64) ([]Memory, error) {
	q, err := checkQuery(user, vector, k)
	if err != nil {
		return nil, err
	}
	var out []Memory
	// One read-only transaction: SET LOCAL needs one, and it keeps the id
	// and row reads of the exact search consistent.
	err = s.db.Read(ctx, func(tx sqldb.Tx) error {
		var err error
		out, err = s.nearest(ctx, tx, user, q, k, threshold)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("search memories: %w", err)
	}
	return out, nil
}

func (s *sqlStore) Get(ctx context.Context, user, id string) (Memory, error) {
	if !validID(id) || !sqldb.ValidText(user) {
		return Memory{}, fmt.Errorf("get memory %q: %w", id, ErrNotFound)
	}
	var vec []byte
	m, err := scan(s.db.Reader().QueryRowContext(ctx,
		`SELECT `+columns+`, vec FROM memories WHERE user_key = ? AND id = ?`, user, id), &vec)
	if errors.Is(err, sql.ErrNoRows) {
		return Memory{}, fmt.Errorf("get memory %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return Memory{}, fmt.Errorf("get memory %q: %w", id, err)
	}
	m.Vector = decodeVector(vec)
	return m, nil
}

func (s *sqlStore) List(ctx context.Context, user string, page Page) ([]Memory, string, error) {
	limit, cur, err := listPage(page)
	if err != nil {
		return nil, "", err
	}
	if !sqldb.ValidText(user) {
		return []Memory{}, "", nil
	}
	q := `SELECT ` + columns + ` FROM memories WHERE user_key = ?`
	args := []any{user}
	if cur != nil {
		at := s.db.Time(time.UnixMicro(cur.at))
		q += ` AND (updated_at < ? OR (updated_at = ? AND id < ?))`
		args = append(args, at, at, cur.id)
	}
	rows, err := s.db.Reader().QueryContext(ctx, q+` ORDER BY updated_at DESC, id DESC LIMIT ?`, append(args, limit+1)...)
	if err != nil {
		return nil, "", fmt.Errorf("list memories: %w", err)
	}
	defer rows.Close()
	out := []Memory{}
	for rows.Next() {
		m, err := scan(rows)
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

func (s *sqlStore) Delete(ctx context.Context, user, id string) error {
	if !validID(id) || !sqldb.ValidText(user) {
		return fmt.Errorf("delete memory %q: %w", id, ErrNotFound)
	}
	n, err := sqldb.Affected(s.db.Writer().ExecContext(ctx, `DELETE FROM memories WHERE user_key = ? AND id = ?`, user, id))
	if err != nil {
		return fmt.Errorf("delete memory %q: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("delete memory %q: %w", id, ErrNotFound)
	}
	return nil
}

func (s *sqlStore) ForgetConversation(ctx context.Context, user, chatID string) error {
	if chatID == "" || !sqldb.ValidText(user) || !sqldb.ValidText(chatID) {
		return nil
	}
	if _, err := s.db.Writer().ExecContext(ctx, `DELETE FROM memories WHERE user_key = ? AND chat = ?`, user, chatID); err != nil {
		return fmt.Errorf("forget the memories of chat %q: %w", chatID, err)
	}
	return nil
}

func (s *sqlStore) Trim(ctx context.Context, user string, keep int) (int64, error) {
	if keep < 1 || !sqldb.ValidText(user) {
		return 0, nil
	}
	n, err := sqldb.Affected(s.db.Writer().ExecContext(ctx,
		`DELETE FROM memories WHERE user_key = ? AND id NOT IN (
			SELECT id FROM memories WHERE user_key = ? ORDER BY updated_at DESC, created_at DESC, id DESC LIMIT ?)`,
		user, user, keep))
	if err != nil {
		return 0, fmt.Errorf("trim memories to %d: %w", keep, err)
	}
	return n, nil
}

func (s *sqlStore) Count(ctx context.Context, user string) (int, error) {
	var n int
	if !sqldb.ValidText(user) {
		return 0, nil
	}
	if err := s.db.Reader().QueryRowContext(ctx, `SELECT count(*) FROM memories WHERE user_key = ?`, user).Scan(&n); err != nil {
		return 0, fmt.Errorf("count memories: %w", err)
	}
	return n, nil
}

func (s *sqlStore) Close() error { return s.db.Close() }

// Import implements Importer: one transaction of multi-row inserts, then,
// with pgvector, the HNSW index of each new length (built once over the
// rows, which is faster than row by row).
func (s *sqlStore) Import(ctx context.Context, ms []Memory) error {
	const batch = 200
	now := s.db.Time(s.opts.Now())
	dims := map[int]bool{}
	err := s.db.Write(ctx, func(tx sqldb.Tx) error {
		for start := 0; start < len(ms); start += batch {
			var q strings.Builder
			q.WriteString(`INSERT INTO memories (id, user_key, chat, run, text, dim, created_at, updated_at, vec`)
			row := "(?, ?, ?, ?, ?, ?, ?, ?, ?"
			if s.vec.Vector {
				q.WriteString(`, embedding`)
				row += ", ?::vector"
			}
			q.WriteString(`) VALUES `)
			var args []any
			for i, m := range ms[start:min(start+batch, len(ms))] {
				m, err := prepare(m)
				if err != nil {
					return err
				}
				dims[len(m.Vector)] = true
				if i > 0 {
					q.WriteString(", ")
				}
				q.WriteString(row + ")")
				args = append(args, newID(), m.User, m.ChatID, m.Run, m.Text, len(m.Vector), now, now, encodeVector(m.Vector))
				if s.vec.Vector {
					args = append(args, pgvector.Literal(m.Vector))
				}
			}
			if _, err := tx.ExecContext(ctx, q.String(), args...); err != nil {
				return fmt.Errorf("import memories: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if s.vec.Vector {
		for d := range dims {
			if err := s.vec.Ensure(ctx, s.db, d); err != nil {
				return fmt.Errorf("import memories: %w", err)
			}
		}
	}
	return nil
}
