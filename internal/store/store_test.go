package store_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/longhaul-dev/longhaul/internal/redact"
	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/internal/testing/storetest"
	_ "modernc.org/sqlite" // the database/sql driver testOldSchema makes a file with
)

// conformanceCase is one case of a store's conformance suite, run on a
// fresh database of each kind.
type conformanceCase struct {
	name string
	run  func(t *testing.T, url string)
}

// conformance runs cases against SQLite and PostgreSQL alike, each on a
// database of its own.
func conformance(t *testing.T, cases []conformanceCase) {
	for _, be := range storetest.Backends {
		t.Run(be.Name, func(t *testing.T) {
			be.Ready(t)
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					c.run(t, be.Fresh(t))
				})
			}
		})
	}
}

// TestBlobs is the claim-check store's conformance suite.
func TestBlobs(t *testing.T) { conformance(t, blobCases) }

var blobCases = []conformanceCase{
	{"round trip", testRoundTrip},
	{"re-put is idempotent", testIdempotentPut},
	{"concurrent identical puts", testConcurrentIdenticalPuts},
	{"concurrent puts and gets", testConcurrentPutsAndGets},
	{"runs do not share refs", testRunsIsolated},
	{"not found", testNotFound},
	{"list order", testListOrder},
	{"delete run", testDeleteRun},
	{"size limit", testSizeLimit},
	{"invalid blobs", testInvalidBlobs},
	{"binary data intact", testBinary},
	{"concurrent opens", testConcurrentOpens},
	{"survives reopen", testReopen},
	{"delete before a time", testDeleteBefore},
	{"database made before the created_at index", testOldSchema},
}

func testRoundTrip(t *testing.T, u string) {
	s := open(t, u)
	before := time.Now().UTC().Truncate(time.Microsecond)
	ref := put(t, s, store.Blob{Run: "run-1", Kind: "tool_output", Name: "call_1", Data: []byte("hello, world")})
	after := time.Now().UTC()
	if !strings.HasPrefix(ref, "sha256:") || len(ref) != len("sha256:")+64 {
		t.Errorf("ref = %q, want sha256:<64 hex>", ref)
	}
	got := get(t, s, ref)
	if got.CreatedAt.Before(before) || got.CreatedAt.After(after) || got.CreatedAt.Location() != time.UTC {
		t.Errorf("CreatedAt = %v, want UTC within [%v, %v]", got.CreatedAt, before, after)
	}
	want := store.Blob{Ref: ref, Run: "run-1", Kind: "tool_output", Name: "call_1", Size: 12,
		CreatedAt: got.CreatedAt, Data: []byte("hello, world")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Get (-want +got):\n%s", diff)
	}
}

func testIdempotentPut(t *testing.T, u string) {
	// Every Put reads a later time, so a second row would show a later
	// CreatedAt.
	var mu sync.Mutex
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	s := open(t, u, store.WithClock(func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Second)
		return now
	}))
	b := store.Blob{Run: "run-1", Kind: "tool_output", Name: "call_1", Data: []byte("output")}
	ref1 := put(t, s, b)
	first := get(t, s, ref1)
	// What Put sets is ignored when given.
	b.Ref, b.Size, b.CreatedAt = "sha256:bogus", 99, time.Unix(0, 0)
	ref2 := put(t, s, b)
	if ref2 != ref1 {
		t.Errorf("re-put ref = %q, want %q", ref2, ref1)
	}
	list := mustList(t, s, "run-1")
	if len(list) != 1 {
		t.Fatalf("List after re-put has %d blobs, want 1: %+v", len(list), list)
	}
	if !list[0].CreatedAt.Equal(first.CreatedAt) {
		t.Errorf("CreatedAt after re-put = %v, want the first put's %v", list[0].CreatedAt, first.CreatedAt)
	}
}

// together calls f from n goroutines released at once and returns what
// each call returned, in the goroutines' order.
func together[T any](n int, f func() (T, error)) ([]T, []error) {
	vals := make([]T, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			vals[i], errs[i] = f()
		})
	}
	close(start)
	wg.Wait()
	return vals, errs
}

func testConcurrentIdenticalPuts(t *testing.T, u string) {
	s := open(t, u)
	const n = 8
	b := store.Blob{Run: "run-1", Kind: "page", Name: "https://example.com/", Data: bytes.Repeat([]byte("page "), 10_000)}
	refs, errs := together(n, func() (string, error) { return s.Put(t.Context(), b) })
	for i := range n {
		if errs[i] != nil {
			t.Errorf("Put %d: %v", i, errs[i])
		} else if refs[i] != refs[0] {
			t.Errorf("Put %d ref = %q, want %q like Put 0", i, refs[i], refs[0])
		}
	}
	if list := mustList(t, s, "run-1"); len(list) != 1 {
		t.Errorf("List has %d blobs after %d identical puts, want 1", len(list), n)
	}
}

