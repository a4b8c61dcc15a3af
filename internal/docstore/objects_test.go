package docstore

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul/internal/testing/memorytest"
)

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
