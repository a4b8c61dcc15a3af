package docstore

import (
	"context"
	"fmt"

	"github.com/longhaul-dev/longhaul/internal/sqlitedb"
)

// sqliteSchema creates the document tables. chunks_fts is an FTS5 index
// over chunks.text (external content: the text is stored once, in chunks),
// kept in step by triggers; its tokenizer folds case and diacritics and
// stems English (porter), as PostgreSQL's 'english' configuration does.
var sqliteSchema = []string{
	`CREATE TABLE IF NOT EXISTS files (
		seq          INTEGER PRIMARY KEY AUTOINCREMENT,
		id           TEXT    NOT NULL UNIQUE,
		owner        TEXT    NOT NULL,
		filename     TEXT    NOT NULL,
		purpose      TEXT    NOT NULL,
		content_type TEXT    NOT NULL,
		bytes        INTEGER NOT NULL,
		sha256       TEXT    NOT NULL,
		created_at   INTEGER NOT NULL, -- Unix microseconds, UTC
		expires_at   INTEGER NOT NULL, -- 0: never
		complete     INTEGER NOT NULL  -- 0 while the content is written
	)`,
	`CREATE INDEX IF NOT EXISTS files_owner ON files (owner, seq)`,
	`CREATE INDEX IF NOT EXISTS files_expires ON files (expires_at) WHERE expires_at > 0`,
	`CREATE TABLE IF NOT EXISTS file_parts (
		file_id TEXT    NOT NULL,
		n       INTEGER NOT NULL,
		data    BLOB    NOT NULL,
		PRIMARY KEY (file_id, n)
	)`,
	`CREATE TABLE IF NOT EXISTS vector_stores (
		seq            INTEGER PRIMARY KEY AUTOINCREMENT,
		id             TEXT    NOT NULL UNIQUE,
		owner          TEXT    NOT NULL,
		name           TEXT    NOT NULL,
		metadata       TEXT    NOT NULL, -- JSON object of strings
		expires_days   INTEGER NOT NULL, -- 0: never expires
		expires_at     INTEGER NOT NULL,
		last_active_at INTEGER NOT NULL,
		created_at     INTEGER NOT NULL,
		chat           TEXT    NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS vector_stores_owner ON vector_stores (owner, seq)`,
	`CREATE UNIQUE INDEX IF NOT EXISTS vector_stores_chat ON vector_stores (owner, chat) WHERE chat <> ''`,
	`CREATE INDEX IF NOT EXISTS vector_stores_expires ON vector_stores (expires_at) WHERE expires_at > 0`,
	`CREATE TABLE IF NOT EXISTS file_batches (
		seq        INTEGER PRIMARY KEY AUTOINCREMENT,
		id         TEXT    NOT NULL UNIQUE,
		vs_id      TEXT    NOT NULL,
		owner      TEXT    NOT NULL,
		created_at INTEGER NOT NULL
	)`,
	`CREATE TABLE IF NOT EXISTS vector_store_files (
		seq           INTEGER PRIMARY KEY AUTOINCREMENT,
		vs_id         TEXT    NOT NULL,
		file_id       TEXT    NOT NULL,
		owner         TEXT    NOT NULL,
		batch_id      TEXT    NOT NULL,
		status        TEXT    NOT NULL,
		error_code    TEXT    NOT NULL,
		error_message TEXT    NOT NULL,
		attributes    TEXT    NOT NULL, -- JSON object
		chunk_type    TEXT    NOT NULL,
		chunk_max     INTEGER NOT NULL,
		chunk_overlap INTEGER NOT NULL,
		usage_bytes   INTEGER NOT NULL,
		run           TEXT    NOT NULL,
		created_at    INTEGER NOT NULL,
		UNIQUE (vs_id, file_id)
	)`,
	`CREATE INDEX IF NOT EXISTS vector_store_files_owner ON vector_store_files (owner, vs_id, seq)`,
	`CREATE INDEX IF NOT EXISTS vector_store_files_file ON vector_store_files (file_id)`,
	`CREATE TABLE IF NOT EXISTS chunks (
		id      INTEGER PRIMARY KEY,
		vs_id   TEXT    NOT NULL,
		file_id TEXT    NOT NULL,
		owner   TEXT    NOT NULL,
		idx     INTEGER NOT NULL,
		text    TEXT    NOT NULL,
		tokens  INTEGER NOT NULL,
		dim     INTEGER NOT NULL, -- 0: no vector
		vec     BLOB,             -- the unit vector, little-endian float32s
		UNIQUE (vs_id, file_id, idx)
	)`,
	`CREATE INDEX IF NOT EXISTS chunks_owner_dim ON chunks (owner, dim, vs_id)`,
	`CREATE INDEX IF NOT EXISTS chunks_file ON chunks (file_id)`,
	`CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(text, content='chunks', content_rowid='id',
		tokenize='porter unicode61 remove_diacritics 2')`,
	`CREATE TRIGGER IF NOT EXISTS chunks_fts_insert AFTER INSERT ON chunks BEGIN
		INSERT INTO chunks_fts (rowid, text) VALUES (new.id, new.text);
	END`,
	`CREATE TRIGGER IF NOT EXISTS chunks_fts_delete AFTER DELETE ON chunks BEGIN
		INSERT INTO chunks_fts (chunks_fts, rowid, text) VALUES ('delete', old.id, old.text);
	END`,
	`CREATE TRIGGER IF NOT EXISTS chunks_fts_update AFTER UPDATE OF text ON chunks BEGIN
		INSERT INTO chunks_fts (chunks_fts, rowid, text) VALUES ('delete', old.id, old.text);
		INSERT INTO chunks_fts (rowid, text) VALUES (new.id, new.text);
	END`,
}

func openSQLite(ctx context.Context, path string, o options) (*sqlStore, error) {
	// The document tables live in the file of the other stores, opened the
	// same way (WAL, one writer, a few readers).
	w, r, err := sqlitedb.Open(ctx, path, sqliteSchema, 4)
	if err != nil {
		return nil, fmt.Errorf("open document store sqlite %s: %w", path, err)
	}
	return &sqlStore{w: w, r: r, opts: o, indexed: map[int]bool{}}, nil
}