func testConcurrentPutsAndGets(t *testing.T, u string) {
	s := open(t, u)
	const workers, each = 8, 10
	errs := make(chan error, workers*each)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				data := fmt.Appendf(nil, "worker %d blob %d", w, i)
				ref, err := s.Put(t.Context(), store.Blob{Run: "run-1", Kind: "tool_output", Name: fmt.Sprintf("w%d-%d", w, i), Data: data})
				if err != nil {
					errs <- err
					continue
				}
				got, err := s.Get(t.Context(), ref)
				if err != nil {
					errs <- err
				} else if !bytes.Equal(got.Data, data) {
					errs <- fmt.Errorf("Get %s = %q, want %q", ref, got.Data, data)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if list := mustList(t, s, "run-1"); len(list) != workers*each {
		t.Errorf("List has %d blobs, want %d", len(list), workers*each)
	}
}

func testRunsIsolated(t *testing.T, u string) {
	s := open(t, u)
	data := []byte("the same long tool output")
	refA := put(t, s, store.Blob{Run: "run-a", Kind: "tool_output", Name: "call_1", Data: data})
	refB := put(t, s, store.Blob{Run: "run-b", Kind: "tool_output", Name: "call_1", Data: data})
	if refA == refB {
		t.Fatalf("runs a and b got the same ref %q for the same data", refA)
	}
	if got := get(t, s, refA); got.Run != "run-a" {
		t.Errorf("Get(refA).Run = %q, want run-a", got.Run)
	}
	if got := get(t, s, refB); got.Run != "run-b" {
		t.Errorf("Get(refB).Run = %q, want run-b", got.Run)
	}
	// Kind and name are part of the ref too.
	others := []store.Blob{
		{Run: "run-a", Kind: "page", Name: "call_1", Data: data},
		{Run: "run-a", Kind: "tool_output", Name: "call_2", Data: data},
	}
	for _, b := range others {
		if ref := put(t, s, b); ref == refA {
			t.Errorf("Put(%s/%s) got run-a's call_1 ref %q", b.Kind, b.Name, ref)
		}
	}
	// Knowing the data does not give a ref: its bare content hash opens
	// nothing.
	sum := sha256.Sum256(data)
	if _, err := s.Get(t.Context(), "sha256:"+hex.EncodeToString(sum[:])); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get(content hash) error = %v, want ErrNotFound", err)
	}
}

func testNotFound(t *testing.T, u string) {
	s := open(t, u)
	ref := put(t, s, store.Blob{Run: "run-1", Kind: "tool_output", Name: "call_1", Data: []byte("x")})
	for _, ref := range []string{
		"",
		"nonsense",
		"sha256:" + strings.Repeat("0", 64),
		strings.ToUpper(ref),
		ref + "0",
		ref[:len(ref)-1],
		"sha256:" + strings.Repeat("\x00", 64),
		"md5:" + strings.Repeat("0", 32),
	} {
		_, err := s.Get(t.Context(), ref)
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Get(%q) error = %v, want ErrNotFound", ref, err)
		}
	}
}

