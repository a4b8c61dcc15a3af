package docstore

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/longhaul-dev/longhaul/internal/pgvector"
	"github.com/longhaul-dev/longhaul/internal/sqldb"
)

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
	if s.vec.Vector && dim > 0 {
		if err := s.vec.Ensure(ctx, s.db, dim); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
	}
	err = s.db.Write(ctx, func(tx sqldb.Tx) error {
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
		case len(c.Text) > MaxChunkBytes || !sqldb.ValidText(c.Text):
			return nil, 0, fmt.Errorf("%w: chunk %d: text is up to %d bytes of UTF-8 without NUL", ErrInvalid, c.Index, MaxChunkBytes)
		}
		if c.Vector == nil {
			continue
		}
		if len(c.Vector) == 0 || len(c.Vector) > MaxDimensions || (dim != 0 && len(c.Vector) != dim) {
			return nil, 0, fmt.Errorf("%w: chunk %d: a vector of %d dimensions (want 1 to %d, all of one length)", ErrInvalid, c.Index, len(c.Vector), MaxDimensions)
		}
		v, ok := pgvector.Normalize(c.Vector)
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
func (s *sqlStore) insertChunks(ctx context.Context, tx sqldb.Tx, owner string, chunks []Chunk, vecs [][]float32, dim int) error {
	vsID, fileID := chunks[0].VectorStoreID, chunks[0].FileID
	if _, err := s.getAttach(ctx, tx, owner, vsID, fileID); err != nil {
		return err
	}
	if dim > 0 {
		var other int
		err := tx.QueryRowContext(ctx, `SELECT dim FROM chunks WHERE vs_id = ? AND dim > 0 AND dim <> ? LIMIT 1`, vsID, dim).Scan(&other)
		if err == nil {
			return fmt.Errorf("%w: vectors of %d dimensions in a vector store of %d", ErrInvalid, dim, other)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
	}
	cols, vals, set := `vs_id, file_id, owner, idx, text, tokens, dim, vec`, `?, ?, ?, ?, ?, ?, ?, ?`,
		`text = excluded.text, tokens = excluded.tokens, dim = excluded.dim, vec = excluded.vec`
	if s.vec.Vector {
		cols, vals, set = cols+`, embedding`, vals+`, CAST(? AS vector)`, set+`, embedding = excluded.embedding`
	}
	stmt, err := tx.Raw.PrepareContext(ctx, tx.Bind(`INSERT INTO chunks (`+cols+`) VALUES (`+vals+`)
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
			emb = pgvector.Literal(vecs[i])
		}
		args := []any{vsID, fileID, owner, c.Index, c.Text, c.Tokens, len(vecs[i]), blob}
		if s.vec.Vector {
			args = append(args, emb)
		}
		if _, err := stmt.ExecContext(ctx, args...); err != nil {
			return err
		}
	}
	return nil
}

func (s *sqlStore) DeleteChunks(ctx context.Context, owner, vsID, fileID string, from int) error {
	if from < 0 {
		return fmt.Errorf("delete chunks: %w: from %d", ErrInvalid, from)
	}
	err := s.db.Write(ctx, func(tx sqldb.Tx) error {
		if _, err := s.getAttach(ctx, tx, owner, vsID, fileID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM chunks WHERE owner = ? AND vs_id = ? AND file_id = ? AND idx >= ?`, owner, vsID, fileID, from)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete chunks: %w", err)
	}
	return nil
}

func (s *sqlStore) Chunks(ctx context.Context, owner, vsID, fileID string) ([]Chunk, error) {
	if _, err := s.getAttach(ctx, s.db.Reader(), owner, vsID, fileID); err != nil {
		return nil, fmt.Errorf("chunks: %w", err)
	}
	rows, err := s.db.Reader().QueryContext(ctx, `SELECT idx, text, tokens FROM chunks WHERE owner = ? AND vs_id = ? AND file_id = ? ORDER BY idx`, owner, vsID, fileID)
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
	if !sqldb.ValidText(owner) || owner == "" {
		return nil
	}
	err := s.db.Write(ctx, func(tx sqldb.Tx) error {
		for _, q := range []string{
			`DELETE FROM chunks WHERE owner = ?`,
			`DELETE FROM vector_store_files WHERE owner = ?`,
			`DELETE FROM file_batches WHERE owner = ?`,
			`DELETE FROM vector_stores WHERE owner = ?`,
			`DELETE FROM file_parts WHERE file_id IN (SELECT id FROM files WHERE owner = ?)`,
			`DELETE FROM files WHERE owner = ?`,
		} {
			if _, err := tx.ExecContext(ctx, q, owner); err != nil {
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
