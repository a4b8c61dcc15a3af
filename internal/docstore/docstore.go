// Package docstore keeps users' documents for retrieval: uploaded files
// (OpenAI's Files), vector stores, the files attached to them, and the
// chunks ingestion cut each file into, with the embedding of each chunk and
// its text for full-text search. It is what /v1/files, /v1/vector_stores,
// the documents skill's document_search tool and the Responses API's
// file_search read and write.
//
// Backends sit behind one interface, Store: SQLite (the default, on the
// database of LONGHAUL_DATABASE_URL; vectors as blobs, exact cosine search
// in Go, FTS5 for the text) and PostgreSQL (pgvector with an HNSW index
// when the server has the extension, exact search in Go when it has not;
// tsvector for the text). Search is hybrid: the vector ranking and the
// full-text ranking are fused (see Search). One conformance suite runs
// against each backend.
//
// Every method is scoped to an owner (the principal's key, as runs are):
// an owner never reads, finds, changes or deletes another's file, store or
// chunk; to anyone else they do not exist (ErrNotFound).
package docstore

import (
	"context"
	"errors"
	"io"
	"time"
)

// ErrNotFound is returned (wrapped) when the owner has no file, vector
// store, attachment or batch with the id (also when another owner has).
var ErrNotFound = errors.New("not found")

// ErrInvalid is returned (wrapped) for input a store refuses: no owner, an
// id of the wrong form, a name or attribute over its bounds, a vector of
// another length than the store's other chunks.
var ErrInvalid = errors.New("invalid")

// ErrTooLarge is returned (wrapped) by PutFile when the content is over
// the store's file size limit; nothing of the file is kept.
var ErrTooLarge = errors.New("file too large")

// Statuses of a file in a vector store (OpenAI's vector store file
// status) and of a file batch.
const (
	StatusInProgress = "in_progress"
	StatusCompleted  = "completed"
	StatusFailed     = "failed"
	StatusCancelled  = "cancelled"
)

// File is one uploaded file (OpenAI's File object).
type File struct {
	// ID is "file-" and 24 hex digits, set by PutFile.
	ID string
	// Owner is the principal's key.
	Owner string
	// Filename is the name it was uploaded with (no directory).
	Filename string
	// Purpose is OpenAI's purpose: "assistants", "user_data", ….
	Purpose string
	// ContentType is the upload's media type, as sent or sniffed.
	ContentType string
	// Bytes is the content's length, set by PutFile.
	Bytes int64
	// SHA256 is the hex digest of the content, set by PutFile.
	SHA256    string
	CreatedAt time.Time
	// ExpiresAt is when the file is deleted; zero = never.
	ExpiresAt time.Time
}

// ExpiresAfter is a vector store's expiration policy: Days after its
// Anchor ("last_active_at", the only anchor OpenAI has).
type ExpiresAfter struct {
	Anchor string
	Days   int
}

// FileCounts counts a vector store's (or a batch's) files by status.
type FileCounts struct {
	InProgress, Completed, Failed, Cancelled, Total int
}

// VectorStore is a searchable collection of files (OpenAI's Vector Store).
type VectorStore struct {
	// ID is "vs_" and 24 hex digits, set by CreateVectorStore.
	ID    string
	Owner string
	Name  string
	// Metadata is OpenAI's metadata: up to 16 string pairs.
	Metadata map[string]string
	// ExpiresAfter is nil when the store never expires.
	ExpiresAfter *ExpiresAfter
	// ExpiresAt is LastActiveAt plus ExpiresAfter's days; zero = never.
	ExpiresAt    time.Time
	LastActiveAt time.Time
	CreatedAt    time.Time
	// Chat is the chat a per-chat store (Open WebUI's attached files)
	// belongs to, or empty; deleting the chat deletes the store.
	Chat string
	// FileCounts and UsageBytes are computed on read.
	FileCounts FileCounts
	UsageBytes int64
}

// ChunkingStrategy is how a file is cut into chunks: "static" with a
// token size and overlap (OpenAI's defaults: 800 and 400).
type ChunkingStrategy struct {
	Type               string
	MaxChunkSizeTokens int
	ChunkOverlapTokens int
}

// FileError is why ingesting a file failed (OpenAI's last_error): Code is
// "server_error", "unsupported_file" or "invalid_file".
type FileError struct {
	Code    string
	Message string
}