func testListOrder(t *testing.T, u string) {
	s := open(t, u)
	var want []store.Blob
	for i := range 10 {
		b := store.Blob{Run: "run-1", Kind: "tool_output", Name: fmt.Sprintf("call_%d", i), Data: bytes.Repeat([]byte{'x'}, i)}
		b.Ref = put(t, s, b)
		b.Size = int64(i)
		b.Data = nil
		want = append(want, b)
		put(t, s, store.Blob{Run: "run-2", Kind: "tool_output", Name: b.Name, Data: []byte("other run")})
	}
	put(t, s, store.Blob{Run: "run-1", Kind: "tool_output", Name: "call_0", Data: []byte{}}) // a re-put keeps its place
	got := mustList(t, s, "run-1")
	for i := 1; i < len(got); i++ {
		if got[i].CreatedAt.Before(got[i-1].CreatedAt) {
			t.Errorf("List[%d].CreatedAt %v is before List[%d].CreatedAt %v", i, got[i].CreatedAt, i-1, got[i-1].CreatedAt)
		}
	}
	for i := range got {
		if got[i].CreatedAt.IsZero() {
			t.Errorf("List[%d].CreatedAt is zero", i)
		}
		got[i].CreatedAt = time.Time{}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	for _, run := range []string{"no-such-run", "", "bad\x00run"} {
		list, err := s.List(t.Context(), run)
		if err != nil || list == nil || len(list) != 0 {
			t.Errorf("List(%q) = %v, %v; want an empty, non-nil list", run, list, err)
		}
	}
}

func testDeleteRun(t *testing.T, u string) {
	s := open(t, u)
	var refsA []string
	for i := range 3 {
		refsA = append(refsA, put(t, s, store.Blob{Run: "run-a", Kind: "tool_output", Name: fmt.Sprint(i), Data: []byte("a")}))
	}
	refB := put(t, s, store.Blob{Run: "run-b", Kind: "tool_output", Name: "0", Data: []byte("a")})
	if err := s.DeleteRun(t.Context(), "run-a"); err != nil {
		t.Fatalf("DeleteRun(run-a): %v", err)
	}
	if list := mustList(t, s, "run-a"); len(list) != 0 {
		t.Errorf("List(run-a) after DeleteRun has %d blobs, want 0", len(list))
	}
	for _, ref := range refsA {
		if _, err := s.Get(t.Context(), ref); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Get(%s) after DeleteRun error = %v, want ErrNotFound", ref, err)
		}
	}
	if got := get(t, s, refB); string(got.Data) != "a" {
		t.Errorf("run-b's blob after deleting run-a = %q, want %q", got.Data, "a")
	}
	for _, run := range []string{"run-a", "no-such-run", "bad\x00run"} {
		if err := s.DeleteRun(t.Context(), run); err != nil {
			t.Errorf("DeleteRun(%q) = %v, want nil", run, err)
		}
	}
	// A deleted run can store again.
	if ref := put(t, s, store.Blob{Run: "run-a", Kind: "tool_output", Name: "0", Data: []byte("a")}); ref != refsA[0] {
		t.Errorf("Put after DeleteRun ref = %q, want %q", ref, refsA[0])
	}
}

func testSizeLimit(t *testing.T, u string) {
	if store.DefaultMaxBlobSize != 32<<20 {
		t.Errorf("DefaultMaxBlobSize = %d, want 32 MiB", store.DefaultMaxBlobSize)
	}
	s := open(t, u, store.WithMaxBlobSize(1024))
	put(t, s, store.Blob{Run: "run-1", Kind: "tool_output", Name: "at-limit", Data: make([]byte, 1024)})
	_, err := s.Put(t.Context(), store.Blob{Run: "run-1", Kind: "tool_output", Name: "over", Data: make([]byte, 1025)})
	if !errors.Is(err, store.ErrTooLarge) {
		t.Errorf("Put(1025 bytes, limit 1024) error = %v, want ErrTooLarge", err)
	}
	if list := mustList(t, s, "run-1"); len(list) != 1 || list[0].Name != "at-limit" {
		t.Errorf("List = %+v, want only at-limit", list)
	}

	def := open(t, u) // the same database, default limit
	_, err = def.Put(t.Context(), store.Blob{Run: "run-1", Kind: "page", Name: "huge", Data: make([]byte, store.DefaultMaxBlobSize+1)})
	if !errors.Is(err, store.ErrTooLarge) {
		t.Errorf("Put(32 MiB + 1, default limit) error = %v, want ErrTooLarge", err)
	}
}

func testInvalidBlobs(t *testing.T, u string) {
	s := open(t, u)
	for _, b := range []store.Blob{
		{Kind: "tool_output", Name: "call_1", Data: []byte("x")},
		{Run: "run-1", Name: "call_1", Data: []byte("x")},
		{Run: "run-1", Kind: "tool_output", Name: "nul\x00name", Data: []byte("x")},
		{Run: "run-\xff", Kind: "tool_output", Name: "call_1", Data: []byte("x")},
	} {
		if ref, err := s.Put(t.Context(), b); err == nil {
			t.Errorf("Put(%+q) = %q, want an error", []string{b.Run, b.Kind, b.Name}, ref)
		}
	}
	// An empty name is allowed.
	put(t, s, store.Blob{Run: "run-1", Kind: "tool_output", Data: []byte("x")})
	if list := mustList(t, s, "run-1"); len(list) != 1 {
		t.Errorf("List has %d blobs, want only the one with an empty name", len(list))
	}
}

