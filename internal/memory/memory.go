// Package memory is Longhaul's long-term memory: short facts about a user,
// each with the embedding of its text, kept per user and found again by
// meaning. A run recalls the memories closest to the user's message and
// saves the facts a conversation taught it; the user lists and deletes them
// through the API.
//
// Backends sit behind one small interface, Store: SQLite (the default, on
// the database of LONGHAUL_DATABASE_URL; vectors as blobs, exact cosine
// search in Go) and PostgreSQL, with pgvector and an HNSW index when the
// server has the extension and the same exact search in Go when it has
// not; the store is written once over internal/sqldb. One conformance
// suite runs against each database. Another vector database (Qdrant) would
// be one more file implementing Store.
package memory

import (
	"cmp"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/longhaul-dev/longhaul/internal/pgvector"
	"github.com/longhaul-dev/longhaul/internal/sqldb"
)

// DuplicateThreshold is the cosine similarity at or above which Save takes
// a new memory for a restatement of one the user already has, and updates
// that one instead of adding another.
const DuplicateThreshold = 0.95

// MaxTextBytes bounds the text of one memory.
const MaxTextBytes = 2000

// MaxDimensions bounds the length of a memory's vector (pgvector's HNSW
// index takes up to 2000 dimensions).
const MaxDimensions = 2000

// ErrNotFound is returned (wrapped) when the user has no memory with the id.
var ErrNotFound = errors.New("memory not found")

// ErrInvalid is returned (wrapped) for a memory that cannot be stored: no
// user, no text, text too long or not UTF-8, a zero or oversized vector.
var ErrInvalid = errors.New("invalid memory")