// VectorStoreFile is a file attached to a vector store, and where its
// ingestion is.
type VectorStoreFile struct {
	VectorStoreID string
	FileID        string
	Owner         string
	// BatchID is the file batch it was attached in ("vsfb_…"), or empty.
	BatchID string
	Status  string
	// LastError is set when Status is failed.
	LastError *FileError
	// Attributes are OpenAI's attributes: up to 16 keys, each value a
	// string, a float64 or a bool; search filters read them.
	Attributes map[string]any
	Chunking   ChunkingStrategy
	// UsageBytes is the size of the file's chunks as stored.
	UsageBytes int64
	// Run is the id of the ingestion workflow.
	Run       string
	CreatedAt time.Time
}

// FileBatch is a set of files attached together (OpenAI's file batch); its
// status and counts are computed from its files.
type FileBatch struct {
	// ID is "vsfb_" and 24 hex digits.
	ID            string
	VectorStoreID string
	Owner         string
	Status        string
	FileCounts    FileCounts
	CreatedAt     time.Time
}

// Chunk is one piece of a file's text in one vector store.
type Chunk struct {
	VectorStoreID string
	FileID        string
	// Index is the chunk's place in the file, from 0. PutChunks with an
	// index already stored replaces that chunk (a retried write stores
	// nothing twice).
	Index int
	Text  string
	// Tokens is the chunk's length in the chunker's tokens.
	Tokens int
	// Vector is the embedding of Text.
	Vector []float32
}

// Filter is OpenAI's attribute filter: a comparison (Type eq, ne, gt, gte,
// lt, lte, in, nin; Key and Value) or a compound (Type and, or; Filters).
type Filter struct {
	Type    string
	Key     string
	Value   any
	Filters []Filter
}

// Query asks Search for the chunks of an owner's vector stores closest to
// a text.
type Query struct {
	Owner          string
	VectorStoreIDs []string
	// Text is the query as written, for the full-text ranking.
	Text string
	// Vector is the embedding of Text, for the vector ranking.
	Vector []float32
	// K is the most hits returned: 1 to 50, 10 when zero.
	K int
	// Filter, when set, keeps only the chunks of files whose attributes
	// match it.
	Filter *Filter
	// ScoreThreshold drops hits scoring below it (0 to 1).
	ScoreThreshold float64
	// Mode is "hybrid" (the default, when empty), "vector" or "text".
	Mode string
}

// Hit is one chunk Search found.
type Hit struct {
	VectorStoreID string
	FileID        string
	Filename      string
	Index         int
	Text          string
	// Score is in [0, 1], higher is closer.
	Score      float64
	Attributes map[string]any
}

// Page asks a List method for one page: newest first unless Ascending,
// after the id in After (OpenAI's cursor).
type Page struct {
	// Limit is the page size; 1 to 100, 20 when zero.
	Limit     int
	After     string
	Before    string
	Ascending bool
}

// Usage is what one owner holds: its stored files, their bytes, and its
// attachments whose ingestion is in progress.
type Usage struct {
	Files     int
	Bytes     int64
	Ingesting int
}