func testBinary(t *testing.T, u string) {
	s := open(t, u)
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	random := make([]byte, 1<<20)
	rand.Read(random)
	for name, data := range map[string][]byte{
		"nil":         nil,
		"empty":       {},
		"nul":         {0},
		"all bytes":   all,
		"invalid utf": []byte("\xff\xfe\xc3\x28 \x00 end"),
		"1 MiB":       random,
	} {
		ref := put(t, s, store.Blob{Run: "run-1", Kind: "tool_output", Name: name, Data: data})
		got := get(t, s, ref)
		if !bytes.Equal(got.Data, data) || got.Data == nil || got.Size != int64(len(data)) {
			t.Errorf("%s: Get returned %d bytes (nil %t, Size %d), want the %d put", name, len(got.Data), got.Data == nil, got.Size, len(data))
		}
	}
}

// testConcurrentOpens opens a new database from several goroutines at once,
// as when a worker and an API process start together, a few times over.
func testConcurrentOpens(t *testing.T, u string) {
	for round := range 3 {
		if round > 0 {
			u = freshLike(t, u)
		}
		const n = 4
		stores, errs := together(n, func() (store.Store, error) { return store.Open(t.Context(), u) })
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("round %d: Open %d: %v", round, i, errs[i])
			}
			t.Cleanup(func() { stores[i].Close() })
		}
		ref := put(t, stores[0], store.Blob{Run: "run-1", Kind: "tool_output", Name: "call_1", Data: []byte("shared")})
		for i := 1; i < n; i++ {
			if got := get(t, stores[i], ref); string(got.Data) != "shared" {
				t.Errorf("round %d: store %d reads %q, want %q", round, i, got.Data, "shared")
			}
		}
	}
}

func testReopen(t *testing.T, u string) {
	s, err := store.Open(t.Context(), u)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	ref := put(t, s, store.Blob{Run: "run-1", Kind: "tool_output", Name: "call_1", Data: []byte("kept")})
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s = open(t, u)
	if got := get(t, s, ref); string(got.Data) != "kept" {
		t.Errorf("after reopen Get = %q, want %q", got.Data, "kept")
	}
}

// testDeleteBefore stores blobs as if two days and one hour ago (and one
// exactly at the cut-off), then removes those of a day ago and more, run by
// run: the older go, the newer and the other runs' stay.
func testDeleteBefore(t *testing.T, u string) {
	now := time.Now().UTC().Truncate(time.Microsecond)
	cutoff := now.Add(-24 * time.Hour)
	at := func(t time.Time) store.Option { return store.WithClock(func() time.Time { return t }) }
	twoDays, anHour, exactly := open(t, u, at(now.Add(-48*time.Hour))), open(t, u, at(now.Add(-time.Hour))), open(t, u, at(cutoff))
	oldA := put(t, twoDays, store.Blob{Run: "run-old", Kind: "tool_output", Name: "a", Data: []byte("a")})
	oldB := put(t, twoDays, store.Blob{Run: "run-old", Kind: "events", Name: "1-9", Data: []byte("b")})
	mixedOld := put(t, twoDays, store.Blob{Run: "run-mixed", Kind: "tool_output", Name: "a", Data: []byte("c")})
	mixedNew := put(t, anHour, store.Blob{Run: "run-mixed", Kind: "tool_output", Name: "b", Data: []byte("d")})
	newer := put(t, anHour, store.Blob{Run: "run-new", Kind: "tool_output", Name: "a", Data: []byte("e")})
	edge := put(t, exactly, store.Blob{Run: "run-edge", Kind: "tool_output", Name: "a", Data: []byte("f")})
	if got := get(t, twoDays, oldA).CreatedAt; !got.Equal(now.Add(-48 * time.Hour)) {
		t.Fatalf("CreatedAt = %v, want the clock's %v", got, now.Add(-48*time.Hour))
	}

	s := open(t, u)
	runs, err := s.RunsBefore(t.Context(), cutoff)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(runs)
	if diff := cmp.Diff([]string{"run-mixed", "run-old"}, runs); diff != "" {
		t.Errorf("RunsBefore (-want +got):\n%s", diff)
	}
	for _, c := range []struct {
		run  string
		want int64
	}{{"run-old", 2}, {"run-mixed", 1}, {"run-new", 0}, {"run-edge", 0}, {"run-old", 0}, {"no-such-run", 0}, {"bad\x00run", 0}} {
		n, err := s.DeleteBefore(t.Context(), c.run, cutoff)
		if err != nil || n != c.want {
			t.Errorf("DeleteBefore(%q) = %d, %v; want %d", c.run, n, err, c.want)
		}
	}
	for _, ref := range []string{oldA, oldB, mixedOld} {
		if _, err := s.Get(t.Context(), ref); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Get(%s) of an expired blob: %v, want ErrNotFound", ref, err)
		}
	}
	for _, ref := range []string{mixedNew, newer, edge} {
		get(t, s, ref)
	}
	if runs, err := s.RunsBefore(t.Context(), cutoff); err != nil || len(runs) != 0 {
		t.Errorf("RunsBefore after the deletes = %v, %v; want none", runs, err)
	}
}

