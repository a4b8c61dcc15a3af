package memory

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/longhaul-dev/longhaul/internal/pgvector"
	"github.com/longhaul-dev/longhaul/internal/redact"
)

// postgresSchema creates the memories table in the first schema of the
// connection's search_path. vec (the unit vector as little-endian
// float32s) is always kept, so a database that gains or loses pgvector
// keeps its memories; embedding is the same vector as a pgvector value,
// added when the server has the extension.
var postgresSchema = []string{
	`CREATE TABLE IF NOT EXISTS memories (
		id         TEXT        PRIMARY KEY,
		user_key   TEXT        NOT NULL,
		chat       TEXT        NOT NULL DEFAULT '',
		run        TEXT        NOT NULL DEFAULT '',
		text       TEXT        NOT NULL,
		dim        INTEGER     NOT NULL,
		created_at TIMESTAMPTZ NOT NULL,
		updated_at TIMESTAMPTZ NOT NULL,
		vec        BYTEA       NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS memories_user_updated ON memories (user_key, updated_at, id)`,
	`CREATE INDEX IF NOT EXISTS memories_user_dim ON memories (user_key, dim)`,
	`CREATE INDEX IF NOT EXISTS memories_user_chat ON memories (user_key, chat)`,
}

// postgresLock is the advisory lock key of schema changes; a Save locks
// its user's key, so two saves of one user's near-duplicates take turns.
const postgresLock = "longhaul/memory/schema"

// postgresStore is the PostgreSQL Store. With pgvector, Search and the
// duplicate check of Save ask an HNSW index (one partial index per vector
// length, built the first time a memory of that length is saved); without
// it they compare the user's vectors in Go, as SQLite does.
type postgresStore struct {
	pool *pgxpool.Pool
	opts options
	// vector reports pgvector in use; iterative that it is 0.8 or later,
	// whose iterative index scans keep finding a user's memories however
	// many other users' are nearer.
	vector, iterative bool
	// why says why pgvector is not used.
	why string

	mu      sync.Mutex
	indexed map[int]bool
}

var _ Store = (*postgresStore)(nil)

func openPostgres(ctx context.Context, rawURL string, o options) (*postgresStore, error) {
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		return nil, fmt.Errorf("open memory store %s: invalid postgres URL", redact.URLs(rawURL))
	}
	if o.maxConns > 0 {
		cfg.MaxConns = o.maxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open memory store %s: %w", redact.URLs(rawURL), err)
	}
	s := &postgresStore{pool: pool, opts: o, indexed: map[int]bool{}}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open memory store %s: %w", redact.URLs(rawURL), err)
	}
	return s, nil
}

func (s *postgresStore) migrate(ctx context.Context) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, postgresLock); err != nil {
			return fmt.Errorf("create schema: %w", err)
		}
		for _, q := range postgresSchema {
			if _, err := tx.Exec(ctx, q); err != nil {
				return fmt.Errorf("create schema: %w", err)
			}
		}
		sup, err := pgvector.Enable(ctx, pgxTx{tx}, "memories")
		if err != nil {
			return err
		}
		s.vector, s.iterative, s.why = sup.Vector, sup.Iterative, sup.Why
		return nil
	})
}

// pgxTx is a pgx.Tx as pgvector.Enable takes it.
type pgxTx struct{ tx pgx.Tx }

func (t pgxTx) Exec(ctx context.Context, q string) error {
	_, err := t.tx.Exec(ctx, q)
	return err
}

func (t pgxTx) QueryRow(ctx context.Context, q string, dest ...any) error {
	return t.tx.QueryRow(ctx, q).Scan(dest...)
}

func (s *postgresStore) Backend() string {
	if s.vector {
		return "postgres (pgvector hnsw)"
	}
	return "postgres (exact search: " + s.why + ")"
}

// vectorLiteral is v in pgvector's text form.
func vectorLiteral(v []float32) string {
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

// ensureIndex builds the HNSW index of vectors of dim dimensions, once.
func (s *postgresStore) ensureIndex(ctx context.Context, dim int) error {
	s.mu.Lock()
	done := s.indexed[dim]
	s.mu.Unlock()
	if done {
		return nil
	}
	d := strconv.Itoa(dim) // an int: safe to put in the statement
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, postgresLock); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `CREATE INDEX IF NOT EXISTS memories_hnsw_`+d+` ON memories
			USING hnsw ((embedding::vector(`+d+`)) vector_cosine_ops) WHERE dim = `+d)
		return err
	})
	if err != nil {
		return fmt.Errorf("create the hnsw index of %d dimensions: %w", dim, err)
	}
	s.mu.Lock()
	s.indexed[dim] = true
	s.mu.Unlock()
	return nil
}

// annQuery is the nearest-neighbour query of dim dimensions: $1 the user,
// $2 the query vector, $3 how many. The ORDER BY matches the partial index.
func annQuery(dim int) string {
	d := strconv.Itoa(dim)
	return `SELECT ` + postgresColumns + `, 1 - (embedding::vector(` + d + `) <=> $2::vector(` + d + `)) AS score
		FROM memories WHERE user_key = $1 AND dim = ` + d + ` AND embedding IS NOT NULL
		ORDER BY embedding::vector(` + d + `) <=> $2::vector(` + d + `) LIMIT $3`
}