// Store keeps files, vector stores and chunks. Implementations are safe for
// concurrent use.
type Store interface {
	// PutFile stores f (Owner, Filename, Purpose, ContentType, ExpiresAt)
	// with the content read from r, streamed in parts (never held whole
	// in memory), and returns it with its ID, Bytes, SHA256 and CreatedAt.
	// Past the size limit it returns ErrTooLarge and keeps nothing.
	PutFile(ctx context.Context, f File, r io.Reader) (File, error)
	GetFile(ctx context.Context, owner, id string) (File, error)
	// OpenFile streams the file's content.
	OpenFile(ctx context.Context, owner, id string) (io.ReadCloser, error)
	// ListFiles returns a page of the owner's files (purpose "" = any),
	// and whether more follow.
	ListFiles(ctx context.Context, owner, purpose string, p Page) ([]File, bool, error)
	// DeleteFile removes the file, its content, its attachments and their
	// chunks.
	DeleteFile(ctx context.Context, owner, id string) error

	CreateVectorStore(ctx context.Context, vs VectorStore) (VectorStore, error)
	GetVectorStore(ctx context.Context, owner, id string) (VectorStore, error)
	ListVectorStores(ctx context.Context, owner string, p Page) ([]VectorStore, bool, error)
	// UpdateVectorStore replaces name, metadata and expiration policy
	// (nil fields of u are left as they are) and returns the store.
	UpdateVectorStore(ctx context.Context, owner, id string, u VectorStoreUpdate) (VectorStore, error)
	// DeleteVectorStore removes the store, its attachments and chunks
	// (not the files).
	DeleteVectorStore(ctx context.Context, owner, id string) error
	// ChatVectorStore returns the per-chat store of the owner's chat,
	// creating it on first use.
	ChatVectorStore(ctx context.Context, owner, chat string) (VectorStore, error)
	// Touch sets the stores' LastActiveAt (a search) and so their
	// ExpiresAt.
	Touch(ctx context.Context, owner string, ids ...string) error
	// Expire deletes the vector stores and files whose ExpiresAt has
	// passed at now, returning how many of each.
	Expire(ctx context.Context, now time.Time) (stores, files int, err error)

	// AttachFile attaches an owner's file to an owner's store (Status
	// in_progress, Run set by the caller). Attaching a file already
	// attached returns the existing attachment unchanged.
	AttachFile(ctx context.Context, f VectorStoreFile) (VectorStoreFile, error)
	GetVectorStoreFile(ctx context.Context, owner, vsID, fileID string) (VectorStoreFile, error)
	// ListVectorStoreFiles returns a page of a store's files, filtered by
	// status and batch when they are not empty.
	ListVectorStoreFiles(ctx context.Context, owner, vsID, status, batchID string, p Page) ([]VectorStoreFile, bool, error)
	// UpdateAttributes replaces an attachment's attributes.
	UpdateAttributes(ctx context.Context, owner, vsID, fileID string, attrs map[string]any) (VectorStoreFile, error)
	// SetStatus records where an attachment's ingestion is; with
	// StatusCompleted it also sets UsageBytes from its chunks.
	SetStatus(ctx context.Context, owner, vsID, fileID, status string, lastErr *FileError) error
	// DetachFile removes the attachment and its chunks (not the file).
	DetachFile(ctx context.Context, owner, vsID, fileID string) error

	// CreateBatch records a batch; its files are attached with BatchID.
	CreateBatch(ctx context.Context, b FileBatch) (FileBatch, error)
	// GetBatch returns the batch with its status and counts.
	GetBatch(ctx context.Context, owner, vsID, batchID string) (FileBatch, error)

	// PutChunks writes chunks of one attachment; a chunk whose index is
	// already stored is replaced, so a retried write stores nothing twice.
	PutChunks(ctx context.Context, owner string, chunks []Chunk) error
	// DeleteChunks removes an attachment's chunks at index from and
	// above (0: all), so an ingestion started over writes a clean slate.
	DeleteChunks(ctx context.Context, owner, vsID, fileID string, from int) error
	// Chunks returns an attachment's chunks, in index order, without
	// vectors (tests, the audit).
	Chunks(ctx context.Context, owner, vsID, fileID string) ([]Chunk, error)
	// Search ranks the chunks of the owner's stores in q.VectorStoreIDs
	// (completed attachments only) against the query. Hybrid mode fuses
	// the vector and the full-text rankings by reciprocal rank fusion
	// (score 1/(60+rank) summed, scaled to [0, 1]); vector mode's score is
	// the cosine similarity mapped to [0, 1]; text mode's is the
	// backend's text rank scaled to [0, 1].
	Search(ctx context.Context, q Query) ([]Hit, error)

	// DeleteOwner removes everything the owner has (DELETE /v1/me).
	DeleteOwner(ctx context.Context, owner string) error
	// Usage is what the owner holds now, for the per-principal quotas.
	Usage(ctx context.Context, owner string) (Usage, error)
	// Backend names the search the store does, for the start-up line:
	// "sqlite (exact search, fts5)", "postgres (pgvector hnsw, tsvector)".
	Backend() string
	Close() error
}

// VectorStoreUpdate is what UpdateVectorStore changes; a nil field is kept.
// ClearExpiry removes the expiration policy.
type VectorStoreUpdate struct {
	Name         *string
	Metadata     map[string]string
	ExpiresAfter *ExpiresAfter
	ClearExpiry  bool
}