// testOldSchema opens a database whose blobs table was made before the
// created_at index existed, with a blob in it: it opens, gains the index,
// and the retention queries work on the old blob.
func testOldSchema(t *testing.T, u string) {
	const table = `CREATE TABLE blobs (id %s PRIMARY KEY, ref TEXT NOT NULL UNIQUE, run TEXT NOT NULL,
		kind TEXT NOT NULL, name TEXT NOT NULL, size %s NOT NULL, created_at %s NOT NULL, data %s NOT NULL)`
	const index = `CREATE INDEX blobs_run_id ON blobs (run, id)`
	created := time.Now().Add(-72 * time.Hour).UTC().Truncate(time.Microsecond)
	ref := "sha256:" + strings.Repeat("ab", 32)
	var hasIndex func() bool
	if path, ok := strings.CutPrefix(u, "sqlite://"); ok {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		for _, q := range []string{fmt.Sprintf(table, "INTEGER", "INTEGER", "INTEGER", "BLOB"), index} {
			if _, err := db.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := db.Exec(`INSERT INTO blobs (ref, run, kind, name, size, created_at, data) VALUES (?, 'run-1', 'tool_output', 'a', 1, ?, x'61')`,
			ref, created.UnixMicro()); err != nil {
			t.Fatal(err)
		}
		hasIndex = func() bool {
			var n int
			err := db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'blobs_created_at'`).Scan(&n)
			return err == nil && n == 1
		}
	} else {
		conn, err := pgx.Connect(t.Context(), u)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		for _, q := range []string{fmt.Sprintf(table, "BIGINT GENERATED ALWAYS AS IDENTITY", "BIGINT", "TIMESTAMPTZ", "BYTEA"), index} {
			if _, err := conn.Exec(t.Context(), q); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := conn.Exec(t.Context(), `INSERT INTO blobs (ref, run, kind, name, size, created_at, data) VALUES ($1, 'run-1', 'tool_output', 'a', 1, $2, 'a')`,
			ref, created); err != nil {
			t.Fatal(err)
		}
		hasIndex = func() bool {
			var n int
			err := conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexname = 'blobs_created_at'`).Scan(&n)
			return err == nil && n == 1
		}
	}
	if hasIndex() {
		t.Fatal("the old schema already has the created_at index")
	}
	s := open(t, u)
	if !hasIndex() {
		t.Error("Open did not add the created_at index to an existing database")
	}
	if got := get(t, s, ref); string(got.Data) != "a" || !got.CreatedAt.Equal(created) {
		t.Errorf("the old blob reads as %+v", got)
	}
	runs, err := s.RunsBefore(t.Context(), created.Add(time.Microsecond))
	if err != nil || !slices.Equal(runs, []string{"run-1"}) {
		t.Errorf("RunsBefore = %v, %v; want [run-1]", runs, err)
	}
	if n, err := s.DeleteBefore(t.Context(), "run-1", created.Add(time.Microsecond)); err != nil || n != 1 {
		t.Errorf("DeleteBefore = %d, %v; want 1", n, err)
	}
}

// open opens the store at u and closes it when the test ends.
func open(t *testing.T, u string, opts ...store.Option) store.Store {
	t.Helper()
	s, err := store.Open(t.Context(), u, opts...)
	if err != nil {
		t.Fatalf("Open(%s): %v", redact.URLs(u), err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func put(t *testing.T, s store.Store, b store.Blob) string {
	t.Helper()
	ref, err := s.Put(t.Context(), b)
	if err != nil {
		t.Fatalf("Put(%s/%s/%s): %v", b.Run, b.Kind, b.Name, err)
	}
	return ref
}

func get(t *testing.T, s store.Store, ref string) store.Blob {
	t.Helper()
	b, err := s.Get(t.Context(), ref)
	if err != nil {
		t.Fatalf("Get(%s): %v", ref, err)
	}
	return b
}

func mustList(t *testing.T, s store.Store, run string) []store.Blob {
	t.Helper()
	list, err := s.List(t.Context(), run)
	if err != nil {
		t.Fatalf("List(%s): %v", run, err)
	}
	return list
}

// freshLike returns a new empty database of the same backend as u.
func freshLike(t *testing.T, u string) string {
	t.Helper()
	if strings.HasPrefix(u, "sqlite://") {
		return storetest.Backends[0].Fresh(t)
	}
	return storetest.Backends[1].Fresh(t)
}
