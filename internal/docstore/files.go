package docstore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/longhaul-dev/longhaul/internal/sqldb"
)

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
	case f.Filename == "" || len(f.Filename) > MaxNameBytes || !sqldb.ValidText(f.Filename):
		return File{}, fmt.Errorf("%s: %w: a file name is 1 to %d bytes of UTF-8", op, ErrInvalid, MaxNameBytes)
	case len(f.Purpose) > 64 || !sqldb.ValidText(f.Purpose):
		return File{}, fmt.Errorf("%s: %w: purpose", op, ErrInvalid)
	case len(f.ContentType) > 255 || !sqldb.ValidText(f.ContentType):
		return File{}, fmt.Errorf("%s: %w: content type", op, ErrInvalid)
	}
	f.ID, f.CreatedAt, f.Bytes, f.SHA256 = newID(filePrefix), s.opts.clock(), 0, ""
	f.ExpiresAt = f.ExpiresAt.UTC().Truncate(time.Microsecond)
	// The row is written first, incomplete (no reader sees it), then the
	// parts each in a transaction of its own, so a slow upload never holds
	// the writer; a failure removes both, and Expire removes what a crash
	// left.
	if _, err := s.db.Writer().ExecContext(ctx, `INSERT INTO files (id, owner, filename, purpose, content_type, bytes, sha256, created_at, expires_at, complete)
		VALUES (?, ?, ?, ?, ?, 0, '', ?, ?, 0)`,
		f.ID, f.Owner, f.Filename, f.Purpose, f.ContentType, micros(f.CreatedAt), micros(f.ExpiresAt)); err != nil {
		return File{}, fmt.Errorf("%s: %w", op, err)
	}
	fail := func(err error) (File, error) {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		derr := s.db.Write(cctx, func(tx sqldb.Tx) error {
			if _, err := tx.ExecContext(cctx, `DELETE FROM file_parts WHERE file_id = ?`, f.ID); err != nil {
				return err
			}
			_, err := tx.ExecContext(cctx, `DELETE FROM files WHERE id = ?`, f.ID)
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
			if _, err := s.db.Writer().ExecContext(ctx, `INSERT INTO file_parts (file_id, n, data) VALUES (?, ?, ?)`, f.ID, n, buf[:k]); err != nil {
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
	if _, err := s.db.Writer().ExecContext(ctx, `UPDATE files SET bytes = ?, sha256 = ?, complete = 1 WHERE id = ?`, f.Bytes, f.SHA256, f.ID); err != nil {
		return fail(err)
	}
	return f, nil
}

func (s *sqlStore) GetFile(ctx context.Context, owner, id string) (File, error) {
	return s.getFile(ctx, s.db.Reader(), owner, id)
}

func (s *sqlStore) getFile(ctx context.Context, db sqldb.Querier, owner, id string) (File, error) {
	if !validID(filePrefix, id) || !sqldb.ValidText(owner) {
		return File{}, fmt.Errorf("file %q: %w", id, ErrNotFound)
	}
	f, err := scanFile(db.QueryRowContext(ctx, `SELECT `+fileColumns+` FROM files WHERE owner = ? AND id = ? AND complete = 1`, owner, id))
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
		err := p.s.db.Reader().QueryRowContext(p.ctx, `SELECT data FROM file_parts WHERE file_id = ? AND n = ?`, p.id, p.n).Scan(&data)
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
// listPage reads a page of table's rows (see page) with scan and returns
// them in the page's order.
func listPage[T any](ctx context.Context, s *sqlStore, op, table, cols, idCol, where string, args []any, p Page,
	scan func(interface{ Scan(...any) error }) (T, error)) ([]T, bool, error) {
	out := []T{}
	more, err := s.page(ctx, op, table, cols, idCol, where, args, p, func(rows *sql.Rows) error {
		v, err := scan(rows)
		out = append(out, v)
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
		err := s.db.Reader().QueryRowContext(ctx, `SELECT seq FROM `+table+` WHERE `+where+` AND `+idCol+` = ?`, append(slices.Clone(args), cursor)...).Scan(&seq)
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
	rows, err := s.db.Reader().QueryContext(ctx, q, qargs...)
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
	if !sqldb.ValidText(owner) {
		return u, nil
	}
	err := s.db.Reader().QueryRowContext(ctx, `SELECT
		(SELECT COUNT(*) FROM files WHERE owner = ? AND complete = 1),
		(SELECT COALESCE(SUM(bytes), 0) FROM files WHERE owner = ? AND complete = 1),
		(SELECT COUNT(*) FROM vector_store_files WHERE owner = ? AND status = ?)`,
		owner, owner, owner, StatusInProgress).Scan(&u.Files, &u.Bytes, &u.Ingesting)
	if err != nil {
		return Usage{}, fmt.Errorf("usage: %w", err)
	}
	return u, nil
}

func (s *sqlStore) ListFiles(ctx context.Context, owner, purpose string, p Page) ([]File, bool, error) {
	if !sqldb.ValidText(owner) || !sqldb.ValidText(purpose) {
		return []File{}, false, nil
	}
	where, args := `owner = ? AND complete = 1`, []any{owner}
	if purpose != "" {
		where += ` AND purpose = ?`
		args = append(args, purpose)
	}
	return listPage(ctx, s, "list files", "files", fileColumns, "id", where, args, p, scanFile)
}

func (s *sqlStore) DeleteFile(ctx context.Context, owner, id string) error {
	if !validID(filePrefix, id) || !sqldb.ValidText(owner) {
		return fmt.Errorf("delete file %q: %w", id, ErrNotFound)
	}
	err := s.db.Write(ctx, func(tx sqldb.Tx) error {
		if err := deleteOne(ctx, tx, `DELETE FROM files WHERE owner = ? AND id = ?`, owner, id); err != nil {
			return err
		}
		for _, q := range []string{
			`DELETE FROM chunks WHERE owner = ? AND file_id = ?`,
			`DELETE FROM vector_store_files WHERE owner = ? AND file_id = ?`,
		} {
			if _, err := tx.ExecContext(ctx, q, owner, id); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM file_parts WHERE file_id = ?`, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete file %q: %w", id, err)
	}
	return nil
}
