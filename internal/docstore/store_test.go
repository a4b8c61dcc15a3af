package docstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/longhaul-dev/longhaul/internal/testing/memorytest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	memorytest.StopPGlite()
	os.Exit(code)
}

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
// URL (see memorytest.PGliteFresh: PGlite is one session, so its tests
// run one at a time on the public schema).
func pgliteFresh(t testing.TB) string {
	t.Helper()
	srv, err := memorytest.PGlite()
	if err != nil {
		t.Fatalf("PGlite: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, srv.URL)
	if err != nil {
		t.Fatalf("PGlite: %v", err)
	}
	defer conn.Close(ctx)
	for _, tb := range docTables {
		if _, err := conn.Exec(ctx, "DROP TABLE IF EXISTS "+tb+" CASCADE"); err != nil {
			t.Fatalf("empty PGlite: %v", err)
		}
	}
	return srv.URL
}

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

func testFileRoundTrip(t *testing.T, e *env) {
	const n = 2*PartBytes + 12345
	h := sha256.New()
	io.Copy(h, &pattern{n: n})
	f, err := e.s.PutFile(ctx, File{Owner: "alice", Filename: "dir/../x/report.pdf", Purpose: "assistants", ContentType: "application/pdf"}, &pattern{n: n})
	if err != nil {
		t.Fatal(err)
	}
	if !validID(filePrefix, f.ID) || f.Bytes != n || f.SHA256 != hex.EncodeToString(h.Sum(nil)) || f.Filename != "report.pdf" || !f.CreatedAt.Equal(t0) {
		t.Fatalf("PutFile = %+v", f)
	}
	if got := rows(t, e, "file_parts"); got != 3 {
		t.Errorf("parts = %d, want 3 of at most %d bytes", got, PartBytes)
	}
	got, err := e.s.GetFile(ctx, "alice", f.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(f, got); diff != "" {
		t.Errorf("GetFile (-want +got):\n%s", diff)
	}
	rc, err := e.s.OpenFile(ctx, "alice", f.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	h2 := sha256.New()
	m, err := io.Copy(h2, rc)
	if err != nil || m != n || !bytes.Equal(h.Sum(nil), h2.Sum(nil)) {
		t.Fatalf("OpenFile read %d bytes, err %v, same content %v", m, err, bytes.Equal(h.Sum(nil), h2.Sum(nil)))
	}
}

func testEmptyFile(t *testing.T, e *env) {
	f := putFile(t, e, "alice", "empty.txt", nil)
	if f.Bytes != 0 || f.SHA256 != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Fatalf("empty file = %+v", f)
	}
	rc, err := e.s.OpenFile(ctx, "alice", f.ID)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(rc)
	if err != nil || len(b) != 0 {
		t.Fatalf("read %q, %v", b, err)
	}
}

func testTooLarge(t *testing.T, e *env) {
	// A second store on the same database, with a limit of 1.5 parts.
	limited := &sqlStore{db: e.s.db, opts: e.s.opts}
	limited.opts.maxBytes = PartBytes + PartBytes/2
	if _, err := limited.PutFile(ctx, File{Owner: "alice", Filename: "ok.bin"}, &pattern{n: limited.opts.maxBytes}); err != nil {
		t.Fatalf("a file at the limit: %v", err)
	}
	_, err := limited.PutFile(ctx, File{Owner: "alice", Filename: "big.bin"}, &pattern{n: limited.opts.maxBytes + 1})
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("over the limit: err = %v, want ErrTooLarge", err)
	}
	list, _, err := e.s.ListFiles(ctx, "alice", "", Page{})
	if err != nil || len(list) != 1 || list[0].Filename != "ok.bin" {
		t.Fatalf("ListFiles = %v, %v; want ok.bin alone", list, err)
	}
	if got := rows(t, e, "files"); got != 1 {
		t.Errorf("files rows = %d, want 1", got)
	}
	if got := rows(t, e, "file_parts"); got != 2 {
		t.Errorf("file_parts rows = %d, want ok.bin's 2", got)
	}
}

type failingReader struct{ n int }

func (r *failingReader) Read(b []byte) (int, error) {
	if r.n <= 0 {
		return 0, errors.New("connection reset")
	}
	k := min(len(b), r.n)
	r.n -= k
	return k, nil
}

func testFailedUpload(t *testing.T, e *env) {
	_, err := e.s.PutFile(ctx, File{Owner: "alice", Filename: "cut.bin"}, &failingReader{n: PartBytes + 10})
	if err == nil || errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want the read error", err)
	}
	if got := rows(t, e, "files") + rows(t, e, "file_parts"); got != 0 {
		t.Errorf("%d rows left of a failed upload", got)
	}
	for _, f := range []File{{Filename: "x"}, {Owner: "alice"}, {Owner: "alice", Filename: "a\x00b"}} {
		if _, err := e.s.PutFile(ctx, f, bytes.NewReader(nil)); !errors.Is(err, ErrInvalid) {
			t.Errorf("PutFile(%+v) = %v, want ErrInvalid", f, err)
		}
	}
}

func testFilePages(t *testing.T, e *env) {
	var ids []string
	for i := range 5 {
		f := putFile(t, e, "alice", fmt.Sprintf("f%d", i), nil)
		ids = append(ids, f.ID)
	}
	putFile(t, e, "bob", "other", nil)
	fileIDs := func(fs []File) []string {
		out := []string{}
		for _, f := range fs {
			out = append(out, f.ID)
		}
		return out
	}
	cases := []struct {
		p    Page
		want []string
		more bool
	}{
		{Page{Limit: 2}, []string{ids[4], ids[3]}, true},
		{Page{Limit: 2, After: ids[3]}, []string{ids[2], ids[1]}, true},
		{Page{Limit: 2, After: ids[1]}, []string{ids[0]}, false},
		{Page{Limit: 3, Ascending: true}, []string{ids[0], ids[1], ids[2]}, true},
		{Page{Limit: 3, Ascending: true, After: ids[2]}, []string{ids[3], ids[4]}, false},
		{Page{Limit: 2, Before: ids[1]}, []string{ids[3], ids[2]}, true},
		{Page{Limit: 5, Before: ids[3]}, []string{ids[4]}, false},
		{Page{Limit: 2, Ascending: true, Before: ids[3]}, []string{ids[1], ids[2]}, true},
		{Page{}, []string{ids[4], ids[3], ids[2], ids[1], ids[0]}, false},
	}
	for _, c := range cases {
		got, more, err := e.s.ListFiles(ctx, "alice", "", c.p)
		if err != nil {
			t.Fatalf("ListFiles(%+v): %v", c.p, err)
		}
		if diff := cmp.Diff(c.want, fileIDs(got)); diff != "" || more != c.more {
			t.Errorf("ListFiles(%+v): more %v (want %v) (-want +got):\n%s", c.p, more, c.more, diff)
		}
	}
	if got, _, _ := e.s.ListFiles(ctx, "alice", "fine-tune", Page{}); len(got) != 0 {
		t.Errorf("purpose filter: %v", fileIDs(got))
	}
	for _, p := range []Page{{Limit: 101}, {Limit: -1}, {After: "file-nope"}, {After: ids[0], Before: ids[1]}} {
		if _, _, err := e.s.ListFiles(ctx, "alice", "", p); !errors.Is(err, ErrInvalid) {
			t.Errorf("ListFiles(%+v) = %v, want ErrInvalid", p, err)
		}
	}
	// bob's id is no cursor of alice's.
	other, _, _ := e.s.ListFiles(ctx, "bob", "", Page{})
	if _, _, err := e.s.ListFiles(ctx, "alice", "", Page{After: other[0].ID}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a cursor of bob's: %v, want ErrInvalid", err)
	}
}

func testVectorStore(t *testing.T, e *env) {
	vs, err := e.s.CreateVectorStore(ctx, VectorStore{Owner: "alice", Name: "notes", Metadata: map[string]string{"k": "v"},
		ExpiresAfter: &ExpiresAfter{Anchor: "last_active_at", Days: 7}})
	if err != nil {
		t.Fatal(err)
	}
	if !validID(storePrefix, vs.ID) || !vs.ExpiresAt.Equal(t0.AddDate(0, 0, 7)) || !vs.LastActiveAt.Equal(t0) {
		t.Fatalf("created %+v", vs)
	}
	got, err := e.s.GetVectorStore(ctx, "alice", vs.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(vs, got); diff != "" {
		t.Errorf("Get (-want +got):\n%s", diff)
	}
	name := "renamed"
	e.clock.add(time.Hour)
	up, err := e.s.UpdateVectorStore(ctx, "alice", vs.ID, VectorStoreUpdate{Name: &name})
	if err != nil {
		t.Fatal(err)
	}
	if up.Name != "renamed" || up.Metadata["k"] != "v" || up.ExpiresAfter == nil || up.ExpiresAfter.Days != 7 {
		t.Errorf("after renaming: %+v", up)
	}
	up, err = e.s.UpdateVectorStore(ctx, "alice", vs.ID, VectorStoreUpdate{ClearExpiry: true, Metadata: map[string]string{}})
	if err != nil {
		t.Fatal(err)
	}
	if up.ExpiresAfter != nil || !up.ExpiresAt.IsZero() || len(up.Metadata) != 0 || up.Name != "renamed" {
		t.Errorf("after clearing: %+v", up)
	}
	// Counts and usage are computed from the attachments.
	a := doc(t, e, "alice", vs, "a.txt", nil, Chunk{Text: "hello", Vector: vec("a")}, Chunk{Text: "wörld"})
	b := putFile(t, e, "alice", "b.txt", []byte("b"))
	if _, err := e.s.AttachFile(ctx, VectorStoreFile{Owner: "alice", VectorStoreID: vs.ID, FileID: b.ID}); err != nil {
		t.Fatal(err)
	}
	got, err = e.s.GetVectorStore(ctx, "alice", vs.ID)
	if err != nil {
		t.Fatal(err)
	}
	wantUsage := int64(len("hello") + 4*dim + len("wörld"))
	if diff := cmp.Diff(FileCounts{InProgress: 1, Completed: 1, Total: 2}, got.FileCounts); diff != "" || got.UsageBytes != wantUsage {
		t.Errorf("usage %d (want %d), counts (-want +got):\n%s", got.UsageBytes, wantUsage, diff)
	}
	att, _ := e.s.GetVectorStoreFile(ctx, "alice", vs.ID, a.ID)
	if att.UsageBytes != wantUsage {
		t.Errorf("attachment usage = %d, want %d", att.UsageBytes, wantUsage)
	}
	for _, bad := range []VectorStore{
		{Name: "no owner"},
		{Owner: "alice", ExpiresAfter: &ExpiresAfter{Anchor: "created_at", Days: 1}},
		{Owner: "alice", ExpiresAfter: &ExpiresAfter{Anchor: "last_active_at", Days: 0}},
		{Owner: "alice", Metadata: map[string]string{"": "x"}},
	} {
		if _, err := e.s.CreateVectorStore(ctx, bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("CreateVectorStore(%+v) = %v, want ErrInvalid", bad, err)
		}
	}
	if err := e.s.DeleteVectorStore(ctx, "alice", vs.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.GetVectorStore(ctx, "alice", vs.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after delete = %v", err)
	}
	if n := rows(t, e, "chunks") + rows(t, e, "vector_store_files"); n != 0 {
		t.Errorf("%d chunk and attachment rows left", n)
	}
	if _, err := e.s.GetFile(ctx, "alice", a.ID); err != nil {
		t.Errorf("the file must stay: %v", err)
	}
}

func testStorePages(t *testing.T, e *env) {
	var ids []string
	for i := range 3 {
		ids = append(ids, newStore(t, e, "alice", fmt.Sprint(i)).ID)
	}
	got, more, err := e.s.ListVectorStores(ctx, "alice", Page{Limit: 2, After: ids[2]})
	if err != nil || more || len(got) != 2 || got[0].ID != ids[1] || got[1].ID != ids[0] {
		t.Errorf("ListVectorStores after the newest = %+v, %v, %v", got, more, err)
	}
	vs := newStore(t, e, "alice", "files")
	var fids []string
	for i := range 3 {
		f := putFile(t, e, "alice", fmt.Sprint(i), nil)
		fids = append(fids, f.ID)
		if _, err := e.s.AttachFile(ctx, VectorStoreFile{Owner: "alice", VectorStoreID: vs.ID, FileID: f.ID}); err != nil {
			t.Fatal(err)
		}
	}
	e.s.SetStatus(ctx, "alice", vs.ID, fids[1], StatusFailed, &FileError{Code: "invalid_file", Message: "bad pdf"})
	all, more, err := e.s.ListVectorStoreFiles(ctx, "alice", vs.ID, "", "", Page{Limit: 2, Ascending: true, After: fids[0]})
	if err != nil || more || len(all) != 2 || all[0].FileID != fids[1] || all[1].FileID != fids[2] {
		t.Errorf("ListVectorStoreFiles = %+v, %v, %v", all, more, err)
	}
	failed, _, err := e.s.ListVectorStoreFiles(ctx, "alice", vs.ID, StatusFailed, "", Page{})
	if err != nil || len(failed) != 1 || failed[0].FileID != fids[1] || failed[0].LastError == nil || failed[0].LastError.Message != "bad pdf" {
		t.Errorf("failed files = %+v, %v", failed, err)
	}
	if _, _, err := e.s.ListVectorStoreFiles(ctx, "alice", vs.ID, "done", "", Page{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("unknown status: %v", err)
	}
}

func testAttachAndBatch(t *testing.T, e *env) {
	vs := newStore(t, e, "alice", "s")
	b, err := e.s.CreateBatch(ctx, FileBatch{Owner: "alice", VectorStoreID: vs.ID})
	if err != nil || !validID(batchPrefix, b.ID) {
		t.Fatalf("CreateBatch = %+v, %v", b, err)
	}
	var fids []string
	for i := range 3 {
		f := putFile(t, e, "alice", fmt.Sprint(i), nil)
		fids = append(fids, f.ID)
		att, err := e.s.AttachFile(ctx, VectorStoreFile{Owner: "alice", VectorStoreID: vs.ID, FileID: f.ID, BatchID: b.ID, Run: "ingest-" + f.ID,
			Attributes: map[string]any{"n": i, "tag": "x"}})
		if err != nil {
			t.Fatal(err)
		}
		if att.Status != StatusInProgress || att.Chunking != (ChunkingStrategy{"static", 800, 400}) || att.Attributes["n"] != float64(i) {
			t.Errorf("attachment = %+v", att)
		}
	}
	// Attaching again returns the attachment unchanged.
	again, err := e.s.AttachFile(ctx, VectorStoreFile{Owner: "alice", VectorStoreID: vs.ID, FileID: fids[0], Run: "other", Attributes: map[string]any{"n": 9}})
	if err != nil || again.Run != "ingest-"+fids[0] || again.Attributes["n"] != float64(0) || again.BatchID != b.ID {
		t.Errorf("attach again = %+v, %v", again, err)
	}
	status := func(want string, counts FileCounts) {
		t.Helper()
		got, err := e.s.GetBatch(ctx, "alice", vs.ID, b.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != want || got.FileCounts != counts {
			t.Errorf("batch = %s %+v, want %s %+v", got.Status, got.FileCounts, want, counts)
		}
	}
	status(StatusInProgress, FileCounts{InProgress: 3, Total: 3})
	e.s.SetStatus(ctx, "alice", vs.ID, fids[0], StatusCompleted, nil)
	e.s.SetStatus(ctx, "alice", vs.ID, fids[1], StatusFailed, &FileError{Code: "unsupported_file", Message: "zip"})
	status(StatusInProgress, FileCounts{InProgress: 1, Completed: 1, Failed: 1, Total: 3})
	e.s.SetStatus(ctx, "alice", vs.ID, fids[2], StatusCompleted, nil)
	status(StatusCompleted, FileCounts{Completed: 2, Failed: 1, Total: 3})
	e.s.SetStatus(ctx, "alice", vs.ID, fids[2], StatusCancelled, nil)
	status(StatusCancelled, FileCounts{Completed: 1, Failed: 1, Cancelled: 1, Total: 3})
	e.s.SetStatus(ctx, "alice", vs.ID, fids[1], StatusInProgress, nil)
	status(StatusInProgress, FileCounts{InProgress: 1, Completed: 1, Cancelled: 1, Total: 3})
	if att, _ := e.s.GetVectorStoreFile(ctx, "alice", vs.ID, fids[1]); att.LastError != nil {
		t.Errorf("a retried file keeps its last error: %+v", att.LastError)
	}
	batchFiles, _, err := e.s.ListVectorStoreFiles(ctx, "alice", vs.ID, "", b.ID, Page{})
	if err != nil || len(batchFiles) != 3 {
		t.Errorf("the batch's files = %d, %v", len(batchFiles), err)
	}
	up, err := e.s.UpdateAttributes(ctx, "alice", vs.ID, fids[0], map[string]any{"lang": "en"})
	if err != nil || !cmp.Equal(up.Attributes, map[string]any{"lang": "en"}) {
		t.Errorf("UpdateAttributes = %+v, %v", up.Attributes, err)
	}
	if _, err := e.s.UpdateAttributes(ctx, "alice", vs.ID, fids[0], map[string]any{"x": []int{1}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a list attribute: %v, want ErrInvalid", err)
	}
	if err := e.s.DetachFile(ctx, "alice", vs.ID, fids[0]); err != nil {
		t.Fatal(err)
	}
	if err := e.s.DetachFile(ctx, "alice", vs.ID, fids[0]); !errors.Is(err, ErrNotFound) {
		t.Errorf("detach twice: %v", err)
	}
	if _, err := e.s.GetFile(ctx, "alice", fids[0]); err != nil {
		t.Errorf("detaching removed the file: %v", err)
	}
	other := newStore(t, e, "alice", "other")
	if _, err := e.s.AttachFile(ctx, VectorStoreFile{Owner: "alice", VectorStoreID: other.ID, FileID: fids[0], BatchID: b.ID}); !errors.Is(err, ErrNotFound) {
		t.Errorf("a batch of another store: %v, want ErrNotFound", err)
	}
}

func testPutChunksIdempotent(t *testing.T, e *env) {
	vs := newStore(t, e, "alice", "s")
	f := putFile(t, e, "alice", "f", nil)
	if _, err := e.s.AttachFile(ctx, VectorStoreFile{Owner: "alice", VectorStoreID: vs.ID, FileID: f.ID}); err != nil {
		t.Fatal(err)
	}
	chunks := []Chunk{
		{VectorStoreID: vs.ID, FileID: f.ID, Index: 0, Text: "alpha first", Tokens: 2, Vector: vec("0")},
		{VectorStoreID: vs.ID, FileID: f.ID, Index: 1, Text: "beta second", Tokens: 2, Vector: vec("1")},
	}
	for range 3 { // a retried activity writes the same chunks again
		if err := e.s.PutChunks(ctx, "alice", chunks); err != nil {
			t.Fatal(err)
		}
	}
	chunks[1].Text = "beta replaced"
	if err := e.s.PutChunks(ctx, "alice", chunks[1:]); err != nil {
		t.Fatal(err)
	}
	got, err := e.s.Chunks(ctx, "alice", vs.ID, f.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := []Chunk{
		{VectorStoreID: vs.ID, FileID: f.ID, Index: 0, Text: "alpha first", Tokens: 2},
		{VectorStoreID: vs.ID, FileID: f.ID, Index: 1, Text: "beta replaced", Tokens: 2},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Chunks (-want +got):\n%s", diff)
	}
	if n := rows(t, e, "chunks"); n != 2 {
		t.Errorf("chunk rows = %d, want 2", n)
	}
	e.s.SetStatus(ctx, "alice", vs.ID, f.ID, StatusCompleted, nil)
	// The full-text index follows the replacement: the old words are gone.
	if hits := search(t, e, Query{Owner: "alice", VectorStoreIDs: []string{vs.ID}, Text: "second", Mode: "text"}); len(hits) != 0 {
		t.Errorf("the replaced text is still found: %v", texts(hits))
	}
	if hits := search(t, e, Query{Owner: "alice", VectorStoreIDs: []string{vs.ID}, Text: "replaced", Mode: "text"}); len(hits) != 1 {
		t.Errorf("the new text: %v", texts(hits))
	}
	bad := [][]Chunk{
		{{VectorStoreID: vs.ID, FileID: f.ID, Index: 2, Text: "x", Vector: make([]float32, dim)}},
		{{VectorStoreID: vs.ID, FileID: f.ID, Index: 2, Text: "x", Vector: memorytest.Vector("x", dim+1)}},
		{{VectorStoreID: vs.ID, FileID: f.ID, Index: -1, Text: "x"}},
		{{VectorStoreID: vs.ID, FileID: f.ID, Index: 2, Text: "x"}, {VectorStoreID: vs.ID, FileID: "file-000000000000000000000000", Index: 3}},
		{{VectorStoreID: vs.ID, FileID: f.ID, Index: 2, Text: "nul\x00"}},
	}
	for _, cs := range bad {
		if err := e.s.PutChunks(ctx, "alice", cs); !errors.Is(err, ErrInvalid) {
			t.Errorf("PutChunks(%+v) = %v, want ErrInvalid", cs[0].Index, err)
		}
	}
}

func testDeleteChunks(t *testing.T, e *env) {
	vs := newStore(t, e, "alice", "s")
	f := doc(t, e, "alice", vs, "f", nil, Chunk{Text: "zero"}, Chunk{Text: "one"}, Chunk{Text: "two"}, Chunk{Text: "three"})
	if err := e.s.DeleteChunks(ctx, "alice", vs.ID, f.ID, 2); err != nil {
		t.Fatal(err)
	}
	got, _ := e.s.Chunks(ctx, "alice", vs.ID, f.ID)
	if diff := cmp.Diff([]string{"zero", "one"}, chunkTexts(got)); diff != "" {
		t.Errorf("after DeleteChunks(2) (-want +got):\n%s", diff)
	}
	if hits := search(t, e, Query{Owner: "alice", VectorStoreIDs: []string{vs.ID}, Text: "three two", Mode: "text"}); len(hits) != 0 {
		t.Errorf("deleted chunks found: %v", texts(hits))
	}
	if err := e.s.DeleteChunks(ctx, "alice", vs.ID, f.ID, 0); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.s.Chunks(ctx, "alice", vs.ID, f.ID); len(got) != 0 {
		t.Errorf("after DeleteChunks(0): %v", chunkTexts(got))
	}
	if err := e.s.DeleteChunks(ctx, "alice", vs.ID, f.ID, -1); !errors.Is(err, ErrInvalid) {
		t.Errorf("from -1: %v", err)
	}
}

func chunkTexts(cs []Chunk) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.Text)
	}
	return out
}

func testDeleteFile(t *testing.T, e *env) {
	vs1, vs2 := newStore(t, e, "alice", "1"), newStore(t, e, "alice", "2")
	f := doc(t, e, "alice", vs1, "f", nil, Chunk{Text: "kept nowhere", Vector: vec("k")})
	if _, err := e.s.AttachFile(ctx, VectorStoreFile{Owner: "alice", VectorStoreID: vs2.ID, FileID: f.ID}); err != nil {
		t.Fatal(err)
	}
	keep := doc(t, e, "alice", vs1, "g", nil, Chunk{Text: "kept here"})
	if err := e.s.DeleteFile(ctx, "alice", f.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.GetFile(ctx, "alice", f.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetFile after delete: %v", err)
	}
	if _, err := e.s.GetVectorStoreFile(ctx, "alice", vs2.ID, f.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("attachment after delete: %v", err)
	}
	hits := search(t, e, Query{Owner: "alice", VectorStoreIDs: []string{vs1.ID, vs2.ID}, Text: "kept", Mode: "text"})
	if diff := cmp.Diff([]string{"kept here"}, texts(hits)); diff != "" {
		t.Errorf("search after delete (-want +got):\n%s", diff)
	}
	if n := rows(t, e, "chunks"); n != 1 {
		t.Errorf("chunk rows = %d, want g's 1", n)
	}
	if n := rows(t, e, "file_parts"); n != 1 {
		t.Errorf("part rows = %d, want g's 1", n)
	}
	if err := e.s.DeleteFile(ctx, "alice", f.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("delete twice: %v", err)
	}
	_ = keep
}

func testVectorRanking(t *testing.T, e *env) {
	vs := newStore(t, e, "alice", "s")
	q := vec("query")
	for i, c := range []float64{0.9, 0.3, 0.7, 0.5, 0.8} {
		doc(t, e, "alice", vs, fmt.Sprintf("f%.1f", c), nil, Chunk{Text: fmt.Sprintf("fact %.1f", c), Vector: memorytest.Similar(q, c, fmt.Sprint(i))})
	}
	doc(t, e, "alice", vs, "novec", nil, Chunk{Text: "no vector at all"})
	// Another store of another model's vectors: skipped, not an error.
	other := newStore(t, e, "alice", "other model")
	doc(t, e, "alice", other, "small", nil, Chunk{Text: "small model", Vector: memorytest.Vector("query", dim/2)})
	hits := search(t, e, Query{Owner: "alice", VectorStoreIDs: []string{vs.ID, other.ID}, Vector: q, Mode: "vector", K: 3})
	if diff := cmp.Diff([]string{"fact 0.9", "fact 0.8", "fact 0.7"}, texts(hits)); diff != "" {
		t.Fatalf("top 3 (-want +got):\n%s", diff)
	}
	if math.Abs(hits[0].Score-(1+0.9)/2) > 1e-3 || hits[0].Filename != "f0.9" || hits[0].VectorStoreID != vs.ID || hits[0].Index != 0 {
		t.Errorf("first hit = %+v, want score 0.95", hits[0])
	}
	hits = search(t, e, Query{Owner: "alice", VectorStoreIDs: []string{vs.ID, other.ID}, Vector: q, Mode: "vector", ScoreThreshold: 0.84})
	if diff := cmp.Diff([]string{"fact 0.9", "fact 0.8", "fact 0.7"}, texts(hits)); diff != "" {
		t.Errorf("at or above 0.84 (-want +got):\n%s", diff)
	}
	// A chunk of another length of vectors in the same store is refused.
	f := putFile(t, e, "alice", "mixed", nil)
	e.s.AttachFile(ctx, VectorStoreFile{Owner: "alice", VectorStoreID: vs.ID, FileID: f.ID})
	if err := e.s.PutChunks(ctx, "alice", []Chunk{{VectorStoreID: vs.ID, FileID: f.ID, Text: "x", Vector: memorytest.Vector("x", dim/2)}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a vector of another length in the store: %v, want ErrInvalid", err)
	}
}

func testTextRanking(t *testing.T, e *env) {
	vs := newStore(t, e, "alice", "s")
	doc(t, e, "alice", vs, "a", nil, Chunk{Text: "The refund policy covers shoes returned within thirty days."})
	doc(t, e, "alice", vs, "b", nil, Chunk{Text: "Refunds, refunds, refunds: our refund desk handles every refund."})
	doc(t, e, "alice", vs, "c", nil, Chunk{Text: "Shipping is free on orders over fifty euros."})
	hits := search(t, e, Query{Owner: "alice", VectorStoreIDs: []string{vs.ID}, Text: "How do refunds work?", Mode: "text"})
	if diff := cmp.Diff([]string{"b", "a"}, filenames(hits)); diff != "" {
		t.Errorf("refunds (-want +got):\n%s", diff)
	}
	for _, h := range hits {
		if h.Score <= 0 || h.Score >= 1 {
			t.Errorf("text score %v out of (0, 1)", h.Score)
		}
	}
	if hits[0].Score <= hits[1].Score {
		t.Errorf("scores not descending: %v, %v", hits[0].Score, hits[1].Score)
	}
	// User text is never query syntax.
	for _, q := range []string{`"unbalanced`, `refund AND OR NOT`, `NEAR(refund shoes)`, `shoes*`, `col:umn ^ - + ( ) { }`, `'; DROP TABLE chunks; --`, `!!!`, ``, `&|!<->:*`} {
		if _, err := e.s.Search(ctx, Query{Owner: "alice", VectorStoreIDs: []string{vs.ID}, Text: q, Mode: "text"}); err != nil {
			t.Errorf("Search(%q): %v", q, err)
		}
	}
	if hits := search(t, e, Query{Owner: "alice", VectorStoreIDs: []string{vs.ID}, Text: `NEAR(shoes)`, Mode: "text"}); len(hits) != 1 || hits[0].Filename != "a" {
		t.Errorf("NEAR(shoes) = %v, want the shoes chunk by its word", filenames(hits))
	}
}

func testHybrid(t *testing.T, e *env) {
	vs := newStore(t, e, "alice", "s")
	q := vec("question")
	// keyword: the word, three times, and a vector far from the query's.
	doc(t, e, "alice", vs, "keyword", nil, Chunk{Text: "zebra zebra zebra protocol", Vector: memorytest.Similar(q, 0.1, "k")})
	// vector: none of the words, the nearest vector.
	doc(t, e, "alice", vs, "vector", nil, Chunk{Text: "unrelated wording entirely", Vector: memorytest.Similar(q, 0.95, "v")})
	// both: the word once, the second nearest vector.
	doc(t, e, "alice", vs, "both", nil, Chunk{Text: "a zebra appears here too", Vector: memorytest.Similar(q, 0.7, "b")})
	// text only: no vector at all.
	doc(t, e, "alice", vs, "novec", nil, Chunk{Text: "penguin notes"})
	hits := search(t, e, Query{Owner: "alice", VectorStoreIDs: []string{vs.ID}, Text: "zebra", Vector: q})
	// vector ranks: vector 1, both 2, keyword 3; text ranks: keyword 1, both 2.
	rrf := func(ranks ...int) float64 {
		var s float64
		for _, r := range ranks {
			s += 1 / float64(RRFK+r)
		}
		return s / (2.0 / float64(RRFK+1))
	}
	want := []struct {
		name  string
		score float64
	}{{"keyword", rrf(3, 1)}, {"both", rrf(2, 2)}, {"vector", rrf(1)}}
	if len(hits) != len(want) {
		t.Fatalf("hybrid = %v, want %d hits", filenames(hits), len(want))
	}
	for i, w := range want {
		if hits[i].Filename != w.name || math.Abs(hits[i].Score-w.score) > 1e-9 {
			t.Errorf("hit %d = %s %.6f, want %s %.6f", i, hits[i].Filename, hits[i].Score, w.name, w.score)
		}
	}
	// A keyword-only match (no vector) and a vector-only match are both
	// found by the fusion.
	hits = search(t, e, Query{Owner: "alice", VectorStoreIDs: []string{vs.ID}, Text: "penguin", Vector: q})
	names := filenames(hits)
	if !slices.Contains(names, "novec") || !slices.Contains(names, "vector") {
		t.Errorf("hybrid for penguin = %v, want the text-only and the nearest chunks", names)
	}
	if names[0] != "novec" && names[0] != "vector" {
		t.Errorf("first = %s", names[0])
	}
	// Hybrid without a vector is the text ranking, fused alone: its first
	// scores 1.
	hits = search(t, e, Query{Owner: "alice", VectorStoreIDs: []string{vs.ID}, Text: "zebra"})
	if len(hits) != 2 || hits[0].Filename != "keyword" || math.Abs(hits[0].Score-1) > 1e-9 {
		t.Errorf("hybrid without a vector = %v", hits)
	}
	// Vector mode never returns the chunk without a vector.
	hits = search(t, e, Query{Owner: "alice", VectorStoreIDs: []string{vs.ID}, Vector: q, Mode: "vector"})
	if slices.Contains(filenames(hits), "novec") || len(hits) != 3 {
		t.Errorf("vector mode = %v", filenames(hits))
	}
}

func testFilters(t *testing.T, e *env) {
	vs := newStore(t, e, "alice", "s")
	q := vec("common")
	doc(t, e, "alice", vs, "ann", map[string]any{"author": "ann", "year": 2020, "draft": true}, Chunk{Text: "common", Vector: memorytest.Similar(q, 0.9, "1")})
	doc(t, e, "alice", vs, "bob", map[string]any{"author": "bob", "year": 2023.5, "draft": false}, Chunk{Text: "common", Vector: memorytest.Similar(q, 0.8, "2")})
	doc(t, e, "alice", vs, "none", nil, Chunk{Text: "common", Vector: memorytest.Similar(q, 0.7, "3")})
	cmpf := func(typ, key string, v any) *Filter { return &Filter{Type: typ, Key: key, Value: v} }
	cases := []struct {
		name string
		f    *Filter
		want []string
	}{
		{"eq string", cmpf("eq", "author", "ann"), []string{"ann"}},
		{"eq int against a float", cmpf("eq", "year", 2020), []string{"ann"}},
		{"eq float", cmpf("eq", "year", 2023.5), []string{"bob"}},
		{"eq bool", cmpf("eq", "draft", true), []string{"ann"}},
		{"eq string against a number", cmpf("eq", "year", "2020"), nil},
		{"ne matches a missing key", cmpf("ne", "author", "ann"), []string{"bob", "none"}},
		{"gt", cmpf("gt", "year", 2021), []string{"bob"}},
		{"gte", cmpf("gte", "year", 2020), []string{"ann", "bob"}},
		{"lt", cmpf("lt", "year", 2023.5), []string{"ann"}},
		{"lte", cmpf("lte", "year", 2023.5), []string{"ann", "bob"}},
		{"gt strings", cmpf("gt", "author", "b"), []string{"bob"}},
		{"gt a missing key", cmpf("gt", "pages", 0), nil},
		{"in", cmpf("in", "author", []any{"ann", "carl"}), []string{"ann"}},
		{"in numbers", cmpf("in", "year", []any{2020.0, 1999}), []string{"ann"}},
		{"nin matches a missing key", cmpf("nin", "author", []any{"ann"}), []string{"bob", "none"}},
		{"and", &Filter{Type: "and", Filters: []Filter{*cmpf("gte", "year", 2020), *cmpf("eq", "draft", false)}}, []string{"bob"}},
		{"or", &Filter{Type: "or", Filters: []Filter{*cmpf("eq", "author", "ann"), *cmpf("eq", "author", "bob")}}, []string{"ann", "bob"}},
		{"nested", &Filter{Type: "or", Filters: []Filter{
			{Type: "and", Filters: []Filter{*cmpf("eq", "author", "bob"), *cmpf("lt", "year", 2000)}},
			*cmpf("eq", "draft", true)}}, []string{"ann"}},
	}
	// Each ranking applies the filter itself (pgvector's in its query).
	for _, mode := range []string{"text", "vector", "hybrid"} {
		for _, c := range cases {
			hits := search(t, e, Query{Owner: "alice", VectorStoreIDs: []string{vs.ID}, Text: "common", Vector: q, Mode: mode, Filter: c.f})
			got := filenames(hits)
			slices.Sort(got)
			if c.want == nil {
				c.want = []string{}
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("%s, %s mode (-want +got):\n%s", c.name, mode, diff)
			}
		}
	}
	for _, f := range []*Filter{
		{Type: "like", Key: "a", Value: "x"},
		{Type: "eq", Value: "x"},
		{Type: "in", Key: "a", Value: "x"},
		{Type: "eq", Key: "a", Value: []any{"x"}},
		{Type: "and"},
		{Type: "in", Key: "a", Value: []any{map[string]any{}}},
	} {
		if _, err := e.s.Search(ctx, Query{Owner: "alice", VectorStoreIDs: []string{vs.ID}, Text: "common", Filter: f}); !errors.Is(err, ErrInvalid) {
			t.Errorf("filter %+v: %v, want ErrInvalid", f, err)
		}
	}
}

func testSearchBounds(t *testing.T, e *env) {
	vs := newStore(t, e, "alice", "s")
	var chunks []Chunk
	for i := range 60 {
		chunks = append(chunks, Chunk{Text: fmt.Sprintf("word %d", i), Vector: vec(fmt.Sprint(i))})
	}
	doc(t, e, "alice", vs, "many", nil, chunks...)
	for k, want := range map[int]int{0: 10, 1: 1, 50: 50} {
		if hits := search(t, e, Query{Owner: "alice", VectorStoreIDs: []string{vs.ID}, Text: "word", Vector: vec("q"), K: k}); len(hits) != want {
			t.Errorf("K = %d: %d hits, want %d", k, len(hits), want)
		}
	}
	bad := []Query{
		{Owner: "alice", VectorStoreIDs: []string{vs.ID}, Text: "word", K: 51},
		{Owner: "alice", VectorStoreIDs: []string{vs.ID}, Text: "word", K: -1},
		{Owner: "alice", VectorStoreIDs: []string{vs.ID}, Text: "word", ScoreThreshold: 1.5},
		{Owner: "alice", VectorStoreIDs: []string{vs.ID}, Text: "word", Mode: "fuzzy"},
		{Owner: "alice", VectorStoreIDs: []string{vs.ID}, Text: "word", Mode: "vector"},
		{Owner: "alice", VectorStoreIDs: []string{vs.ID}, Vector: make([]float32, dim)},
		{Owner: "alice", Text: "word"},
		{VectorStoreIDs: []string{vs.ID}, Text: "word"},
	}
	for _, q := range bad {
		if _, err := e.s.Search(ctx, q); !errors.Is(err, ErrInvalid) {
			t.Errorf("Search(K %d, threshold %v, mode %q, stores %d) = %v, want ErrInvalid", q.K, q.ScoreThreshold, q.Mode, len(q.VectorStoreIDs), err)
		}
	}
	if _, err := e.s.Search(ctx, Query{Owner: "alice", VectorStoreIDs: []string{vs.ID, "vs_000000000000000000000000"}, Text: "word"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("an unknown store: %v, want ErrNotFound", err)
	}
}

func testOnlyCompleted(t *testing.T, e *env) {
	vs := newStore(t, e, "alice", "s")
	done := doc(t, e, "alice", vs, "done", nil, Chunk{Text: "findable words", Vector: vec("a")})
	for _, st := range []string{StatusInProgress, StatusFailed, StatusCancelled} {
		f := putFile(t, e, "alice", st, nil)
		e.s.AttachFile(ctx, VectorStoreFile{Owner: "alice", VectorStoreID: vs.ID, FileID: f.ID})
		if err := e.s.PutChunks(ctx, "alice", []Chunk{{VectorStoreID: vs.ID, FileID: f.ID, Text: "findable words", Vector: vec("a")}}); err != nil {
			t.Fatal(err)
		}
		e.s.SetStatus(ctx, "alice", vs.ID, f.ID, st, &FileError{Code: "server_error", Message: "x"})
	}
	hits := search(t, e, Query{Owner: "alice", VectorStoreIDs: []string{vs.ID}, Text: "findable", Vector: vec("a")})
	if diff := cmp.Diff([]string{"done"}, filenames(hits)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	_ = done
}

func testExpiry(t *testing.T, e *env) {
	vs, err := e.s.CreateVectorStore(ctx, VectorStore{Owner: "alice", Name: "tmp", ExpiresAfter: &ExpiresAfter{Anchor: "last_active_at", Days: 1}})
	if err != nil {
		t.Fatal(err)
	}
	keep := newStore(t, e, "alice", "forever")
	f := doc(t, e, "alice", vs, "f", nil, Chunk{Text: "soon gone"})
	tmpFile, err := e.s.PutFile(ctx, File{Owner: "alice", Filename: "tmp.txt", ExpiresAt: t0.Add(2 * time.Hour)}, bytes.NewReader([]byte("x")))
	if err != nil {
		t.Fatal(err)
	}
	e.clock.add(12 * time.Hour)
	search(t, e, Query{Owner: "alice", VectorStoreIDs: []string{vs.ID}, Text: "soon"})
	got, _ := e.s.GetVectorStore(ctx, "alice", vs.ID)
	if want := t0.Add(12*time.Hour + 24*time.Hour); !got.LastActiveAt.Equal(t0.Add(12*time.Hour)) || !got.ExpiresAt.Equal(want) {
		t.Fatalf("after a search: last active %v, expires %v; want %v", got.LastActiveAt, got.ExpiresAt, want)
	}
	stores, files, err := e.s.Expire(ctx, t0.Add(30*time.Hour))
	if err != nil || stores != 0 || files != 1 {
		t.Fatalf("Expire at +30h = %d stores, %d files, %v; want 0, 1", stores, files, err)
	}
	if _, err := e.s.GetFile(ctx, "alice", tmpFile.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("expired file: %v", err)
	}
	stores, files, err = e.s.Expire(ctx, t0.Add(36*time.Hour))
	if err != nil || stores != 1 || files != 0 {
		t.Fatalf("Expire at +36h = %d stores, %d files, %v; want 1, 0", stores, files, err)
	}
	if _, err := e.s.GetVectorStore(ctx, "alice", vs.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("expired store: %v", err)
	}
	if _, err := e.s.GetVectorStore(ctx, "alice", keep.ID); err != nil {
		t.Errorf("the store without a policy: %v", err)
	}
	if _, err := e.s.GetFile(ctx, "alice", f.ID); err != nil {
		t.Errorf("the expired store's file must stay: %v", err)
	}
	if n := rows(t, e, "chunks"); n != 0 {
		t.Errorf("%d chunks of the expired store left", n)
	}
}

func testAbandonedUpload(t *testing.T, e *env) {
	// What a process that died mid-upload leaves: the row, incomplete,
	// and a part.
	id := newID(filePrefix)
	if _, err := e.s.db.Writer().ExecContext(ctx, `INSERT INTO files (id, owner, filename, purpose, content_type, bytes, sha256, created_at, expires_at, complete)
		VALUES (?, 'alice', 'half.bin', '', '', 0, '', ?, 0, 0)`, id, micros(t0)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.db.Writer().ExecContext(ctx, `INSERT INTO file_parts (file_id, n, data) VALUES (?, 0, ?)`, id, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.GetFile(ctx, "alice", id); !errors.Is(err, ErrNotFound) {
		t.Errorf("an incomplete upload is visible: %v", err)
	}
	if list, _, _ := e.s.ListFiles(ctx, "alice", "", Page{}); len(list) != 0 {
		t.Errorf("an incomplete upload is listed: %+v", list)
	}
	if _, files, err := e.s.Expire(ctx, t0.Add(time.Hour)); err != nil || files != 0 || rows(t, e, "files") != 1 {
		t.Fatalf("Expire an hour later: %d files, %v; the upload may still be under way", files, err)
	}
	if _, files, err := e.s.Expire(ctx, t0.Add(abandonedAfter)); err != nil || files != 0 {
		t.Fatalf("Expire: %d, %v", files, err)
	}
	if n := rows(t, e, "files") + rows(t, e, "file_parts"); n != 0 {
		t.Errorf("%d rows of the abandoned upload left", n)
	}
}

func testChatVectorStore(t *testing.T, e *env) {
	const n = 8
	got := make([]VectorStore, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = e.s.ChatVectorStore(ctx, "alice", "chat-1")
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("ChatVectorStore: %v", errs[i])
		}
		if got[i].ID != got[0].ID || got[i].Chat != "chat-1" {
			t.Errorf("call %d = %s, want %s", i, got[i].ID, got[0].ID)
		}
	}
	bob, err := e.s.ChatVectorStore(ctx, "bob", "chat-1")
	if err != nil || bob.ID == got[0].ID {
		t.Errorf("bob's chat store = %s, %v: must be his own", bob.ID, err)
	}
	other, _ := e.s.ChatVectorStore(ctx, "alice", "chat-2")
	if other.ID == got[0].ID {
		t.Errorf("another chat got the same store")
	}
	if list, _, _ := e.s.ListVectorStores(ctx, "alice", Page{}); len(list) != 2 {
		t.Errorf("alice has %d stores, want 2", len(list))
	}
}

func testIsolation(t *testing.T, e *env) {
	vs := newStore(t, e, "alice", "secret")
	f := doc(t, e, "alice", vs, "secret.txt", map[string]any{"k": "v"}, Chunk{Text: "the launch code", Vector: vec("code")})
	b, _ := e.s.CreateBatch(ctx, FileBatch{Owner: "alice", VectorStoreID: vs.ID})
	bobVS := newStore(t, e, "bob", "mine")
	bobFile := putFile(t, e, "bob", "mine.txt", []byte("b"))
	nf := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("bob %s: %v, want ErrNotFound", what, err)
		}
	}
	_, err := e.s.GetFile(ctx, "bob", f.ID)
	nf("GetFile", err)
	_, err = e.s.OpenFile(ctx, "bob", f.ID)
	nf("OpenFile", err)
	nf("DeleteFile", e.s.DeleteFile(ctx, "bob", f.ID))
	_, err = e.s.GetVectorStore(ctx, "bob", vs.ID)
	nf("GetVectorStore", err)
	name := "mine now"
	_, err = e.s.UpdateVectorStore(ctx, "bob", vs.ID, VectorStoreUpdate{Name: &name})
	nf("UpdateVectorStore", err)
	nf("DeleteVectorStore", e.s.DeleteVectorStore(ctx, "bob", vs.ID))
	nf("Touch", e.s.Touch(ctx, "bob", vs.ID))
	_, err = e.s.AttachFile(ctx, VectorStoreFile{Owner: "bob", VectorStoreID: vs.ID, FileID: bobFile.ID})
	nf("AttachFile to alice's store", err)
	_, err = e.s.AttachFile(ctx, VectorStoreFile{Owner: "bob", VectorStoreID: bobVS.ID, FileID: f.ID})
	nf("AttachFile of alice's file", err)
	_, err = e.s.GetVectorStoreFile(ctx, "bob", vs.ID, f.ID)
	nf("GetVectorStoreFile", err)
	_, _, err = e.s.ListVectorStoreFiles(ctx, "bob", vs.ID, "", "", Page{})
	nf("ListVectorStoreFiles", err)
	_, err = e.s.UpdateAttributes(ctx, "bob", vs.ID, f.ID, map[string]any{"k": "w"})
	nf("UpdateAttributes", err)
	nf("SetStatus", e.s.SetStatus(ctx, "bob", vs.ID, f.ID, StatusFailed, nil))
	nf("DetachFile", e.s.DetachFile(ctx, "bob", vs.ID, f.ID))
	_, err = e.s.CreateBatch(ctx, FileBatch{Owner: "bob", VectorStoreID: vs.ID})
	nf("CreateBatch", err)
	_, err = e.s.GetBatch(ctx, "bob", vs.ID, b.ID)
	nf("GetBatch", err)
	nf("PutChunks", e.s.PutChunks(ctx, "bob", []Chunk{{VectorStoreID: vs.ID, FileID: f.ID, Index: 5, Text: "injected"}}))
	nf("DeleteChunks", e.s.DeleteChunks(ctx, "bob", vs.ID, f.ID, 0))
	_, err = e.s.Chunks(ctx, "bob", vs.ID, f.ID)
	nf("Chunks", err)
	_, err = e.s.Search(ctx, Query{Owner: "bob", VectorStoreIDs: []string{vs.ID}, Text: "launch code", Vector: vec("code")})
	nf("Search", err)
	_, err = e.s.Search(ctx, Query{Owner: "bob", VectorStoreIDs: []string{bobVS.ID, vs.ID}, Text: "launch code"})
	nf("Search with one of his stores", err)
	if list, _, _ := e.s.ListFiles(ctx, "bob", "", Page{}); len(list) != 1 || list[0].ID != bobFile.ID {
		t.Errorf("bob ListFiles = %+v", list)
	}
	if list, _, _ := e.s.ListVectorStores(ctx, "bob", Page{}); len(list) != 1 || list[0].ID != bobVS.ID {
		t.Errorf("bob ListVectorStores = %+v", list)
	}
	if _, err := e.s.ChatVectorStore(ctx, "bob", "x"); err != nil {
		t.Fatal(err)
	}
	if err := e.s.DeleteOwner(ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	// Alice's things are as they were.
	got, err := e.s.GetVectorStoreFile(ctx, "alice", vs.ID, f.ID)
	if err != nil || got.Status != StatusCompleted || got.Attributes["k"] != "v" {
		t.Errorf("alice's attachment = %+v, %v", got, err)
	}
	vsNow, _ := e.s.GetVectorStore(ctx, "alice", vs.ID)
	if vsNow.Name != "secret" {
		t.Errorf("alice's store = %+v", vsNow)
	}
	hits := search(t, e, Query{Owner: "alice", VectorStoreIDs: []string{vs.ID}, Text: "launch code", Vector: vec("code")})
	if diff := cmp.Diff([]string{"the launch code"}, texts(hits)); diff != "" {
		t.Errorf("alice's search (-want +got):\n%s", diff)
	}
}

func testDeleteOwner(t *testing.T, e *env) {
	vs := newStore(t, e, "alice", "s")
	doc(t, e, "alice", vs, "f", nil, Chunk{Text: "x", Vector: vec("x")})
	e.s.ChatVectorStore(ctx, "alice", "chat")
	e.s.CreateBatch(ctx, FileBatch{Owner: "alice", VectorStoreID: vs.ID})
	bob := newStore(t, e, "bob", "b")
	doc(t, e, "bob", bob, "g", nil, Chunk{Text: "y"})
	if err := e.s.DeleteOwner(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	for table, want := range map[string]int{"files": 1, "file_parts": 1, "vector_stores": 1, "vector_store_files": 1, "file_batches": 0, "chunks": 1} {
		if n := rows(t, e, table); n != want {
			t.Errorf("%s: %d rows, want bob's %d", table, n, want)
		}
	}
}

// testUsage: Usage counts the owner's stored files, their bytes and its
// attachments in progress, nobody else's.
func testUsage(t *testing.T, e *env) {
	usage := func(owner string) Usage {
		t.Helper()
		u, err := e.s.Usage(ctx, owner)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	if u := usage("alice"); u != (Usage{}) {
		t.Fatalf("empty usage %+v", u)
	}
	a := putFile(t, e, "alice", "a.txt", []byte("12345"))
	putFile(t, e, "alice", "b.txt", []byte("123"))
	putFile(t, e, "bob", "c.txt", []byte("1234567"))
	vs := newStore(t, e, "alice", "s")
	if _, err := e.s.AttachFile(ctx, VectorStoreFile{Owner: "alice", VectorStoreID: vs.ID, FileID: a.ID, Status: StatusInProgress}); err != nil {
		t.Fatal(err)
	}
	if u := usage("alice"); u != (Usage{Files: 2, Bytes: 8, Ingesting: 1}) {
		t.Errorf("alice's usage %+v", u)
	}
	if err := e.s.SetStatus(ctx, "alice", vs.ID, a.ID, StatusFailed, &FileError{Code: "invalid_file", Message: "x"}); err != nil {
		t.Fatal(err)
	}
	if u := usage("alice"); u.Ingesting != 0 {
		t.Errorf("alice's usage after the ingestion ended %+v", u)
	}
	if u := usage("bob"); u != (Usage{Files: 1, Bytes: 7}) {
		t.Errorf("bob's usage %+v", u)
	}
}
