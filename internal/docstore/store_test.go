package docstore

import (
	"bytes"
	"context"
	"io"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/testing/memorytest"
)

func TestMain(m *testing.M) { memorytest.Main(m) }

const dim = 32

func vec(s string) []float32 { return memorytest.Vector(s, dim) }

// env is one store under test and its clock.
type env struct {
	s     *sqlStore
	clock *clock
	be    memorytest.Backend
}

// clock is a settable clock.
type clock struct{ t atomic.Int64 }

func (c *clock) now() time.Time      { return time.UnixMicro(c.t.Load()).UTC() }
func (c *clock) set(t time.Time)     { c.t.Store(t.UnixMicro()) }
func (c *clock) add(d time.Duration) { c.t.Add(d.Microseconds()) }

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// docTables are dropped to empty the shared PGlite.
var docTables = []string{"files", "file_parts", "vector_stores", "vector_store_files", "file_batches", "chunks"}

// pgliteFresh empties the shared PGlite's document tables and returns its
// URL.
func pgliteFresh(t testing.TB) string { return memorytest.PGliteWithout(t, docTables...) }

func backends() []memorytest.Backend {
	bs := slices.Clone(memorytest.Backends)
	for i := range bs {
		if bs[i].Serial {
			bs[i].Fresh = pgliteFresh
		}
	}
	return bs
}

func open(t *testing.T, be memorytest.Backend, opts ...Option) *env {
	t.Helper()
	c := &clock{}
	c.set(t0)
	opts = append([]Option{WithClock(c.now)}, opts...)
	if be.Serial {
		opts = append(opts, WithMaxConns(1))
	}
	st, err := Open(context.Background(), be.Fresh(t), opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	s := st.(*sqlStore)
	want := map[string]string{
		"sqlite":   "sqlite (exact search, fts5)",
		"postgres": "postgres (exact search: the server has no pgvector extension; tsvector)",
		"pgvector": "postgres (pgvector hnsw, tsvector)",
	}[be.Name]
	if got := s.Backend(); got != want {
		t.Fatalf("Backend() = %q, want %q", got, want)
	}
	return &env{s: s, clock: c, be: be}
}

func TestConformance(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, e *env)
	}{
		{"file round trip", testFileRoundTrip},
		{"empty file", testEmptyFile},
		{"over-limit file keeps nothing", testTooLarge},
		{"failed upload keeps nothing", testFailedUpload},
		{"file pages", testFilePages},
		{"vector store lifecycle and counts", testVectorStore},
		{"vector store pages", testStorePages},
		{"attachments and batches", testAttachAndBatch},
		{"put chunks is idempotent", testPutChunksIdempotent},
		{"delete chunks from an index", testDeleteChunks},
		{"delete file removes its chunks", testDeleteFile},
		{"vector ranking", testVectorRanking},
		{"text ranking and query syntax", testTextRanking},
		{"hybrid fusion", testHybrid},
		{"filters", testFilters},
		{"search bounds", testSearchBounds},
		{"only completed attachments", testOnlyCompleted},
		{"expiry", testExpiry},
		{"an abandoned upload is removed", testAbandonedUpload},
		{"concurrent chat vector store", testChatVectorStore},
		{"owners are isolated", testIsolation},
		{"delete owner", testDeleteOwner},
		{"usage", testUsage},
	}
	for _, be := range backends() {
		t.Run(be.Name, func(t *testing.T) {
			be.Ready(t)
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					if !be.Serial {
						t.Parallel()
					}
					c.run(t, open(t, be))
				})
			}
		})
	}
}

var ctx = context.Background()

func putFile(t *testing.T, e *env, owner, name string, content []byte) File {
	t.Helper()
	f, err := e.s.PutFile(ctx, File{Owner: owner, Filename: name, Purpose: "assistants", ContentType: "text/plain"}, bytes.NewReader(content))
	if err != nil {
		t.Fatalf("PutFile %s: %v", name, err)
	}
	return f
}

func newStore(t *testing.T, e *env, owner, name string) VectorStore {
	t.Helper()
	vs, err := e.s.CreateVectorStore(ctx, VectorStore{Owner: owner, Name: name})
	if err != nil {
		t.Fatalf("CreateVectorStore: %v", err)
	}
	return vs
}

// doc is a file attached to a store, with its chunks written and the
// attachment completed.
func doc(t *testing.T, e *env, owner string, vs VectorStore, name string, attrs map[string]any, chunks ...Chunk) File {
	t.Helper()
	f := putFile(t, e, owner, name, []byte(name))
	if _, err := e.s.AttachFile(ctx, VectorStoreFile{Owner: owner, VectorStoreID: vs.ID, FileID: f.ID, Attributes: attrs}); err != nil {
		t.Fatalf("AttachFile: %v", err)
	}
	for i := range chunks {
		chunks[i].VectorStoreID, chunks[i].FileID, chunks[i].Index = vs.ID, f.ID, i
	}
	if err := e.s.PutChunks(ctx, owner, chunks); err != nil {
		t.Fatalf("PutChunks: %v", err)
	}
	if err := e.s.SetStatus(ctx, owner, vs.ID, f.ID, StatusCompleted, nil); err != nil {
		t.Fatalf("SetStatus: %v", err)
	}
	return f
}

func search(t *testing.T, e *env, q Query) []Hit {
	t.Helper()
	hits, err := e.s.Search(ctx, q)
	if err != nil {
		t.Fatalf("Search(%+v): %v", q, err)
	}
	return hits
}

func texts(hits []Hit) []string {
	out := []string{}
	for _, h := range hits {
		out = append(out, h.Text)
	}
	return out
}

func filenames(hits []Hit) []string {
	out := []string{}
	for _, h := range hits {
		out = append(out, h.Filename)
	}
	return out
}

// rows counts a table's rows.
func rows(t *testing.T, e *env, table string) int {
	t.Helper()
	var n int
	if err := e.s.db.Reader().QueryRowContext(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// pattern is a reader of n bytes that never holds them all.
type pattern struct{ n, off int64 }

func (p *pattern) Read(b []byte) (int, error) {
	if p.off >= p.n {
		return 0, io.EOF
	}
	k := int(min(int64(len(b)), p.n-p.off))
	for i := range k {
		b[i] = byte((p.off + int64(i)) % 251)
	}
	p.off += int64(k)
	return k, nil
}
