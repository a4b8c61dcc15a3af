package docstore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// sqlStore is the Store of both backends: the same tables and statements
// on SQLite and PostgreSQL (written with ? placeholders, numbered for
// PostgreSQL), with the search's full-text ranking and, on PostgreSQL
// with pgvector, its vector ranking asked of the database's own indexes.
//
// Times are kept as Unix microseconds (0 = none) and ids are the objects'
// own; seq columns number the rows in the order they were created, which
// is the order the List methods page in.
type sqlStore struct {
	// w writes; r reads. On SQLite w is a pool of one connection and r a
	// small read-only pool; on PostgreSQL both are the same pool.
	w, r *sql.DB
	pg   bool
	opts options
	// vector reports pgvector in use, iterative that it is 0.8 or later
	// (iterative index scans); why says why pgvector is not used.
	vector, iterative bool
	why               string

	mu      sync.Mutex
	indexed map[int]bool
}

var _ Store = (*sqlStore)(nil)

// dbtx is what both *sql.DB and *sql.Tx do.
type dbtx interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// q returns query with its ? placeholders numbered ($1, $2, …) on
// PostgreSQL. The statements here have no ? of their own.
func (s *sqlStore) q(query string) string {
	if !s.pg {
		return query
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(query); i++ {
		if query[i] == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteByte(query[i])
	}
	return b.String()
}

// in returns "?, ?, …" for n values.
func in(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

func anys[T any](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// tx runs fn in a write transaction.
func (s *sqlStore) tx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

func (s *sqlStore) Backend() string {
	if !s.pg {
		return "sqlite (exact search, fts5)"
	}
	if s.vector {
		return "postgres (pgvector hnsw, tsvector)"
	}
	return "postgres (exact search: " + s.why + "; tsvector)"
}

func (s *sqlStore) Close() error {
	if s.r == s.w {
		return s.w.Close()
	}
	return errors.Join(s.r.Close(), s.w.Close())
}

func checkOwner(op, owner string) error {
	if owner == "" || !validText(owner) {
		return fmt.Errorf("%s: %w: no owner", op, ErrInvalid)
	}
	return nil
}

// ---- files

const fileColumns = `id, owner, filename, purpose, content_type, bytes, sha256, created_at, expires_at`

func scanFile(sc interface{ Scan(...any) error }) (File, error) {
	var f File
	var created, expires int64
	if err := sc.Scan(&f.ID, &f.Owner, &f.Filename, &f.Purpose, &f.ContentType, &f.Bytes, &f.SHA256, &created, &expires); err != nil {
		return File{}, err
	}
	f.CreatedAt, f.ExpiresAt = fromMicros(created), fromMicros(expires)
	return f, nil
}

// baseName is a file name without any directory a client put in it.
func baseName(name string) string {
	name = strings.ReplaceAll(name, `\`, "/")
	if b := path.Base(name); b != "/" && b != "." {
		return b
	}
	return ""
}

func (s *sqlStore) PutFile(ctx context.Context, f File, r io.Reader) (File, error) {
	const op = "put file"
	if err := checkOwner(op, f.Owner); err != nil {
		return File{}, err
	}
	f.Filename = baseName(f.Filename)
	switch {
	case f.Filename == "" || len(f.Filename) > MaxNameBytes || !validText(f.Filename):
		return File{}, fmt.Errorf("%s: %w: a file name is 1 to %d bytes of UTF-8", op, ErrInvalid, MaxNameBytes)
	case len(f.Purpose) > 64 || !validText(f.Purpose):
		return File{}, fmt.Errorf("%s: %w: purpose", op, ErrInvalid)
	case len(f.ContentType) > 255 || !validText(f.ContentType):
		return File{}, fmt.Errorf("%s: %w: content type", op, ErrInvalid)
	}
	f.ID, f.CreatedAt, f.Bytes, f.SHA256 = newID(filePrefix), s.opts.clock(), 0, ""
	f.ExpiresAt = f.ExpiresAt.UTC().Truncate(time.Microsecond)
	// The row is written first, incomplete (no reader sees it), then the
	// parts each in a transaction of its own, so a slow upload never holds
	// the writer; a failure removes both, and Expire removes what a crash
	// left.
	if _, err := s.w.ExecContext(ctx, s.q(`INSERT INTO files (id, owner, filename, purpose, content_type, bytes, sha256, created_at, expires_at, complete)
		VALUES (?, ?, ?, ?, ?, 0, '', ?, ?, 0)`),
		f.ID, f.Owner, f.Filename, f.Purpose, f.ContentType, micros(f.CreatedAt), micros(f.ExpiresAt)); err != nil {
		return File{}, fmt.Errorf("%s: %w", op, err)
	}
	fail := func(err error) (File, error) {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		derr := s.tx(cctx, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(cctx, s.q(`DELETE FROM file_parts WHERE file_id = ?`), f.ID); err != nil {
				return err
			}
			_, err := tx.ExecContext(cctx, s.q(`DELETE FROM files WHERE id = ?`), f.ID)
			return err
		})
		if derr != nil {
			return File{}, fmt.Errorf("%s: %w (and removing what was written: %v)", op, err, derr)
		}
		return File{}, fmt.Errorf("%s: %w", op, err)
	}
	h := sha256.New()
	buf := make([]byte, PartBytes)
	for n := 0; ; n++ {
		k, rerr := io.ReadFull(r, buf)
		if k > 0 {
			f.Bytes += int64(k)
			if f.Bytes > s.opts.maxBytes {
				return fail(fmt.Errorf("%w: over %d bytes", ErrTooLarge, s.opts.maxBytes))
			}
			h.Write(buf[:k])
			if _, err := s.w.ExecContext(ctx, s.q(`INSERT INTO file_parts (file_id, n, data) VALUES (?, ?, ?)`), f.ID, n, buf[:k]); err != nil {
				return fail(err)
			}
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return fail(fmt.Errorf("read the content: %w", rerr))
		}
	}
	f.SHA256 = hex.EncodeToString(h.Sum(nil))
	if _, err := s.w.ExecContext(ctx, s.q(`UPDATE files SET bytes = ?, sha256 = ?, complete = 1 WHERE id = ?`), f.Bytes, f.SHA256, f.ID); err != nil {
		return fail(err)
	}
	return f, nil
}

func (s *sqlStore) GetFile(ctx context.Context, owner, id string) (File, error) {
	return s.getFile(ctx, s.r, owner, id)
}

func (s *sqlStore) getFile(ctx context.Context, db dbtx, owner, id string) (File, error) {
	if !validID(filePrefix, id) || !validText(owner) {
		return File{}, fmt.Errorf("file %q: %w", id, ErrNotFound)
	}
	f, err := scanFile(db.QueryRowContext(ctx, s.q(`SELECT `+fileColumns+` FROM files WHERE owner = ? AND id = ? AND complete = 1`), owner, id))
	if errors.Is(err, sql.ErrNoRows) {
		return File{}, fmt.Errorf("file %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return File{}, fmt.Errorf("file %q: %w", id, err)
	}
	return f, nil
}

func (s *sqlStore) OpenFile(ctx context.Context, owner, id string) (io.ReadCloser, error) {
	f, err := s.GetFile(ctx, owner, id)
	if err != nil {
		return nil, err
	}
	return &partReader{ctx: ctx, s: s, id: f.ID, left: f.Bytes}, nil
}

// partReader reads a file's parts one at a time.
type partReader struct {
	ctx  context.Context
	s    *sqlStore
	id   string
	n    int
	buf  []byte
	left int64
}

func (p *partReader) Read(b []byte) (int, error) {
	for len(p.buf) == 0 {
		if p.left <= 0 {
			return 0, io.EOF
		}
		var data []byte
		err := p.s.r.QueryRowContext(p.ctx, p.s.q(`SELECT data FROM file_parts WHERE file_id = ? AND n = ?`), p.id, p.n).Scan(&data)
		if errors.Is(err, sql.ErrNoRows) {
			return 0, fmt.Errorf("read file %q: part %d: %w (deleted while read)", p.id, p.n, ErrNotFound)
		}
		if err != nil {
			return 0, fmt.Errorf("read file %q: %w", p.id, err)
		}
		p.n++
		p.buf = data
	}
	k := copy(b, p.buf)
	p.buf = p.buf[k:]
	p.left -= int64(k)
	return k, nil
}

func (p *partReader) Close() error { return nil }

// page reads one page of rows of table (whose id column is idCol) that
// match where, in the order of seq; scan reads each row.
func (s *sqlStore) page(ctx context.Context, op, table, cols, idCol, where string, args []any, p Page, scan func(*sql.Rows) error) (bool, error) {
	limit, err := checkPage(op, p)
	if err != nil {
		return false, err
	}
	cursor, before := p.After, false
	if p.Before != "" {
		cursor, before = p.Before, true
	}
	// Newest first is seq descending; before a cursor reads the other
	// way and turns the page round.
	desc := !p.Ascending != before
	q := `SELECT ` + cols + ` FROM ` + table + ` WHERE ` + where
	qargs := slices.Clone(args)
	if cursor != "" {
		var seq int64
		err := s.r.QueryRowContext(ctx, s.q(`SELECT seq FROM `+table+` WHERE `+where+` AND `+idCol+` = ?`), append(slices.Clone(args), cursor)...).Scan(&seq)
		if errors.Is(err, sql.ErrNoRows) {
			return false, fmt.Errorf("%s: %w: no object %q to page from", op, ErrInvalid, cursor)
		}
		if err != nil {
			return false, fmt.Errorf("%s: %w", op, err)
		}
		if desc {
			q += ` AND seq < ?`
		} else {
			q += ` AND seq > ?`
		}
		qargs = append(qargs, seq)
	}
	if desc {
		q += ` ORDER BY seq DESC`
	} else {
		q += ` ORDER BY seq ASC`
	}
	q += ` LIMIT ?`
	qargs = append(qargs, limit+1)
	rows, err := s.r.QueryContext(ctx, s.q(q), qargs...)
	if err != nil {
		return false, fmt.Errorf("%s: %w", op, err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		n++
		if n > limit {
			break
		}
		if err := scan(rows); err != nil {
			return false, fmt.Errorf("%s: %w", op, err)
		}
	}
	if err := rows.Err(); err != nil {
		return false, fmt.Errorf("%s: %w", op, err)
	}
	return n > limit, nil
}

func (s *sqlStore) Usage(ctx context.Context, owner string) (Usage, error) {
	var u Usage
	if !validText(owner) {
		return u, nil
	}
	err := s.r.QueryRowContext(ctx, s.q(`SELECT
		(SELECT COUNT(*) FROM files WHERE owner = ? AND complete = 1),
		(SELECT COALESCE(SUM(bytes), 0) FROM files WHERE owner = ? AND complete = 1),
		(SELECT COUNT(*) FROM vector_store_files WHERE owner = ? AND status = ?)`),
		owner, owner, owner, StatusInProgress).Scan(&u.Files, &u.Bytes, &u.Ingesting)
	if err != nil {
		return Usage{}, fmt.Errorf("usage: %w", err)
	}
	return u, nil
}

func (s *sqlStore) ListFiles(ctx context.Context, owner, purpose string, p Page) ([]File, bool, error) {
	out := []File{}
	if !validText(owner) || !validText(purpose) {
		return out, false, nil
	}
	where, args := `owner = ? AND complete = 1`, []any{owner}
	if purpose != "" {
		where += ` AND purpose = ?`
		args = append(args, purpose)
	}
	more, err := s.page(ctx, "list files", "files", fileColumns, "id", where, args, p, func(rows *sql.Rows) error {
		f, err := scanFile(rows)
		out = append(out, f)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	if p.Before != "" {
		slices.Reverse(out)
	}
	return out, more, nil
}

func (s *sqlStore) DeleteFile(ctx context.Context, owner, id string) error {
	if !validID(filePrefix, id) || !validText(owner) {
		return fmt.Errorf("delete file %q: %w", id, ErrNotFound)
	}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.q(`DELETE FROM files WHERE owner = ? AND id = ?`), owner, id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return ErrNotFound
		}
		for _, q := range []string{
			`DELETE FROM chunks WHERE owner = ? AND file_id = ?`,
			`DELETE FROM vector_store_files WHERE owner = ? AND file_id = ?`,
		} {
			if _, err := tx.ExecContext(ctx, s.q(q), owner, id); err != nil {
				return err
			}
		}
		_, err = tx.ExecContext(ctx, s.q(`DELETE FROM file_parts WHERE file_id = ?`), id)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete file %q: %w", id, err)
	}
	return nil
}

// ---- vector stores

const storeColumns = `id, owner, name, metadata, expires_days, expires_at, last_active_at, created_at, chat`

func scanStore(sc interface{ Scan(...any) error }) (VectorStore, error) {
	var vs VectorStore
	var meta string
	var days int
	var expires, last, created int64
	if err := sc.Scan(&vs.ID, &vs.Owner, &vs.Name, &meta, &days, &expires, &last, &created, &vs.Chat); err != nil {
		return VectorStore{}, err
	}
	if err := json.Unmarshal([]byte(meta), &vs.Metadata); err != nil {
		return VectorStore{}, fmt.Errorf("vector store %s: metadata: %w", vs.ID, err)
	}
	if days > 0 {
		vs.ExpiresAfter = &ExpiresAfter{Anchor: "last_active_at", Days: days}
	}
	vs.ExpiresAt, vs.LastActiveAt, vs.CreatedAt = fromMicros(expires), fromMicros(last), fromMicros(created)
	return vs, nil
}

// fillCounts sets the stores' FileCounts and UsageBytes from their
// attachments.
func (s *sqlStore) fillCounts(ctx context.Context, db dbtx, vss []VectorStore) error {
	if len(vss) == 0 {
		return nil
	}
	idx := map[string]int{}
	ids := make([]any, len(vss))
	for i, vs := range vss {
		idx[vs.ID] = i
		ids[i] = vs.ID
	}
	rows, err := db.QueryContext(ctx, s.q(`SELECT vs_id, status, count(*), coalesce(sum(usage_bytes), 0) FROM vector_store_files
		WHERE vs_id IN (`+in(len(ids))+`) GROUP BY vs_id, status`), ids...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id, status string
		var n int
		var usage int64
		if err := rows.Scan(&id, &status, &n, &usage); err != nil {
			return err
		}
		vs := &vss[idx[id]]
		count(&vs.FileCounts, status, n)
		vs.UsageBytes += usage
	}
	return rows.Err()
}

func count(c *FileCounts, status string, n int) {
	switch status {
	case StatusInProgress:
		c.InProgress += n
	case StatusCompleted:
		c.Completed += n
	case StatusFailed:
		c.Failed += n
	case StatusCancelled:
		c.Cancelled += n
	}
	c.Total += n
}

func metadataJSON(m map[string]string) string {
	if m == nil {
		m = map[string]string{}
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func (s *sqlStore) CreateVectorStore(ctx context.Context, vs VectorStore) (VectorStore, error) {
	const op = "create vector store"
	if err := checkOwner(op, vs.Owner); err != nil {
		return VectorStore{}, err
	}
	if len(vs.Name) > MaxNameBytes || !validText(vs.Name) || len(vs.Chat) > MaxNameBytes || !validText(vs.Chat) {
		return VectorStore{}, fmt.Errorf("%s: %w: a name or chat is up to %d bytes of UTF-8", op, ErrInvalid, MaxNameBytes)
	}
	if err := checkMetadata(vs.Metadata); err != nil {
		return VectorStore{}, fmt.Errorf("%s: %w", op, err)
	}
	if err := checkExpiry(vs.ExpiresAfter); err != nil {
		return VectorStore{}, fmt.Errorf("%s: %w", op, err)
	}
	now := s.opts.clock()
	vs.ID, vs.CreatedAt, vs.LastActiveAt = newID(storePrefix), now, now
	vs.ExpiresAt = expiresAt(now, vs.ExpiresAfter)
	vs.FileCounts, vs.UsageBytes = FileCounts{}, 0
	if vs.Metadata == nil {
		vs.Metadata = map[string]string{}
	}
	days := 0
	if vs.ExpiresAfter != nil {
		days = vs.ExpiresAfter.Days
	}
	if _, err := s.w.ExecContext(ctx, s.q(`INSERT INTO vector_stores (id, owner, name, metadata, expires_days, expires_at, last_active_at, created_at, chat)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		vs.ID, vs.Owner, vs.Name, metadataJSON(vs.Metadata), days, micros(vs.ExpiresAt), micros(now), micros(now), vs.Chat); err != nil {
		return VectorStore{}, fmt.Errorf("%s: %w", op, err)
	}
	return vs, nil
}

func (s *sqlStore) GetVectorStore(ctx context.Context, owner, id string) (VectorStore, error) {
	return s.getStore(ctx, s.r, owner, id)
}

func (s *sqlStore) getStore(ctx context.Context, db dbtx, owner, id string) (VectorStore, error) {
	if !validID(storePrefix, id) || !validText(owner) {
		return VectorStore{}, fmt.Errorf("vector store %q: %w", id, ErrNotFound)
	}
	vs, err := scanStore(db.QueryRowContext(ctx, s.q(`SELECT `+storeColumns+` FROM vector_stores WHERE owner = ? AND id = ?`), owner, id))
	if errors.Is(err, sql.ErrNoRows) {
		return VectorStore{}, fmt.Errorf("vector store %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return VectorStore{}, fmt.Errorf("vector store %q: %w", id, err)
	}
	out := []VectorStore{vs}
	if err := s.fillCounts(ctx, db, out); err != nil {
		return VectorStore{}, fmt.Errorf("vector store %q: %w", id, err)
	}
	return out[0], nil
}

func (s *sqlStore) ListVectorStores(ctx context.Context, owner string, p Page) ([]VectorStore, bool, error) {
	out := []VectorStore{}
	if !validText(owner) {
		return out, false, nil
	}
	more, err := s.page(ctx, "list vector stores", "vector_stores", storeColumns, "id", `owner = ?`, []any{owner}, p, func(rows *sql.Rows) error {
		vs, err := scanStore(rows)
		out = append(out, vs)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	if p.Before != "" {
		slices.Reverse(out)
	}
	if err := s.fillCounts(ctx, s.r, out); err != nil {
		return nil, false, fmt.Errorf("list vector stores: %w", err)
	}
	return out, more, nil
}

func (s *sqlStore) UpdateVectorStore(ctx context.Context, owner, id string, u VectorStoreUpdate) (VectorStore, error) {
	const op = "update vector store"
	if u.Name != nil && (len(*u.Name) > MaxNameBytes || !validText(*u.Name)) {
		return VectorStore{}, fmt.Errorf("%s: %w: a name is up to %d bytes of UTF-8", op, ErrInvalid, MaxNameBytes)
	}
	if err := checkMetadata(u.Metadata); err != nil {
		return VectorStore{}, fmt.Errorf("%s: %w", op, err)
	}
	if err := checkExpiry(u.ExpiresAfter); err != nil {
		return VectorStore{}, fmt.Errorf("%s: %w", op, err)
	}
	var out VectorStore
	err := s.tx(ctx, func(tx *sql.Tx) error {
		vs, err := s.getStore(ctx, tx, owner, id)
		if err != nil {
			return err
		}
		if u.Name != nil {
			vs.Name = *u.Name
		}
		if u.Metadata != nil {
			vs.Metadata = u.Metadata
		}
		if u.ClearExpiry {
			vs.ExpiresAfter = nil
		}
		if u.ExpiresAfter != nil {
			e := *u.ExpiresAfter
			vs.ExpiresAfter = &e
		}
		vs.ExpiresAt = expiresAt(vs.LastActiveAt, vs.ExpiresAfter)
		days := 0
		if vs.ExpiresAfter != nil {
			days = vs.ExpiresAfter.Days
		}
		if _, err := tx.ExecContext(ctx, s.q(`UPDATE vector_stores SET name = ?, metadata = ?, expires_days = ?, expires_at = ? WHERE owner = ? AND id = ?`),
			vs.Name, metadataJSON(vs.Metadata), days, micros(vs.ExpiresAt), owner, id); err != nil {
			return err
		}
		out = vs
		return nil
	})
	if err != nil {
		return VectorStore{}, fmt.Errorf("%s: %w", op, err)
	}
	return out, nil
}

func (s *sqlStore) DeleteVectorStore(ctx context.Context, owner, id string) error {
	if !validID(storePrefix, id) || !validText(owner) {
		return fmt.Errorf("delete vector store %q: %w", id, ErrNotFound)
	}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.q(`DELETE FROM vector_stores WHERE owner = ? AND id = ?`), owner, id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return ErrNotFound
		}
		return s.deleteStoreRows(ctx, tx, []any{id})
	})
	if err != nil {
		return fmt.Errorf("delete vector store %q: %w", id, err)
	}
	return nil
}

// deleteStoreRows removes the chunks, attachments and batches of the
// stores.
func (s *sqlStore) deleteStoreRows(ctx context.Context, tx *sql.Tx, ids []any) error {
	if len(ids) == 0 {
		return nil
	}
	for _, t := range []string{"chunks", "vector_store_files", "file_batches"} {
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM `+t+` WHERE vs_id IN (`+in(len(ids))+`)`), ids...); err != nil {
			return err
		}
	}
	return nil
}

func (s *sqlStore) ChatVectorStore(ctx context.Context, owner, chat string) (VectorStore, error) {
	const op = "chat vector store"
	if err := checkOwner(op, owner); err != nil {
		return VectorStore{}, err
	}
	if chat == "" || len(chat) > MaxNameBytes || !validText(chat) {
		return VectorStore{}, fmt.Errorf("%s: %w: a chat id is 1 to %d bytes of UTF-8", op, ErrInvalid, MaxNameBytes)
	}
	now := s.opts.clock()
	// The partial unique index on (owner, chat) makes a second insert of
	// the same chat's store a no-op, however many run at once.
	if _, err := s.w.ExecContext(ctx, s.q(`INSERT INTO vector_stores (id, owner, name, metadata, expires_days, expires_at, last_active_at, created_at, chat)
		VALUES (?, ?, ?, '{}', 0, 0, ?, ?, ?) ON CONFLICT (owner, chat) WHERE chat <> '' DO NOTHING`),
		newID(storePrefix), owner, "chat "+chat, micros(now), micros(now), chat); err != nil {
		return VectorStore{}, fmt.Errorf("%s: %w", op, err)
	}
	// Read on the writer: a reader could predate the insert.
	vs, err := scanStore(s.w.QueryRowContext(ctx, s.q(`SELECT `+storeColumns+` FROM vector_stores WHERE owner = ? AND chat = ?`), owner, chat))
	if err != nil {
		return VectorStore{}, fmt.Errorf("%s: %w", op, err)
	}
	out := []VectorStore{vs}
	if err := s.fillCounts(ctx, s.w, out); err != nil {
		return VectorStore{}, fmt.Errorf("%s: %w", op, err)
	}
	return out[0], nil
}

func (s *sqlStore) Touch(ctx context.Context, owner string, ids ...string) error {
	if err := s.touch(ctx, s.w, owner, ids); err != nil {
		return fmt.Errorf("touch vector stores: %w", err)
	}
	return nil
}

func (s *sqlStore) touch(ctx context.Context, db dbtx, owner string, ids []string) error {
	uniq := map[string]bool{}
	for _, id := range ids {
		if !validID(storePrefix, id) {
			return fmt.Errorf("vector store %q: %w", id, ErrNotFound)
		}
		uniq[id] = true
	}
	if len(uniq) == 0 {
		return nil
	}
	now := micros(s.opts.clock())
	args := []any{now, now, int64(24 * time.Hour / time.Microsecond), owner}
	for id := range uniq {
		args = append(args, id)
	}
	res, err := db.ExecContext(ctx, s.q(`UPDATE vector_stores SET last_active_at = ?,
		expires_at = CASE WHEN expires_days > 0 THEN CAST(? AS BIGINT) + expires_days * CAST(? AS BIGINT) ELSE 0 END
		WHERE owner = ? AND id IN (`+in(len(uniq))+`)`), args...)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if int(n) != len(uniq) {
		return fmt.Errorf("vector store: %w", ErrNotFound)
	}
	return nil
}

// abandonedAfter is how old an incomplete upload (its process died) is
// when Expire removes it.
const abandonedAfter = 24 * time.Hour

func (s *sqlStore) Expire(ctx context.Context, now time.Time) (stores, files int, err error) {
	at := micros(now)
	err = s.tx(ctx, func(tx *sql.Tx) error {
		vsIDs, err := s.strings(ctx, tx, `SELECT id FROM vector_stores WHERE expires_at > 0 AND expires_at <= ?`, at)
		if err != nil {
			return err
		}
		for start := 0; start < len(vsIDs); start += 500 {
			batch := anys(vsIDs[start:min(start+500, len(vsIDs))])
			if err := s.deleteStoreRows(ctx, tx, batch); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM vector_stores WHERE id IN (`+in(len(batch))+`)`), batch...); err != nil {
				return err
			}
		}
		fileIDs, err := s.strings(ctx, tx, `SELECT id FROM files WHERE complete = 1 AND expires_at > 0 AND expires_at <= ?`, at)
		if err != nil {
			return err
		}
		abandoned, err := s.strings(ctx, tx, `SELECT id FROM files WHERE complete = 0 AND created_at <= ?`, micros(now.Add(-abandonedAfter)))
		if err != nil {
			return err
		}
		all := append(slices.Clone(fileIDs), abandoned...)
		for start := 0; start < len(all); start += 500 {
			batch := anys(all[start:min(start+500, len(all))])
			for _, q := range []string{
				`DELETE FROM chunks WHERE file_id IN (%s)`,
				`DELETE FROM vector_store_files WHERE file_id IN (%s)`,
				`DELETE FROM file_parts WHERE file_id IN (%s)`,
				`DELETE FROM files WHERE id IN (%s)`,
			} {
				if _, err := tx.ExecContext(ctx, s.q(fmt.Sprintf(q, in(len(batch)))), batch...); err != nil {
					return err
				}
			}
		}
		stores, files = len(vsIDs), len(fileIDs)
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("expire documents: %w", err)
	}
	return stores, files, nil
}

