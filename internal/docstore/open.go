package docstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/longhaul-dev/longhaul/internal/sqldb"
)

// DefaultMaxFileBytes is the file size limit when WithMaxFileBytes is not
// given (LONGHAUL_MAX_FILE_BYTES' default, 50 MiB).
const DefaultMaxFileBytes = 50 << 20

// PartBytes is the size of the parts a file's content is stored in.
const PartBytes = 1 << 20

// Bounds of what the stores keep (OpenAI's, where it has one).
const (
	// MaxDimensions bounds a chunk's vector (pgvector's HNSW index takes
	// up to 2000 dimensions).
	MaxDimensions = 2000
	// MaxChunkBytes bounds one chunk's text.
	MaxChunkBytes = 64 << 10
	// MaxNameBytes bounds a vector store's name and a file's name.
	MaxNameBytes = 512
	// MaxMetadata and MaxAttributes bound the pairs of a store's metadata
	// and of an attachment's attributes (OpenAI: 16 each); keys are up to
	// 64 characters, string values up to 512.
	MaxMetadata   = 16
	MaxAttributes = 16
	maxKeyChars   = 64
	maxValueChars = 512
	// MaxExpiryDays bounds ExpiresAfter.Days (OpenAI: 1 to 365).
	MaxExpiryDays = 365
	// MaxSearchStores bounds a query's VectorStoreIDs.
	MaxSearchStores = 64
)

// Option changes how Open sets up a store.
type Option func(*options)

type options struct {
	sqldb.Options
	maxBytes int64
}

// WithMaxFileBytes sets the largest file PutFile keeps; larger ones are
// refused with ErrTooLarge. n ≤ 0 keeps DefaultMaxFileBytes.
func WithMaxFileBytes(n int64) Option {
	return func(o *options) {
		if n > 0 {
			o.maxBytes = n
		}
	}
}

// WithClock sets the clock the store reads creation, activity and expiry
// times from. nil keeps the system clock.
func WithClock(now func() time.Time) Option {
	return func(o *options) { sqldb.WithClock(now)(&o.Options) }
}

// WithMaxConns bounds the PostgreSQL connection pool (PGlite serves one
// connection at a time: give it 1). It does not apply to SQLite.
func WithMaxConns(n int32) Option {
	return func(o *options) { o.MaxConns = n }
}

// Open connects to the database named by rawURL (the URL forms of
// LONGHAUL_DATABASE_URL: sqlite:///path.db or postgres://…) and creates the
// document tables if they are missing. On PostgreSQL it enables pgvector
// when the server has it, and otherwise searches exactly, in Go.
func Open(ctx context.Context, rawURL string, opts ...Option) (Store, error) {
	o := options{Options: sqldb.NewOptions(), maxBytes: DefaultMaxFileBytes}
	for _, opt := range opts {
		opt(&o)
	}
	return openSQL(ctx, rawURL, o)
}

// Prefixes of the ids the stores make: the prefix and 24 lowercase hex
// digits (12 bytes of crypto/rand).
const (
	filePrefix  = "file-"
	storePrefix = "vs_"
	batchPrefix = "vsfb_"
)

func newID(prefix string) string {
	b := make([]byte, 12)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// validID reports whether s has the form newID(prefix) returns; anything
// else is not found without asking the database.
func validID(prefix, s string) bool {
	h, ok := strings.CutPrefix(s, prefix)
	if !ok || len(h) != 24 {
		return false
	}
	for _, c := range h {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// micros is t as the tables keep it: Unix microseconds, 0 for the zero
// time.
func micros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UTC().UnixMicro()
}

// fromMicros reads a time micros wrote.
func fromMicros(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.UnixMicro(n).UTC()
}

// now is the store's clock, to the microsecond.
func (o options) clock() time.Time { return o.Now().UTC().Truncate(time.Microsecond) }

// checkPage checks a List page and returns its limit.
func checkPage(op string, p Page) (int, error) {
	switch {
	case p.After != "" && p.Before != "":
		return 0, fmt.Errorf("%s: %w: after and before together", op, ErrInvalid)
	case p.Limit == 0:
		return 20, nil
	case p.Limit < 0 || p.Limit > 100:
		return 0, fmt.Errorf("%s: %w: limit must be 1 to 100, got %d", op, ErrInvalid, p.Limit)
	}
	return p.Limit, nil
}

// checkMetadata checks a vector store's metadata against OpenAI's bounds.
func checkMetadata(m map[string]string) error {
	if len(m) > MaxMetadata {
		return fmt.Errorf("%w: metadata has %d pairs, at most %d", ErrInvalid, len(m), MaxMetadata)
	}
	for k, v := range m {
		if k == "" || utf8.RuneCountInString(k) > maxKeyChars || utf8.RuneCountInString(v) > maxValueChars || !sqldb.ValidText(k) || !sqldb.ValidText(v) {
			return fmt.Errorf("%w: metadata key %q: keys are 1 to %d characters, values up to %d", ErrInvalid, k, maxKeyChars, maxValueChars)
		}
	}
	return nil
}

// checkAttributes checks an attachment's attributes and returns them with
// every number as a float64 (as they read back from JSON).
func checkAttributes(a map[string]any) (map[string]any, error) {
	if len(a) > MaxAttributes {
		return nil, fmt.Errorf("%w: attributes has %d keys, at most %d", ErrInvalid, len(a), MaxAttributes)
	}
	out := make(map[string]any, len(a))
	for k, v := range a {
		if k == "" || utf8.RuneCountInString(k) > maxKeyChars || !sqldb.ValidText(k) {
			return nil, fmt.Errorf("%w: attribute key %q: keys are 1 to %d characters", ErrInvalid, k, maxKeyChars)
		}
		switch x := v.(type) {
		case string:
			if utf8.RuneCountInString(x) > maxValueChars || !sqldb.ValidText(x) {
				return nil, fmt.Errorf("%w: attribute %q: strings are up to %d characters", ErrInvalid, k, maxValueChars)
			}
			out[k] = x
		case bool:
			out[k] = x
		default:
			f, ok := number(v)
			if !ok || math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, fmt.Errorf("%w: attribute %q: a value is a string, a number or a boolean, got %T", ErrInvalid, k, v)
			}
			out[k] = f
		}
	}
	return out, nil
}

// checkExpiry checks an expiration policy.
func checkExpiry(e *ExpiresAfter) error {
	if e == nil {
		return nil
	}
	if e.Anchor != "last_active_at" {
		return fmt.Errorf("%w: expires_after.anchor must be last_active_at, got %q", ErrInvalid, e.Anchor)
	}
	if e.Days < 1 || e.Days > MaxExpiryDays {
		return fmt.Errorf("%w: expires_after.days must be 1 to %d, got %d", ErrInvalid, MaxExpiryDays, e.Days)
	}
	return nil
}

// expiresAt is when a store active at last expires under e (zero: never).
func expiresAt(last time.Time, e *ExpiresAfter) time.Time {
	if e == nil {
		return time.Time{}
	}
	return last.AddDate(0, 0, e.Days)
}