// Memory is one fact remembered about a user.
type Memory struct {
	// ID is "mem_" and 24 hex digits, set by Save.
	ID string `json:"id"`
	// User is the user key the memory belongs to.
	User string `json:"-"`
	// Text is the fact, as one short sentence.
	Text string `json:"text"`
	// ChatID is the chat the memory was learned in (the run's chat id), or
	// empty; ForgetConversation removes a chat's memories.
	ChatID string `json:"chat_id,omitempty"`
	// Run is the run that saved it last.
	Run string `json:"run,omitempty"`
	// Vector is the embedding of Text, unit length once saved. Get
	// returns it; Search and List do not.
	Vector []float32 `json:"-"`
	// Score is the cosine similarity to the query, in Search results.
	Score     float64   `json:"score,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Saved is what Save did.
type Saved struct {
	Memory
	// Updated reports that a near-duplicate (cosine ≥ DuplicateThreshold)
	// was updated instead of a memory added; Memory is the updated one.
	Updated bool `json:"updated,omitempty"`
}

// Page asks List for one page of a user's memories, newest first.
type Page struct {
	// Limit is the page size; 1 to 100, 20 when zero.
	Limit int
	// Token continues after the page that returned it.
	Token string
}

// Store keeps memories. Every method is scoped to one user: a user never
// reads, finds, changes or deletes another's memory. Implementations are
// safe for concurrent use.
type Store interface {
	// Save stores m (User, Text, Vector; ChatID and Run optional) and
	// returns it with its ID and times. When the user already has a memory
	// whose vector has cosine similarity ≥ DuplicateThreshold with m's,
	// the closest such memory takes m's text, vector, chat and run instead
	// (Saved.Updated), so a fact restated is not stored twice.
	Save(ctx context.Context, m Memory) (Saved, error)
	// Search returns up to k of the user's memories whose cosine similarity
	// with vector is at least threshold, the most similar first. Memories
	// whose vectors have another length (made by another embedding model)
	// are not compared.
	Search(ctx context.Context, user string, vector []float32, k int, threshold float64) ([]Memory, error)
	// Get returns the user's memory with the id, or an error wrapping
	// ErrNotFound (also when it is another user's).
	Get(ctx context.Context, user, id string) (Memory, error)
	// List returns a page of the user's memories, most recently saved or
	// updated first, and the token of the next page ("" at the end).
	List(ctx context.Context, user string, page Page) ([]Memory, string, error)
	// Delete removes the user's memory with the id; ErrNotFound (wrapped)
	// when the user has none with it.
	Delete(ctx context.Context, user, id string) error
	// ForgetConversation removes the memories the user's chat taught (those
	// whose ChatID is chatID). A chat without any is no error.
	ForgetConversation(ctx context.Context, user, chatID string) error
	// Count returns how many memories the user has.
	Count(ctx context.Context, user string) (int, error)
	// Trim keeps the user's keep most recently saved or updated memories
	// (ties: the later created, then the greater id) and deletes the
	// rest, returning how many it deleted: the per-user cap
	// (LONGHAUL_MAX_MEMORIES). keep below 1 deletes nothing.
	Trim(ctx context.Context, user string, keep int) (int64, error)
	// Close releases the database connections.
	Close() error
}

// Importer is implemented by the stores: Import adds memories as they are,
// without the near-duplicate check, in batches (moving memories from
// another system, seeding a benchmark). Each memory is checked as Save
// checks it.
type Importer interface {
	Import(ctx context.Context, ms []Memory) error
}

// Backend names which search a store does, for the start-up line.
type Backend interface {
	// Backend is "sqlite (exact search)", "postgres (pgvector hnsw)" or
	// "postgres (exact search, no pgvector)".
	Backend() string
}

// Option changes how Open sets up a store.
type Option = sqldb.Option

// WithClock sets the clock Save reads a memory's times from, so a test can
// save memories as if at given times. nil keeps the system clock.
func WithClock(now func() time.Time) Option { return sqldb.WithClock(now) }

// WithMaxConns bounds the PostgreSQL connection pool (PGlite serves one
// connection at a time: give it 1). It does not apply to SQLite.
func WithMaxConns(n int32) Option { return sqldb.WithMaxConns(n) }

// Open connects to the database named by rawURL (the URL forms of
// LONGHAUL_DATABASE_URL: sqlite:///path.db or postgres://…) and creates the
// memories table if it is missing. On PostgreSQL it enables pgvector when
// the server has it, and otherwise searches exactly, in Go.
func Open(ctx context.Context, rawURL string, opts ...Option) (Store, error) {
	return openSQL(ctx, rawURL, sqldb.NewOptions(opts...))
}

// prepare checks m and makes its vector unit length.
func prepare(m Memory) (Memory, error) {
	m.Text = strings.TrimSpace(m.Text)
	switch {
	case m.User == "" || !sqldb.ValidText(m.User):
		return Memory{}, fmt.Errorf("save memory: %w: no user", ErrInvalid)
	case m.Text == "":
		return Memory{}, fmt.Errorf("save memory: %w: empty text", ErrInvalid)
	case len(m.Text) > MaxTextBytes:
		return Memory{}, fmt.Errorf("save memory: %w: text of %d bytes is over %d", ErrInvalid, len(m.Text), MaxTextBytes)
	case !sqldb.ValidText(m.Text) || !sqldb.ValidText(m.ChatID) || !sqldb.ValidText(m.Run):
		return Memory{}, fmt.Errorf("save memory: %w: text, chat and run must be UTF-8 without NUL", ErrInvalid)
	case len(m.Vector) == 0 || len(m.Vector) > MaxDimensions:
		return Memory{}, fmt.Errorf("save memory: %w: vector of %d dimensions, want 1 to %d", ErrInvalid, len(m.Vector), MaxDimensions)
	}
	v, ok := pgvector.Normalize(m.Vector)
	if !ok {
		return Memory{}, fmt.Errorf("save memory: %w: zero or non-finite vector", ErrInvalid)
	}
	m.Vector = v
	return m, nil
}

// checkQuery checks Search's arguments and returns the unit query vector.
func checkQuery(user string, vector []float32, k int) ([]float32, error) {
	if user == "" || !sqldb.ValidText(user) {
		return nil, fmt.Errorf("search memories: %w: no user", ErrInvalid)
	}
	if k <= 0 {
		return nil, fmt.Errorf("search memories: %w: k must be positive, got %d", ErrInvalid, k)
	}
	if len(vector) == 0 || len(vector) > MaxDimensions {
		return nil, fmt.Errorf("search memories: %w: vector of %d dimensions", ErrInvalid, len(vector))
	}
	v, ok := pgvector.Normalize(vector)
	if !ok {
		return nil, fmt.Errorf("search memories: %w: zero or non-finite vector", ErrInvalid)
	}
	return v, nil
}

// dot is the dot product of two vectors of equal length: their cosine
// similarity when both are unit length.
func dot(a, b []float32) float64 {
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return float64(s)
}

// Cosine is the cosine similarity of two vectors of equal length (0 when
// either is zero or their lengths differ).
func Cosine(a, b []float32) float64 {
	ua, ok1 := pgvector.Normalize(a)
	ub, ok2 := pgvector.Normalize(b)
	if !ok1 || !ok2 || len(a) != len(b) {
		return 0
	}
	return dot(ua, ub)
}

// encodeVector is v as a blob: little-endian float32s.
func encodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

// decodeVector reads a blob encodeVector made.
func decodeVector(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// newID returns a fresh memory id.
func newID() string {
	b := make([]byte, 12)
	rand.Read(b)
	return "mem_" + hex.EncodeToString(b)
}

// validID reports whether s has the form newID returns; anything else is
// not found without asking the database.
func validID(s string) bool {
	h, ok := strings.CutPrefix(s, "mem_")
	if !ok || len(h) != 24 {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil && strings.ToLower(h) == h
}

// timestamp is t as the backends keep it: UTC, to the microsecond.
func timestamp(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// listPage checks List's page: its size within 1 to 100, and where it
// starts (nil for the first page).
func listPage(p Page) (int, *cursor, error) {
	limit := p.Limit
	switch {
	case limit == 0:
		limit = 20
	case limit < 0 || limit > 100:
		return 0, nil, fmt.Errorf("list memories: %w: limit must be 1 to 100, got %d", ErrInvalid, p.Limit)
	}
	cur, err := parseToken(p.Token)
	if err != nil {
		return 0, nil, fmt.Errorf("list memories: %w", err)
	}
	return limit, cur, nil
}

// cursor is where a page of List ends: the last memory's update time and id.
type cursor struct {
	at int64 // Unix microseconds
	id string
}

func (c cursor) token() string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.at, 10) + ":" + c.id))
}

// ErrBadToken is returned (wrapped, with ErrInvalid) for a page token List
// did not give.
var ErrBadToken = fmt.Errorf("%w: bad page token", ErrInvalid)

func parseToken(s string) (*cursor, error) {
	if s == "" {
		return nil, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, ErrBadToken
	}
	at, id, ok := strings.Cut(string(b), ":")
	n, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil || !validID(id) {
		return nil, ErrBadToken
	}
	return &cursor{at: n, id: id}, nil
}

// hit is one match of an exact search: a memory's id and its score.
type hit struct {
	id    string
	score float64
}

// exactSearch scores each row's vector against the unit vector q and
// returns the k best at or above threshold, the most similar first (ties
// in row order). It decodes each vector into one buffer and keeps only the
// hits, so a search holds no more than one vector of the user's at a time.
func exactSearch(rows *sql.Rows, q []float32, k int, threshold float64) ([]hit, error) {
	var hits []hit
	var id string
	var b []byte
	v := make([]float32, len(q))
	for rows.Next() {
		if err := rows.Scan(&id, &b); err != nil {
			return nil, err
		}
		if len(b) != 4*len(q) {
			continue // another model's vector
		}
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		if s := dot(q, v); s >= threshold {
			hits = append(hits, hit{id, s})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.SortStableFunc(hits, func(a, b hit) int { return cmp.Compare(b.score, a.score) })
	if len(hits) > k {
		hits = hits[:k]
	}
	return hits, nil
}

// inHitOrder returns ms (read by id, in any order) in the order of hits,
// with their scores; a hit without its memory (deleted meanwhile) is left
// out.
func inHitOrder(hits []hit, ms []Memory) []Memory {
	byID := make(map[string]Memory, len(ms))
	for _, m := range ms {
		byID[m.ID] = m
	}
	out := make([]Memory, 0, len(hits))
	for _, h := range hits {
		if m, ok := byID[h.id]; ok {
			m.Score = h.score
			out = append(out, m)
		}
	}
	return out
}