// strings reads a one-column query.
func (s *sqlStore) strings(ctx context.Context, db dbtx, q string, args ...any) ([]string, error) {
	rows, err := db.QueryContext(ctx, s.q(q), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// ---- attachments

const attachColumns = `vs_id, file_id, owner, batch_id, status, error_code, error_message, attributes, chunk_type, chunk_max, chunk_overlap, usage_bytes, run, created_at`

func scanAttach(sc interface{ Scan(...any) error }) (VectorStoreFile, error) {
	var f VectorStoreFile
	var code, msg, attrs string
	var created int64
	if err := sc.Scan(&f.VectorStoreID, &f.FileID, &f.Owner, &f.BatchID, &f.Status, &code, &msg, &attrs,
		&f.Chunking.Type, &f.Chunking.MaxChunkSizeTokens, &f.Chunking.ChunkOverlapTokens, &f.UsageBytes, &f.Run, &created); err != nil {
		return VectorStoreFile{}, err
	}
	if code != "" {
		f.LastError = &FileError{Code: code, Message: msg}
	}
	if err := json.Unmarshal([]byte(attrs), &f.Attributes); err != nil {
		return VectorStoreFile{}, fmt.Errorf("attributes: %w", err)
	}
	f.CreatedAt = fromMicros(created)
	return f, nil
}

func attributesJSON(a map[string]any) string {
	if a == nil {
		a = map[string]any{}
	}
	b, _ := json.Marshal(a)
	return string(b)
}

func validStatus(s string) bool {
	switch s {
	case StatusInProgress, StatusCompleted, StatusFailed, StatusCancelled:
		return true
	}
	return false
}

func (s *sqlStore) AttachFile(ctx context.Context, f VectorStoreFile) (VectorStoreFile, error) {
	const op = "attach file"
	if err := checkOwner(op, f.Owner); err != nil {
		return VectorStoreFile{}, err
	}
	attrs, err := checkAttributes(f.Attributes)
	if err != nil {
		return VectorStoreFile{}, fmt.Errorf("%s: %w", op, err)
	}
	f.Attributes = attrs
	if f.Status == "" {
		f.Status = StatusInProgress
	}
	if !validStatus(f.Status) {
		return VectorStoreFile{}, fmt.Errorf("%s: %w: status %q", op, ErrInvalid, f.Status)
	}
	if f.Chunking.Type == "" {
		f.Chunking = ChunkingStrategy{Type: "static", MaxChunkSizeTokens: 800, ChunkOverlapTokens: 400}
	}
	if len(f.Chunking.Type) > 32 || !validText(f.Chunking.Type) || len(f.Run) > MaxNameBytes || !validText(f.Run) {
		return VectorStoreFile{}, fmt.Errorf("%s: %w: chunking type or run", op, ErrInvalid)
	}
	if f.BatchID != "" && !validID(batchPrefix, f.BatchID) {
		return VectorStoreFile{}, fmt.Errorf("%s: batch %q: %w", op, f.BatchID, ErrNotFound)
	}
	var out VectorStoreFile
	err = s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := s.getStore(ctx, tx, f.Owner, f.VectorStoreID); err != nil {
			return err
		}
		if _, err := s.getFile(ctx, tx, f.Owner, f.FileID); err != nil {
			return err
		}
		if f.BatchID != "" {
			var one int
			err := tx.QueryRowContext(ctx, s.q(`SELECT 1 FROM file_batches WHERE owner = ? AND vs_id = ? AND id = ?`), f.Owner, f.VectorStoreID, f.BatchID).Scan(&one)
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("batch %q: %w", f.BatchID, ErrNotFound)
			}
			if err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO vector_store_files (`+attachColumns+`)
			VALUES (?, ?, ?, ?, ?, '', '', ?, ?, ?, ?, 0, ?, ?) ON CONFLICT (vs_id, file_id) DO NOTHING`),
			f.VectorStoreID, f.FileID, f.Owner, f.BatchID, f.Status, attributesJSON(f.Attributes),
			f.Chunking.Type, f.Chunking.MaxChunkSizeTokens, f.Chunking.ChunkOverlapTokens, f.Run, micros(s.opts.clock())); err != nil {
			return err
		}
		var err error
		out, err = s.getAttach(ctx, tx, f.Owner, f.VectorStoreID, f.FileID)
		return err
	})
	if err != nil {
		return VectorStoreFile{}, fmt.Errorf("%s: %w", op, err)
	}
	return out, nil
}

func (s *sqlStore) getAttach(ctx context.Context, db dbtx, owner, vsID, fileID string) (VectorStoreFile, error) {
	if !validID(storePrefix, vsID) || !validID(filePrefix, fileID) || !validText(owner) {
		return VectorStoreFile{}, fmt.Errorf("file %q of vector store %q: %w", fileID, vsID, ErrNotFound)
	}
	f, err := scanAttach(db.QueryRowContext(ctx, s.q(`SELECT `+attachColumns+` FROM vector_store_files WHERE owner = ? AND vs_id = ? AND file_id = ?`), owner, vsID, fileID))
	if errors.Is(err, sql.ErrNoRows) {
		return VectorStoreFile{}, fmt.Errorf("file %q of vector store %q: %w", fileID, vsID, ErrNotFound)
	}
	return f, err
}

func (s *sqlStore) GetVectorStoreFile(ctx context.Context, owner, vsID, fileID string) (VectorStoreFile, error) {
	f, err := s.getAttach(ctx, s.r, owner, vsID, fileID)
	if err != nil {
		return VectorStoreFile{}, fmt.Errorf("get vector store file: %w", err)
	}
	return f, nil
}

func (s *sqlStore) ListVectorStoreFiles(ctx context.Context, owner, vsID, status, batchID string, p Page) ([]VectorStoreFile, bool, error) {
	const op = "list vector store files"
	if status != "" && !validStatus(status) {
		return nil, false, fmt.Errorf("%s: %w: status %q", op, ErrInvalid, status)
	}
	var one int
	if !validID(storePrefix, vsID) || !validText(owner) {
		return nil, false, fmt.Errorf("%s: vector store %q: %w", op, vsID, ErrNotFound)
	}
	err := s.r.QueryRowContext(ctx, s.q(`SELECT 1 FROM vector_stores WHERE owner = ? AND id = ?`), owner, vsID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, fmt.Errorf("%s: vector store %q: %w", op, vsID, ErrNotFound)
	}
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", op, err)
	}
	where, args := `owner = ? AND vs_id = ?`, []any{owner, vsID}
	if status != "" {
		where += ` AND status = ?`
		args = append(args, status)
	}
	if batchID != "" {
		where += ` AND batch_id = ?`
		args = append(args, batchID)
	}
	out := []VectorStoreFile{}
	more, err := s.page(ctx, op, "vector_store_files", attachColumns, "file_id", where, args, p, func(rows *sql.Rows) error {
		f, err := scanAttach(rows)
		out = append(out, f)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	if p.Before != "" {
		slices.Reverse(out)
	}
	return out, more, nil
}

func (s *sqlStore) UpdateAttributes(ctx context.Context, owner, vsID, fileID string, attrs map[string]any) (VectorStoreFile, error) {
	const op = "update attributes"
	attrs, err := checkAttributes(attrs)
	if err != nil {
		return VectorStoreFile{}, fmt.Errorf("%s: %w", op, err)
	}
	var out VectorStoreFile
	err = s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := s.getAttach(ctx, tx, owner, vsID, fileID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q(`UPDATE vector_store_files SET attributes = ? WHERE owner = ? AND vs_id = ? AND file_id = ?`),
			attributesJSON(attrs), owner, vsID, fileID); err != nil {
			return err
		}
		out, err = s.getAttach(ctx, tx, owner, vsID, fileID)
		return err
	})
	if err != nil {
		return VectorStoreFile{}, fmt.Errorf("%s: %w", op, err)
	}
	return out, nil
}

// octets is the SQL of a text column's length in bytes.
func (s *sqlStore) octets(col string) string {
	if s.pg {
		return "octet_length(" + col + ")"
	}
	return "length(CAST(" + col + " AS BLOB))"
}

func (s *sqlStore) SetStatus(ctx context.Context, owner, vsID, fileID, status string, lastErr *FileError) error {
	const op = "set status"
	if !validStatus(status) {
		return fmt.Errorf("%s: %w: status %q", op, ErrInvalid, status)
	}
	var code, msg string
	if lastErr != nil && status == StatusFailed {
		code, msg = lastErr.Code, lastErr.Message
		if len(msg) > 4096 {
			msg = msg[:4096]
		}
		if code == "" || len(code) > 64 || !validText(code) || !validText(msg) {
			return fmt.Errorf("%s: %w: last error", op, ErrInvalid)
		}
	}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := s.getAttach(ctx, tx, owner, vsID, fileID); err != nil {
			return err
		}
		q := `UPDATE vector_store_files SET status = ?, error_code = ?, error_message = ? WHERE owner = ? AND vs_id = ? AND file_id = ?`
		if status == StatusCompleted {
			q = `UPDATE vector_store_files SET status = ?, error_code = ?, error_message = ?,
				usage_bytes = (SELECT coalesce(sum(` + s.octets("text") + ` + 4 * dim), 0) FROM chunks
					WHERE chunks.vs_id = vector_store_files.vs_id AND chunks.file_id = vector_store_files.file_id)
				WHERE owner = ? AND vs_id = ? AND file_id = ?`
		}
		_, err := tx.ExecContext(ctx, s.q(q), status, code, msg, owner, vsID, fileID)
		return err
	})
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

func (s *sqlStore) DetachFile(ctx context.Context, owner, vsID, fileID string) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := s.getAttach(ctx, tx, owner, vsID, fileID); err != nil {
			return err
		}
		for _, q := range []string{
			`DELETE FROM chunks WHERE owner = ? AND vs_id = ? AND file_id = ?`,
			`DELETE FROM vector_store_files WHERE owner = ? AND vs_id = ? AND file_id = ?`,
		} {
			if _, err := tx.ExecContext(ctx, s.q(q), owner, vsID, fileID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("detach file: %w", err)
	}
	return nil
}

// ---- batches

func (s *sqlStore) CreateBatch(ctx context.Context, b FileBatch) (FileBatch, error) {
	const op = "create file batch"
	if err := checkOwner(op, b.Owner); err != nil {
		return FileBatch{}, err
	}
	b.ID, b.CreatedAt = newID(batchPrefix), s.opts.clock()
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := s.getStore(ctx, tx, b.Owner, b.VectorStoreID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO file_batches (id, vs_id, owner, created_at) VALUES (?, ?, ?, ?)`),
			b.ID, b.VectorStoreID, b.Owner, micros(b.CreatedAt))
		return err
	})
	if err != nil {
		return FileBatch{}, fmt.Errorf("%s: %w", op, err)
	}
	b.FileCounts, b.Status = FileCounts{}, batchStatus(FileCounts{})
	return b, nil
}

// batchStatus is a batch's status from its files' counts. OpenAI's
// VectorStoreFileBatch has a status of "in_progress, completed, cancelled
// or failed" and file_counts by the same states
// (https://developers.openai.com/api/reference/go/resources/vector_stores/subresources/file_batches,
// "VectorStoreFileBatch"), and cancelling a batch "attempts to cancel the
// processing of files in this batch as soon as possible"; it does not
// define how the batch's status follows its files', so this is ours:
// in_progress while any file is; else cancelled when any file was
// cancelled (the batch was); else completed, the failed files counted in
// FileCounts.Failed. Failed is never a whole batch's status here: files
// fail one by one. A batch of no files (all detached) is completed.
func batchStatus(c FileCounts) string {
	switch {
	case c.InProgress > 0:
		return StatusInProgress
	case c.Cancelled > 0:
		return StatusCancelled
	}
	return StatusCompleted
}

func (s *sqlStore) GetBatch(ctx context.Context, owner, vsID, batchID string) (FileBatch, error) {
	const op = "get file batch"
	if !validID(batchPrefix, batchID) || !validID(storePrefix, vsID) || !validText(owner) {
		return FileBatch{}, fmt.Errorf("%s %q: %w", op, batchID, ErrNotFound)
	}
	b := FileBatch{ID: batchID, VectorStoreID: vsID, Owner: owner}
	var created int64
	err := s.r.QueryRowContext(ctx, s.q(`SELECT created_at FROM file_batches WHERE owner = ? AND vs_id = ? AND id = ?`), owner, vsID, batchID).Scan(&created)
	if errors.Is(err, sql.ErrNoRows) {
		return FileBatch{}, fmt.Errorf("%s %q: %w", op, batchID, ErrNotFound)
	}
	if err != nil {
		return FileBatch{}, fmt.Errorf("%s: %w", op, err)
	}
	b.CreatedAt = fromMicros(created)
	rows, err := s.r.QueryContext(ctx, s.q(`SELECT status, count(*) FROM vector_store_files WHERE owner = ? AND vs_id = ? AND batch_id = ? GROUP BY status`), owner, vsID, batchID)
	if err != nil {
		return FileBatch{}, fmt.Errorf("%s: %w", op, err)
	}
	defer rows.Close()
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return FileBatch{}, fmt.Errorf("%s: %w", op, err)
		}
		count(&b.FileCounts, st, n)
	}
	if err := rows.Err(); err != nil {
		return FileBatch{}, fmt.Errorf("%s: %w", op, err)
	}
	b.Status = batchStatus(b.FileCounts)
	return b, nil
}