const postgresColumns = `id, user_key, chat, run, text, created_at, updated_at`

func scanPostgres(row pgx.Row, extra ...any) (Memory, error) {
	var m Memory
	dest := append([]any{&m.ID, &m.User, &m.ChatID, &m.Run, &m.Text, &m.CreatedAt, &m.UpdatedAt}, extra...)
	if err := row.Scan(dest...); err != nil {
		return Memory{}, err
	}
	m.CreatedAt, m.UpdatedAt = m.CreatedAt.UTC(), m.UpdatedAt.UTC()
	return m, nil
}

// nearest returns up to k of the user's memories nearest to q with their
// scores, through the index (pgvector) or in Go.
func (s *postgresStore) nearest(ctx context.Context, tx pgx.Tx, user string, q []float32, k int, threshold float64) ([]Memory, error) {
	if s.vector {
		if s.iterative {
			if _, err := tx.Exec(ctx, `SET LOCAL hnsw.iterative_scan = strict_order`); err != nil {
				return nil, err
			}
		}
		rows, err := tx.Query(ctx, annQuery(len(q)), user, vectorLiteral(q), k)
		if err != nil {
			return nil, err
		}
		out := []Memory{}
		for rows.Next() {
			var score float64
			m, err := scanPostgres(rows, &score)
			if err != nil {
				rows.Close()
				return nil, err
			}
			if score >= threshold {
				m.Score = score
				out = append(out, m)
			}
		}
		return out, rows.Err()
	}
	rows, err := tx.Query(ctx, `SELECT id, vec FROM memories WHERE user_key = $1 AND dim = $2`, user, len(q))
	if err != nil {
		return nil, err
	}
	hits, err := exactSearch(rows, q, k, threshold)
	rows.Close()
	if err != nil {
		return nil, err
	}
	if len(hits) == 0 {
		return []Memory{}, nil
	}
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.id
	}
	rows, err = tx.Query(ctx, `SELECT `+postgresColumns+` FROM memories WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var found []Memory
	for rows.Next() {
		m, err := scanPostgres(rows)
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

func (s *postgresStore) Save(ctx context.Context, m Memory) (Saved, error) {
	m, err := prepare(m)
	if err != nil {
		return Saved{}, err
	}
	if s.vector {
		if err := s.ensureIndex(ctx, len(m.Vector)); err != nil {
			return Saved{}, fmt.Errorf("save memory: %w", err)
		}
	}
	now := timestamp(s.opts.now())
	out := Saved{Memory: m}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('longhaul/memory/user/' || $1))`, m.User); err != nil {
			return err
		}
		dup, err := s.nearest(ctx, tx, m.User, m.Vector, 1, DuplicateThreshold)
		if err != nil {
			return err
		}
		var embedding any
		if s.vector {
			embedding = vectorLiteral(m.Vector)
		}
		if len(dup) == 1 {
			out.ID, out.Updated, out.CreatedAt, out.UpdatedAt = dup[0].ID, true, dup[0].CreatedAt, now
			q := `UPDATE memories SET text = $1, chat = $2, run = $3, vec = $4, updated_at = $5 WHERE id = $6`
			args := []any{m.Text, m.ChatID, m.Run, encodeVector(m.Vector), now, out.ID}
			if s.vector {
				q = `UPDATE memories SET text = $1, chat = $2, run = $3, vec = $4, updated_at = $5, embedding = $7::vector WHERE id = $6`
				args = append(args, embedding)
			}
			_, err := tx.Exec(ctx, q, args...)
			return err
		}
		out.ID, out.CreatedAt, out.UpdatedAt = newID(), now, now
		q := `INSERT INTO memories (id, user_key, chat, run, text, dim, created_at, updated_at, vec)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $8)`
		args := []any{out.ID, m.User, m.ChatID, m.Run, m.Text, len(m.Vector), now, encodeVector(m.Vector)}
		if s.vector {
			q = `INSERT INTO memories (id, user_key, chat, run, text, dim, created_at, updated_at, vec, embedding)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $8, $9::vector)`
			args = append(args, embedding)
		}
		_, err = tx.Exec(ctx, q, args...)
		return err
	})
	if err != nil {
		return Saved{}, fmt.Errorf("save memory: %w", err)
	}
	return out, nil
}

func (s *postgresStore) Search(ctx context.Context, user string, vector []float32, k int, threshold float64) ([]Memory, error) {
	q, err := checkQuery(user, vector, k)
	if err != nil {
		return nil, err
	}
	var out []Memory
	// A read-only transaction: SET LOCAL needs one, and it keeps the id
	// and row reads of the exact search consistent.
	err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var err error
		out, err = s.nearest(ctx, tx, user, q, k, threshold)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("search memories: %w", err)
	}
	return out, nil
}

