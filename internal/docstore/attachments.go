package docstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/longhaul-dev/longhaul/internal/sqldb"
)

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
	if len(f.Chunking.Type) > 32 || !sqldb.ValidText(f.Chunking.Type) || len(f.Run) > MaxNameBytes || !sqldb.ValidText(f.Run) {
		return VectorStoreFile{}, fmt.Errorf("%s: %w: chunking type or run", op, ErrInvalid)
	}
	if f.BatchID != "" && !validID(batchPrefix, f.BatchID) {
		return VectorStoreFile{}, fmt.Errorf("%s: batch %q: %w", op, f.BatchID, ErrNotFound)
	}
	var out VectorStoreFile
	err = s.db.Write(ctx, func(tx sqldb.Tx) error {
		if _, err := s.getStore(ctx, tx, f.Owner, f.VectorStoreID); err != nil {
			return err
		}
		if _, err := s.getFile(ctx, tx, f.Owner, f.FileID); err != nil {
			return err
		}
		if f.BatchID != "" {
			var one int
			err := tx.QueryRowContext(ctx, `SELECT 1 FROM file_batches WHERE owner = ? AND vs_id = ? AND id = ?`, f.Owner, f.VectorStoreID, f.BatchID).Scan(&one)
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("batch %q: %w", f.BatchID, ErrNotFound)
			}
			if err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO vector_store_files (`+attachColumns+`)
			VALUES (?, ?, ?, ?, ?, '', '', ?, ?, ?, ?, 0, ?, ?) ON CONFLICT (vs_id, file_id) DO NOTHING`,
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

func (s *sqlStore) getAttach(ctx context.Context, db sqldb.Querier, owner, vsID, fileID string) (VectorStoreFile, error) {
	if !validID(storePrefix, vsID) || !validID(filePrefix, fileID) || !sqldb.ValidText(owner) {
		return VectorStoreFile{}, fmt.Errorf("file %q of vector store %q: %w", fileID, vsID, ErrNotFound)
	}
	f, err := scanAttach(db.QueryRowContext(ctx, `SELECT `+attachColumns+` FROM vector_store_files WHERE owner = ? AND vs_id = ? AND file_id = ?`, owner, vsID, fileID))
	if errors.Is(err, sql.ErrNoRows) {
		return VectorStoreFile{}, fmt.Errorf("file %q of vector store %q: %w", fileID, vsID, ErrNotFound)
	}
	return f, err
}

func (s *sqlStore) GetVectorStoreFile(ctx context.Context, owner, vsID, fileID string) (VectorStoreFile, error) {
	f, err := s.getAttach(ctx, s.db.Reader(), owner, vsID, fileID)
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
	if !validID(storePrefix, vsID) || !sqldb.ValidText(owner) {
		return nil, false, fmt.Errorf("%s: vector store %q: %w", op, vsID, ErrNotFound)
	}
	err := s.db.Reader().QueryRowContext(ctx, `SELECT 1 FROM vector_stores WHERE owner = ? AND id = ?`, owner, vsID).Scan(&one)
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
	return listPage(ctx, s, op, "vector_store_files", attachColumns, "file_id", where, args, p, scanAttach)
}

func (s *sqlStore) UpdateAttributes(ctx context.Context, owner, vsID, fileID string, attrs map[string]any) (VectorStoreFile, error) {
	const op = "update attributes"
	attrs, err := checkAttributes(attrs)
	if err != nil {
		return VectorStoreFile{}, fmt.Errorf("%s: %w", op, err)
	}
	var out VectorStoreFile
	err = s.db.Write(ctx, func(tx sqldb.Tx) error {
		if _, err := s.getAttach(ctx, tx, owner, vsID, fileID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE vector_store_files SET attributes = ? WHERE owner = ? AND vs_id = ? AND file_id = ?`,
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
	if s.db.Postgres() {
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
		if code == "" || len(code) > 64 || !sqldb.ValidText(code) || !sqldb.ValidText(msg) {
			return fmt.Errorf("%s: %w: last error", op, ErrInvalid)
		}
	}
	err := s.db.Write(ctx, func(tx sqldb.Tx) error {
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
		_, err := tx.ExecContext(ctx, q, status, code, msg, owner, vsID, fileID)
		return err
	})
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

func (s *sqlStore) DetachFile(ctx context.Context, owner, vsID, fileID string) error {
	err := s.db.Write(ctx, func(tx sqldb.Tx) error {
		if _, err := s.getAttach(ctx, tx, owner, vsID, fileID); err != nil {
			return err
		}
		for _, q := range []string{
			`DELETE FROM chunks WHERE owner = ? AND vs_id = ? AND file_id = ?`,
			`DELETE FROM vector_store_files WHERE owner = ? AND vs_id = ? AND file_id = ?`,
		} {
			if _, err := tx.ExecContext(ctx, q, owner, vsID, fileID); err != nil {
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
	err := s.db.Write(ctx, func(tx sqldb.Tx) error {
		if _, err := s.getStore(ctx, tx, b.Owner, b.VectorStoreID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO file_batches (id, vs_id, owner, created_at) VALUES (?, ?, ?, ?)`,
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
	if !validID(batchPrefix, batchID) || !validID(storePrefix, vsID) || !sqldb.ValidText(owner) {
		return FileBatch{}, fmt.Errorf("%s %q: %w", op, batchID, ErrNotFound)
	}
	b := FileBatch{ID: batchID, VectorStoreID: vsID, Owner: owner}
	var created int64
	err := s.db.Reader().QueryRowContext(ctx, `SELECT created_at FROM file_batches WHERE owner = ? AND vs_id = ? AND id = ?`, owner, vsID, batchID).Scan(&created)
	if errors.Is(err, sql.ErrNoRows) {
		return FileBatch{}, fmt.Errorf("%s %q: %w", op, batchID, ErrNotFound)
	}
	if err != nil {
		return FileBatch{}, fmt.Errorf("%s: %w", op, err)
	}
	b.CreatedAt = fromMicros(created)
	rows, err := s.db.Reader().QueryContext(ctx, `SELECT status, count(*) FROM vector_store_files WHERE owner = ? AND vs_id = ? AND batch_id = ? GROUP BY status`, owner, vsID, batchID)
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