// ---- chunks

// encodeVector is v as a blob: little-endian float32s.
func encodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

func (s *sqlStore) PutChunks(ctx context.Context, owner string, chunks []Chunk) error {
	const op = "put chunks"
	if err := checkOwner(op, owner); err != nil {
		return err
	}
	if len(chunks) == 0 {
		return nil
	}
	vecs, dim, err := checkChunks(chunks)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if s.vector && dim > 0 {
		if err := s.ensureIndex(ctx, dim); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
	}
	err = s.tx(ctx, func(tx *sql.Tx) error {
		return s.insertChunks(ctx, tx, owner, chunks, vecs, dim)
	})
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// checkChunks checks that chunks belong to one attachment and are sound,
// and returns their vectors normalized (nil for a chunk without one) and
// the vectors' length (0 when no chunk has one).
func checkChunks(chunks []Chunk) (vecs [][]float32, dim int, err error) {
	vsID, fileID := chunks[0].VectorStoreID, chunks[0].FileID
	vecs = make([][]float32, len(chunks))
	for i, c := range chunks {
		switch {
		case c.VectorStoreID != vsID || c.FileID != fileID:
			return nil, 0, fmt.Errorf("%w: chunks of more than one attachment", ErrInvalid)
		case c.Index < 0 || c.Tokens < 0:
			return nil, 0, fmt.Errorf("%w: chunk index and tokens must not be negative", ErrInvalid)
		case len(c.Text) > MaxChunkBytes || !validText(c.Text):
			return nil, 0, fmt.Errorf("%w: chunk %d: text is up to %d bytes of UTF-8 without NUL", ErrInvalid, c.Index, MaxChunkBytes)
		}
		if c.Vector == nil {
			continue
		}
		if len(c.Vector) == 0 || len(c.Vector) > MaxDimensions || (dim != 0 && len(c.Vector) != dim) {
			return nil, 0, fmt.Errorf("%w: chunk %d: a vector of %d dimensions (want 1 to %d, all of one length)", ErrInvalid, c.Index, len(c.Vector), MaxDimensions)
		}
		v, ok := normalize(c.Vector)
		if !ok {
			return nil, 0, fmt.Errorf("%w: chunk %d: zero or non-finite vector", ErrInvalid, c.Index)
		}
		dim, vecs[i] = len(v), v
	}
	return vecs, dim, nil
}

// insertChunks writes the chunks of one attachment of owner in tx,
// replacing chunks of the same index, once it has checked that the
// attachment exists and that its store holds no vectors of another length.
func (s *sqlStore) insertChunks(ctx context.Context, tx *sql.Tx, owner string, chunks []Chunk, vecs [][]float32, dim int) error {
	vsID, fileID := chunks[0].VectorStoreID, chunks[0].FileID
	if _, err := s.getAttach(ctx, tx, owner, vsID, fileID); err != nil {
		return err
	}
	if dim > 0 {
		var other int
		err := tx.QueryRowContext(ctx, s.q(`SELECT dim FROM chunks WHERE vs_id = ? AND dim > 0 AND dim <> ? LIMIT 1`), vsID, dim).Scan(&other)
		if err == nil {
			return fmt.Errorf("%w: vectors of %d dimensions in a vector store of %d", ErrInvalid, dim, other)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
	}
	cols, vals, set := `vs_id, file_id, owner, idx, text, tokens, dim, vec`, `?, ?, ?, ?, ?, ?, ?, ?`,
		`text = excluded.text, tokens = excluded.tokens, dim = excluded.dim, vec = excluded.vec`
	if s.vector {
		cols, vals, set = cols+`, embedding`, vals+`, CAST(? AS vector)`, set+`, embedding = excluded.embedding`
	}
	stmt, err := tx.PrepareContext(ctx, s.q(`INSERT INTO chunks (`+cols+`) VALUES (`+vals+`)
		ON CONFLICT (vs_id, file_id, idx) DO UPDATE SET `+set))
	if err != nil {
		return err
	}
	defer stmt.Close()
	for i, c := range chunks {
		var blob []byte
		var emb any
		if vecs[i] != nil {
			blob = encodeVector(vecs[i])
			emb = vectorLiteral(vecs[i])
		}
		args := []any{vsID, fileID, owner, c.Index, c.Text, c.Tokens, len(vecs[i]), blob}
		if s.vector {
			args = append(args, emb)
		}
		if _, err := stmt.ExecContext(ctx, args...); err != nil {
			return err
		}
	}
	return nil
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

func (s *sqlStore) DeleteChunks(ctx context.Context, owner, vsID, fileID string, from int) error {
	if from < 0 {
		return fmt.Errorf("delete chunks: %w: from %d", ErrInvalid, from)
	}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := s.getAttach(ctx, tx, owner, vsID, fileID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, s.q(`DELETE FROM chunks WHERE owner = ? AND vs_id = ? AND file_id = ? AND idx >= ?`), owner, vsID, fileID, from)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete chunks: %w", err)
	}
	return nil
}

func (s *sqlStore) Chunks(ctx context.Context, owner, vsID, fileID string) ([]Chunk, error) {
	if _, err := s.getAttach(ctx, s.r, owner, vsID, fileID); err != nil {
		return nil, fmt.Errorf("chunks: %w", err)
	}
	rows, err := s.r.QueryContext(ctx, s.q(`SELECT idx, text, tokens FROM chunks WHERE owner = ? AND vs_id = ? AND file_id = ? ORDER BY idx`), owner, vsID, fileID)
	if err != nil {
		return nil, fmt.Errorf("chunks: %w", err)
	}
	defer rows.Close()
	out := []Chunk{}
	for rows.Next() {
		c := Chunk{VectorStoreID: vsID, FileID: fileID}
		if err := rows.Scan(&c.Index, &c.Text, &c.Tokens); err != nil {
			return nil, fmt.Errorf("chunks: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("chunks: %w", err)
	}
	return out, nil
}

func (s *sqlStore) DeleteOwner(ctx context.Context, owner string) error {
	if !validText(owner) || owner == "" {
		return nil
	}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		for _, q := range []string{
			`DELETE FROM chunks WHERE owner = ?`,
			`DELETE FROM vector_store_files WHERE owner = ?`,
			`DELETE FROM file_batches WHERE owner = ?`,
			`DELETE FROM vector_stores WHERE owner = ?`,
			`DELETE FROM file_parts WHERE file_id IN (SELECT id FROM files WHERE owner = ?)`,
			`DELETE FROM files WHERE owner = ?`,
		} {
			if _, err := tx.ExecContext(ctx, s.q(q), owner); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete the owner's documents: %w", err)
	}
	return nil
}
