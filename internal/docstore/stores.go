package docstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/longhaul-dev/longhaul/internal/sqldb"
)

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
func (s *sqlStore) fillCounts(ctx context.Context, db sqldb.Querier, vss []VectorStore) error {
	if len(vss) == 0 {
		return nil
	}
	idx := map[string]int{}
	ids := make([]any, len(vss))
	for i, vs := range vss {
		idx[vs.ID] = i
		ids[i] = vs.ID
	}
	rows, err := db.QueryContext(ctx, `SELECT vs_id, status, count(*), coalesce(sum(usage_bytes), 0) FROM vector_store_files
		WHERE vs_id IN (`+sqldb.Placeholders(len(ids))+`) GROUP BY vs_id, status`, ids...)
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
	if len(vs.Name) > MaxNameBytes || !sqldb.ValidText(vs.Name) || len(vs.Chat) > MaxNameBytes || !sqldb.ValidText(vs.Chat) {
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
	if _, err := s.db.Writer().ExecContext(ctx, `INSERT INTO vector_stores (id, owner, name, metadata, expires_days, expires_at, last_active_at, created_at, chat)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		vs.ID, vs.Owner, vs.Name, metadataJSON(vs.Metadata), days, micros(vs.ExpiresAt), micros(now), micros(now), vs.Chat); err != nil {
		return VectorStore{}, fmt.Errorf("%s: %w", op, err)
	}
	return vs, nil
}

func (s *sqlStore) GetVectorStore(ctx context.Context, owner, id string) (VectorStore, error) {
	return s.getStore(ctx, s.db.Reader(), owner, id)
}

func (s *sqlStore) getStore(ctx context.Context, db sqldb.Querier, owner, id string) (VectorStore, error) {
	if !validID(storePrefix, id) || !sqldb.ValidText(owner) {
		return VectorStore{}, fmt.Errorf("vector store %q: %w", id, ErrNotFound)
	}
	vs, err := scanStore(db.QueryRowContext(ctx, `SELECT `+storeColumns+` FROM vector_stores WHERE owner = ? AND id = ?`, owner, id))
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
	if !sqldb.ValidText(owner) {
		return []VectorStore{}, false, nil
	}
	out, more, err := listPage(ctx, s, "list vector stores", "vector_stores", storeColumns, "id", `owner = ?`, []any{owner}, p, scanStore)
	if err != nil {
		return nil, false, err
	}
	if err := s.fillCounts(ctx, s.db.Reader(), out); err != nil {
		return nil, false, fmt.Errorf("list vector stores: %w", err)
	}
	return out, more, nil
}

func (s *sqlStore) UpdateVectorStore(ctx context.Context, owner, id string, u VectorStoreUpdate) (VectorStore, error) {
	const op = "update vector store"
	if u.Name != nil && (len(*u.Name) > MaxNameBytes || !sqldb.ValidText(*u.Name)) {
		return VectorStore{}, fmt.Errorf("%s: %w: a name is up to %d bytes of UTF-8", op, ErrInvalid, MaxNameBytes)
	}
	if err := checkMetadata(u.Metadata); err != nil {
		return VectorStore{}, fmt.Errorf("%s: %w", op, err)
	}
	if err := checkExpiry(u.ExpiresAfter); err != nil {
		return VectorStore{}, fmt.Errorf("%s: %w", op, err)
	}
	var out VectorStore
	err := s.db.Write(ctx, func(tx sqldb.Tx) error {
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
		if _, err := tx.ExecContext(ctx, `UPDATE vector_stores SET name = ?, metadata = ?, expires_days = ?, expires_at = ? WHERE owner = ? AND id = ?`,
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
	if !validID(storePrefix, id) || !sqldb.ValidText(owner) {
		return fmt.Errorf("delete vector store %q: %w", id, ErrNotFound)
	}
	err := s.db.Write(ctx, func(tx sqldb.Tx) error {
		if err := deleteOne(ctx, tx, `DELETE FROM vector_stores WHERE owner = ? AND id = ?`, owner, id); err != nil {
			return err
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
func (s *sqlStore) deleteStoreRows(ctx context.Context, tx sqldb.Tx, ids []any) error {
	if len(ids) == 0 {
		return nil
	}
	for _, t := range []string{"chunks", "vector_store_files", "file_batches"} {
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+t+` WHERE vs_id IN (`+sqldb.Placeholders(len(ids))+`)`, ids...); err != nil {
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
	if chat == "" || len(chat) > MaxNameBytes || !sqldb.ValidText(chat) {
		return VectorStore{}, fmt.Errorf("%s: %w: a chat id is 1 to %d bytes of UTF-8", op, ErrInvalid, MaxNameBytes)
	}
	now := s.opts.clock()
	// The partial unique index on (owner, chat) makes a second insert of
	// the same chat's store a no-op, however many run at once.
	if _, err := s.db.Writer().ExecContext(ctx, `INSERT INTO vector_stores (id, owner, name, metadata, expires_days, expires_at, last_active_at, created_at, chat)
		VALUES (?, ?, ?, '{}', 0, 0, ?, ?, ?) ON CONFLICT (owner, chat) WHERE chat <> '' DO NOTHING`,
		newID(storePrefix), owner, "chat "+chat, micros(now), micros(now), chat); err != nil {
		return VectorStore{}, fmt.Errorf("%s: %w", op, err)
	}
	// Read on the writer: a reader could predate the insert.
	vs, err := scanStore(s.db.Writer().QueryRowContext(ctx, `SELECT `+storeColumns+` FROM vector_stores WHERE owner = ? AND chat = ?`, owner, chat))
	if err != nil {
		return VectorStore{}, fmt.Errorf("%s: %w", op, err)
	}
	out := []VectorStore{vs}
	if err := s.fillCounts(ctx, s.db.Writer(), out); err != nil {
		return VectorStore{}, fmt.Errorf("%s: %w", op, err)
	}
	return out[0], nil
}

func (s *sqlStore) Touch(ctx context.Context, owner string, ids ...string) error {
	if err := s.touch(ctx, s.db.Writer(), owner, ids); err != nil {
		return fmt.Errorf("touch vector stores: %w", err)
	}
	return nil
}

func (s *sqlStore) touch(ctx context.Context, db sqldb.Querier, owner string, ids []string) error {
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
	res, err := db.ExecContext(ctx, `UPDATE vector_stores SET last_active_at = ?,
		expires_at = CASE WHEN expires_days > 0 THEN CAST(? AS BIGINT) + expires_days * CAST(? AS BIGINT) ELSE 0 END
		WHERE owner = ? AND id IN (`+sqldb.Placeholders(len(uniq))+`)`, args...)
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
	err = s.db.Write(ctx, func(tx sqldb.Tx) error {
		vsIDs, err := sqldb.Strings(ctx, tx, `SELECT id FROM vector_stores WHERE expires_at > 0 AND expires_at <= ?`, at)
		if err != nil {
			return err
		}
		for start := 0; start < len(vsIDs); start += 500 {
			batch := sqldb.Args(vsIDs[start:min(start+500, len(vsIDs))])
			if err := s.deleteStoreRows(ctx, tx, batch); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM vector_stores WHERE id IN (`+sqldb.Placeholders(len(batch))+`)`, batch...); err != nil {
				return err
			}
		}
		fileIDs, err := sqldb.Strings(ctx, tx, `SELECT id FROM files WHERE complete = 1 AND expires_at > 0 AND expires_at <= ?`, at)
		if err != nil {
			return err
		}
		abandoned, err := sqldb.Strings(ctx, tx, `SELECT id FROM files WHERE complete = 0 AND created_at <= ?`, micros(now.Add(-abandonedAfter)))
		if err != nil {
			return err
		}
		all := append(slices.Clone(fileIDs), abandoned...)
		for start := 0; start < len(all); start += 500 {
			batch := sqldb.Args(all[start:min(start+500, len(all))])
			for _, q := range []string{
				`DELETE FROM chunks WHERE file_id IN (%s)`,
				`DELETE FROM vector_store_files WHERE file_id IN (%s)`,
				`DELETE FROM file_parts WHERE file_id IN (%s)`,
				`DELETE FROM files WHERE id IN (%s)`,
			} {
				if _, err := tx.ExecContext(ctx, fmt.Sprintf(q, sqldb.Placeholders(len(batch))), batch...); err != nil {
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