func (s *postgresStore) Get(ctx context.Context, user, id string) (Memory, error) {
	if !validID(id) || !validText(user) {
		return Memory{}, fmt.Errorf("get memory %q: %w", id, ErrNotFound)
	}
	var vec []byte
	m, err := scanPostgres(s.pool.QueryRow(ctx,
		`SELECT `+postgresColumns+`, vec FROM memories WHERE user_key = $1 AND id = $2`, user, id), &vec)
	if errors.Is(err, pgx.ErrNoRows) {
		return Memory{}, fmt.Errorf("get memory %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return Memory{}, fmt.Errorf("get memory %q: %w", id, err)
	}
	m.Vector = decodeVector(vec)
	return m, nil
}

func (s *postgresStore) List(ctx context.Context, user string, page Page) ([]Memory, string, error) {
	limit, cur, err := listPage(page)
	if err != nil {
		return nil, "", err
	}
	if !validText(user) {
		return []Memory{}, "", nil
	}
	q := `SELECT ` + postgresColumns + ` FROM memories WHERE user_key = $1`
	args := []any{user, limit + 1}
	if cur != nil {
		q += ` AND (updated_at < $3 OR (updated_at = $3 AND id < $4))`
		args = append(args, time.UnixMicro(cur.at).UTC(), cur.id)
	}
	q += ` ORDER BY updated_at DESC, id DESC LIMIT $2`
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, "", fmt.Errorf("list memories: %w", err)
	}
	out := []Memory{}
	for rows.Next() {
		m, err := scanPostgres(rows)
		if err != nil {
			rows.Close()
			return nil, "", fmt.Errorf("list memories: %w", err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("list memories: %w", err)
	}
	return nextPage(out, limit)
}

func (s *postgresStore) Delete(ctx context.Context, user, id string) error {
	if !validID(id) || !validText(user) {
		return fmt.Errorf("delete memory %q: %w", id, ErrNotFound)
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM memories WHERE user_key = $1 AND id = $2`, user, id)
	if err != nil {
		return fmt.Errorf("delete memory %q: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("delete memory %q: %w", id, ErrNotFound)
	}
	return nil
}

func (s *postgresStore) ForgetConversation(ctx context.Context, user, chatID string) error {
	if chatID == "" || !validText(user) || !validText(chatID) {
		return nil
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM memories WHERE user_key = $1 AND chat = $2`, user, chatID); err != nil {
		return fmt.Errorf("forget the memories of chat %q: %w", chatID, err)
	}
	return nil
}

func (s *postgresStore) Trim(ctx context.Context, user string, keep int) (int64, error) {
	if keep < 1 || !validText(user) {
		return 0, nil
	}
	tag, err := s.pool.Exec(ctx,
		`DELETE FROM memories WHERE user_key = $1 AND id NOT IN (
			SELECT id FROM memories WHERE user_key = $1 ORDER BY updated_at DESC, created_at DESC, id DESC LIMIT $2)`,
		user, keep)
	if err != nil {
		return 0, fmt.Errorf("trim memories to %d: %w", keep, err)
	}
	return tag.RowsAffected(), nil
}

func (s *postgresStore) Count(ctx context.Context, user string) (int, error) {
	var n int
	if !validText(user) {
		return 0, nil
	}
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM memories WHERE user_key = $1`, user).Scan(&n); err != nil {
		return 0, fmt.Errorf("count memories: %w", err)
	}
	return n, nil
}

func (s *postgresStore) Close() error {
	s.pool.Close()
	return nil
}

// Import implements Importer: batches of multi-row inserts, then the HNSW
// index of each new length (built once over the rows, which is faster than
// row by row).
func (s *postgresStore) Import(ctx context.Context, ms []Memory) error {
	const batch = 200
	now := timestamp(s.opts.now())
	dims := map[int]bool{}
	for start := 0; start < len(ms); start += batch {
		end := min(start+batch, len(ms))
		var q strings.Builder
		q.WriteString(`INSERT INTO memories (id, user_key, chat, run, text, dim, created_at, updated_at, vec`)
		if s.vector {
			q.WriteString(`, embedding`)
		}
		q.WriteString(`) VALUES `)
		var args []any
		for i, m := range ms[start:end] {
			m, err := prepare(m)
			if err != nil {
				return err
			}
			dims[len(m.Vector)] = true
			if i > 0 {
				q.WriteString(", ")
			}
			n := len(args)
			fmt.Fprintf(&q, "($%d, $%d, $%d, $%d, $%d, $%d, $%d, $%d, $%d", n+1, n+2, n+3, n+4, n+5, n+6, n+7, n+7, n+8)
			args = append(args, newID(), m.User, m.ChatID, m.Run, m.Text, len(m.Vector), now, encodeVector(m.Vector))
			if s.vector {
				fmt.Fprintf(&q, ", $%d::vector", n+9)
				args = append(args, vectorLiteral(m.Vector))
			}
			q.WriteString(")")
		}
		if _, err := s.pool.Exec(ctx, q.String(), args...); err != nil {
			return fmt.Errorf("import memories: %w", err)
		}
	}
	if s.vector {
		for d := range dims {
			if err := s.ensureIndex(ctx, d); err != nil {
				return fmt.Errorf("import memories: %w", err)
			}
		}
	}
	return nil
}
