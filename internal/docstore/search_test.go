package docstore

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul/internal/testing/memorytest"
)

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
