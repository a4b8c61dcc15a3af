// Package store keeps big payloads — long tool outputs, fetched pages — and
// chats' turns outside Temporal history. Activities put a payload here and
// hand the workflow only its reference (a claim check), so history grows with
// the number of steps, not with the size of what they produced.
//
// Two databases sit behind one small interface: SQLite (a file under the
// data dir, the default) and PostgreSQL (for several workers on several
// hosts). The store is written once, over internal/sqldb; one conformance
// suite runs against each database.
package store

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/longhaul-dev/longhaul/internal/sqldb"
)

// DefaultMaxBlobSize is the largest payload Put accepts unless
// WithMaxBlobSize says otherwise: 32 MiB.
const DefaultMaxBlobSize int64 = 32 << 20

// ErrNotFound is returned by Get when no blob has the reference.
var ErrNotFound = errors.New("blob not found")

// ErrTooLarge is returned by Put when the payload is over the size limit.
// Retrying cannot help, so callers should treat it as non-retryable.
var ErrTooLarge = errors.New("blob too large")

// Blob is one stored payload and what it belongs to.
type Blob struct {
	Ref       string    // "sha256:<hex>", set by Put
	Run       string    // the workflow id that produced it
	Kind      string    // what it is, e.g. "tool_output", "page"
	Name      string    // which one within the run, e.g. the tool call id
	Size      int64     // len(Data), set by Put
	CreatedAt time.Time // when it was first stored, UTC, microsecond precision
	Data      []byte    // the payload; nil in List results
}

// Store keeps blobs and chats' turns (Conversations). Implementations are
// safe for concurrent use.
type Store interface {
	Conversations
	Backlog
	// Put stores b.Data with b's Run, Kind and Name and returns the blob's
	// reference. Ref, Size and CreatedAt of b are ignored. The reference is
	// derived from run, kind, name and data, so putting the same blob again
	// (a retried activity) returns the same reference and stores nothing new.
	Put(ctx context.Context, b Blob) (string, error)
	// Get returns the blob with the reference, or an error wrapping
	// ErrNotFound.
	Get(ctx context.Context, ref string) (Blob, error)
	// List returns the run's blobs without Data, oldest first.
	List(ctx context.Context, run string) ([]Blob, error)
	// DeleteRun removes every blob of the run. A run with none is no error.
	DeleteRun(ctx context.Context, run string) error
	// RunsBefore returns the runs that have a blob created before t or a
	// stored turn started before t, each once, in no particular order: the
	// candidates of the retention job.
	RunsBefore(ctx context.Context, t time.Time) ([]string, error)
	// DeleteBefore removes the run's blobs created before t and returns how
	// many it removed.
	DeleteBefore(ctx context.Context, run string, t time.Time) (int64, error)
	// Close releases the database connections.
	Close() error
}

// Option changes how Open sets up a store.
type Option func(*options)

type options struct {
	maxBlobSize int64
	now         func() time.Time
	// maxChats is the most stored chats a user keeps; 0 = no limit.
	maxChats int
	// maxBacklog is the cap of one user's active (and of closed) backlog
	// items; 0 = DefaultMaxBacklogItems.
	maxBacklog int
}

// WithMaxConversations sets the most chats one user keeps stored
// (LONGHAUL_MAX_CONVERSATIONS): when PutTurn stores a turn, the user's
// least recently updated chats beyond n lose their stored turns. Their
// runs' blobs stay until the retention job, which deletes them once
// Temporal no longer keeps the runs, so a run still open never loses its
// claim checks. n of zero or less keeps every chat.
func WithMaxConversations(n int) Option {
	return func(o *options) { o.maxChats = max(n, 0) }
}

// WithClock sets the clock Put reads the creation time of a blob from, so
// a test can store blobs as if they were stored earlier. nil keeps the
// system clock.
func WithClock(now func() time.Time) Option {
	return func(o *options) {
		if now != nil {
			o.now = now
		}
	}
}

// WithMaxBlobSize sets the largest payload, in bytes, that Put accepts.
// A value below zero or zero keeps DefaultMaxBlobSize.
func WithMaxBlobSize(n int64) Option {
	return func(o *options) {
		if n > 0 {
			o.maxBlobSize = n
		}
	}
}

// Open connects to the database named by rawURL and creates the store's
// schema if it is missing. It accepts
//
//	sqlite:///absolute/path.db   sqlite://relative/path.db
//	postgres://…                 postgresql://…
//
// For SQLite the file and its directory are created. A PostgreSQL URL is
// read as pgxpool reads it, so its settings (sslmode, pool_max_conns,
// search_path, …) apply.
func Open(ctx context.Context, rawURL string, opts ...Option) (Store, error) {
	o := options{maxBlobSize: DefaultMaxBlobSize, now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	return openSQL(ctx, rawURL, o)
}

// prepare checks b and fills in what Put sets: Ref, Size, CreatedAt and a
// non-nil Data.
func prepare(b Blob, o options) (Blob, error) {
	if b.Run == "" {
		return Blob{}, errors.New("put blob: no run")
	}
	if b.Kind == "" {
		return Blob{}, errors.New("put blob: no kind")
	}
	for _, f := range []struct{ field, value string }{{"run", b.Run}, {"kind", b.Kind}, {"name", b.Name}} {
		if !sqldb.ValidText(f.value) {
			return Blob{}, fmt.Errorf("put blob: %s %q is not UTF-8 text without NUL", f.field, f.value)
		}
	}
	b.Size = int64(len(b.Data))
	if b.Size > o.maxBlobSize {
		return Blob{}, fmt.Errorf("put blob %s/%s/%s: %d bytes is over the limit of %d: %w",
			b.Run, b.Kind, b.Name, b.Size, o.maxBlobSize, ErrTooLarge)
	}
	if b.Data == nil {
		b.Data = []byte{}
	}
	b.Ref = ref(b.Run, b.Kind, b.Name, b.Data)
	b.CreatedAt = timestamp(o.now())
	return b, nil
}

// ref returns the reference Put gives a blob: "sha256:" and the hex SHA-256
// of run, kind, name and data, each but data prefixed with its length so no
// two different tuples hash the same input. Because the run is part of it, a
// reference names one run's copy of the data and cannot be derived from the
// data alone.
func ref(run, kind, name string, data []byte) string {
	h := sha256.New()
	h.Write([]byte("longhaul blob v1\x00"))
	for _, s := range []string{run, kind, name} {
		h.Write(binary.AppendUvarint(nil, uint64(len(s))))
		h.Write([]byte(s))
	}
	h.Write(data)
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// validRef reports whether s has the form ref returns. Get answers
// ErrNotFound for anything else without asking the database.
func validRef(s string) bool {
	h, ok := strings.CutPrefix(s, "sha256:")
	if !ok || len(h) != 2*sha256.Size {
		return false
	}
	for _, c := range h {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// timestamp is t as the backends keep it: UTC, to the microsecond.
func timestamp(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }
