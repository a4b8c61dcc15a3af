package memory_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul/internal/memory"
	"github.com/longhaul-dev/longhaul/internal/testing/memorytest"
)

func TestMain(m *testing.M) { memorytest.Main(m) }

const dim = 64

var vec = func(s string) []float32 { return memorytest.Vector(s, dim) }

func TestConformance(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, s memory.Store)
	}{
		{"round trip", testRoundTrip},
		{"near duplicate updates", testNearDuplicate},
		{"duplicates are per user", testDuplicatePerUser},
		{"search order, k and threshold", testSearch},
		{"search skips other dimensions", testOtherDimensions},
		{"users are isolated", testIsolation},
		{"delete", testDelete},
		{"forget a conversation", testForgetConversation},
		{"list pages newest first", testListPages},
		{"invalid memories", testInvalid},
		{"concurrent saves of one fact", testConcurrentDuplicates},
		{"import", testImport},
	}
	for _, be := range memorytest.Backends {
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

func open(t *testing.T, be memorytest.Backend) memory.Store {
	t.Helper()
	var opts []memory.Option
	if be.Serial {
		opts = append(opts, memory.WithMaxConns(1))
	}
	s, err := memory.Open(context.Background(), be.Fresh(t), opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	if be.Name == "pgvector" {
		if got := s.(memory.Backend).Backend(); got != "postgres (pgvector hnsw)" {
			t.Fatalf("Backend() = %q, want pgvector", got)
		}
	}
	return s
}

func save(t *testing.T, s memory.Store, m memory.Memory) memory.Saved {
	t.Helper()
	got, err := s.Save(context.Background(), m)
	if err != nil {
		t.Fatalf("Save(%q): %v", m.Text, err)
	}
	return got
}

func search(t *testing.T, s memory.Store, user string, v []float32, k int, threshold float64) []memory.Memory {
	t.Helper()
	got, err := s.Search(context.Background(), user, v, k, threshold)
	if err != nil {
		t.Fatalf("Search: %v", err)
	}
	return got
}

func texts(ms []memory.Memory) []string {
	out := []string{}
	for _, m := range ms {
		out = append(out, m.Text)
	}
	return out
}

func testRoundTrip(t *testing.T, s memory.Store) {
	ctx := context.Background()
	before := time.Now().UTC().Truncate(time.Microsecond)
	// A vector that is not unit length comes back normalised.
	raw := vec("likes tea")
	scaled := make([]float32, len(raw))
	for i, x := range raw {
		scaled[i] = 3 * x
	}
	sv := save(t, s, memory.Memory{User: "alice", Text: "  Alice likes green tea. ", ChatID: "c1", Run: "run-1", Vector: scaled})
	if sv.Updated || len(sv.ID) != len("mem_")+24 {
		t.Fatalf("Save = %+v, want a new memory with an id", sv)
	}
	got, err := s.Get(ctx, "alice", sv.ID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if got.CreatedAt.Before(before) || !got.CreatedAt.Equal(got.UpdatedAt) || got.CreatedAt.Location() != time.UTC {
		t.Errorf("times = %v, %v; want equal, UTC, not before %v", got.CreatedAt, got.UpdatedAt, before)
	}
	if c := memory.Cosine(got.Vector, raw); math.Abs(c-1) > 1e-5 {
		t.Errorf("stored vector has cosine %v with the saved one, want 1", c)
	}
	var n float64
	for _, x := range got.Vector {
		n += float64(x) * float64(x)
	}
	if math.Abs(n-1) > 1e-4 {
		t.Errorf("stored vector has squared norm %v, want 1", n)
	}
	want := memory.Memory{ID: sv.ID, User: "alice", Text: "Alice likes green tea.", ChatID: "c1", Run: "run-1",
		CreatedAt: got.CreatedAt, UpdatedAt: got.UpdatedAt}
	got.Vector = nil
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Get (-want +got):\n%s", diff)
	}
	list, next, err := s.List(ctx, "alice", memory.Page{})
	if err != nil || next != "" {
		t.Fatalf("List = next %q, %v", next, err)
	}
	if diff := cmp.Diff([]memory.Memory{want}, list); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	if n, err := s.Count(ctx, "alice"); err != nil || n != 1 {
		t.Errorf("Count = %d, %v; want 1", n, err)
	}
}

func testNearDuplicate(t *testing.T, s memory.Store) {
	ctx := context.Background()
	base := vec("lives in Berlin")
	first := save(t, s, memory.Memory{User: "alice", Text: "Alice lives in Berlin.", ChatID: "c1", Vector: base})
	// cosine 0.97: a restatement; it updates the memory.
	second := save(t, s, memory.Memory{User: "alice", Text: "Alice lives in Berlin, Germany.", ChatID: "c2", Vector: memorytest.Similar(base, 0.97, "a")})
	if !second.Updated || second.ID != first.ID {
		t.Fatalf("second Save = %+v, want an update of %s", second, first.ID)
	}
	if !second.CreatedAt.Equal(first.CreatedAt) {
		t.Errorf("update changed CreatedAt: %v, was %v", second.CreatedAt, first.CreatedAt)
	}
	got, err := s.Get(ctx, "alice", first.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Text != "Alice lives in Berlin, Germany." || got.ChatID != "c2" {
		t.Errorf("after update: text %q chat %q, want the new text and chat", got.Text, got.ChatID)
	}
	// cosine 0.9: a different fact; it is added.
	third := save(t, s, memory.Memory{User: "alice", Text: "Alice works in Berlin.", Vector: memorytest.Similar(base, 0.9, "b")})
	if third.Updated || third.ID == first.ID {
		t.Fatalf("third Save = %+v, want a new memory", third)
	}
	if n, _ := s.Count(ctx, "alice"); n != 2 {
		t.Errorf("Count = %d, want 2", n)
	}
}

func testDuplicatePerUser(t *testing.T, s memory.Store) {
	v := vec("has a dog")
	a := save(t, s, memory.Memory{User: "alice", Text: "Has a dog.", Vector: v})
	b := save(t, s, memory.Memory{User: "bob", Text: "Has a dog.", Vector: v})
	if b.Updated || b.ID == a.ID {
		t.Fatalf("bob's Save = %+v: it must not touch alice's %s", b, a.ID)
	}
}

func testSearch(t *testing.T, s memory.Store) {
	q := vec("query: pets")
	for i, c := range []float64{0.9, 0.3, 0.7, 0.5, 0.8} {
		save(t, s, memory.Memory{User: "alice", Text: fmt.Sprintf("fact %.1f", c), Vector: memorytest.Similar(q, c, fmt.Sprint(i))})
	}
	got := search(t, s, "alice", q, 3, 0)
	if diff := cmp.Diff([]string{"fact 0.9", "fact 0.8", "fact 0.7"}, texts(got)); diff != "" {
		t.Errorf("top 3 (-want +got):\n%s", diff)
	}
	if math.Abs(got[0].Score-0.9) > 1e-3 {
		t.Errorf("score = %v, want 0.9", got[0].Score)
	}
	got = search(t, s, "alice", q, 10, 0.6)
	if diff := cmp.Diff([]string{"fact 0.9", "fact 0.8", "fact 0.7"}, texts(got)); diff != "" {
		t.Errorf("above 0.6 (-want +got):\n%s", diff)
	}
	if got := search(t, s, "alice", q, 10, 0.95); len(got) != 0 {
		t.Errorf("above 0.95 = %v, want none", texts(got))
	}
	if got := search(t, s, "nobody", q, 10, 0); len(got) != 0 {
		t.Errorf("another user's search = %v, want none", texts(got))
	}
	if _, err := s.Search(context.Background(), "alice", q, 0, 0); !errors.Is(err, memory.ErrInvalid) {
		t.Errorf("k = 0: err = %v, want ErrInvalid", err)
	}
}

func testOtherDimensions(t *testing.T, s memory.Store) {
	save(t, s, memory.Memory{User: "alice", Text: "small model", Vector: memorytest.Vector("x", 8)})
	save(t, s, memory.Memory{User: "alice", Text: "big model", Vector: memorytest.Vector("x", 16)})
	got := search(t, s, "alice", memorytest.Vector("x", 16), 5, 0.5)
	if diff := cmp.Diff([]string{"big model"}, texts(got)); diff != "" {
		t.Errorf("search (-want +got):\n%s", diff)
	}
}

func testIsolation(t *testing.T, s memory.Store) {
	ctx := context.Background()
	v := vec("secret")
	a := save(t, s, memory.Memory{User: "alice", Text: "Alice's secret.", ChatID: "shared-chat", Vector: v})
	if _, err := s.Get(ctx, "bob", a.ID); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("bob Get = %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, "bob", a.ID); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("bob Delete = %v, want ErrNotFound", err)
	}
	if err := s.ForgetConversation(ctx, "bob", "shared-chat"); err != nil {
		t.Fatal(err)
	}
	if got := search(t, s, "bob", v, 5, 0); len(got) != 0 {
		t.Errorf("bob Search = %v", texts(got))
	}
	if list, _, _ := s.List(ctx, "bob", memory.Page{}); len(list) != 0 {
		t.Errorf("bob List = %v", texts(list))
	}
	if _, err := s.Get(ctx, "alice", a.ID); err != nil {
		t.Errorf("alice's memory after bob's attempts: %v", err)
	}
}

func testDelete(t *testing.T, s memory.Store) {
	ctx := context.Background()
	m := save(t, s, memory.Memory{User: "alice", Text: "to forget", Vector: vec("forget")})
	if err := s.Delete(ctx, "alice", m.ID); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if err := s.Delete(ctx, "alice", m.ID); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("second Delete = %v, want ErrNotFound", err)
	}
	if _, err := s.Get(ctx, "alice", m.ID); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("Get after Delete = %v, want ErrNotFound", err)
	}
	if got := search(t, s, "alice", vec("forget"), 5, 0); len(got) != 0 {
		t.Errorf("Search after Delete = %v", texts(got))
	}
	for _, id := range []string{"", "mem_", "nope", "mem_ZZZZZZZZZZZZZZZZZZZZZZZZ", "mem_' OR 1=1 --"} {
		if err := s.Delete(ctx, "alice", id); !errors.Is(err, memory.ErrNotFound) {
			t.Errorf("Delete(%q) = %v, want ErrNotFound", id, err)
		}
	}
}

func testForgetConversation(t *testing.T, s memory.Store) {
	ctx := context.Background()
	save(t, s, memory.Memory{User: "alice", Text: "from chat 1", ChatID: "alice/c1", Vector: vec("1")})
	save(t, s, memory.Memory{User: "alice", Text: "also from chat 1", ChatID: "alice/c1", Vector: vec("2")})
	save(t, s, memory.Memory{User: "alice", Text: "from chat 2", ChatID: "alice/c2", Vector: vec("3")})
	save(t, s, memory.Memory{User: "alice", Text: "said to a tool", Vector: vec("4")})
	save(t, s, memory.Memory{User: "bob", Text: "bob's, same chat id", ChatID: "alice/c1", Vector: vec("5")})
	if err := s.ForgetConversation(ctx, "alice", "alice/c1"); err != nil {
		t.Fatal(err)
	}
	if err := s.ForgetConversation(ctx, "alice", ""); err != nil {
		t.Fatal(err)
	}
	list, _, err := s.List(ctx, "alice", memory.Page{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"from chat 2", "said to a tool"}, sorted(texts(list))); diff != "" {
		t.Errorf("alice's memories left (-want +got):\n%s", diff)
	}
	if n, _ := s.Count(ctx, "bob"); n != 1 {
		t.Errorf("bob has %d memories, want 1", n)
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func testListPages(t *testing.T, s memory.Store) {
	ctx := context.Background()
	var want []string
	for i := range 7 {
		m := save(t, s, memory.Memory{User: "alice", Text: fmt.Sprintf("fact %d", i), Vector: vec(fmt.Sprint("page", i))})
		want = append([]string{m.ID}, want...)
	}
	var got []string
	token := ""
	pages := 0
	for {
		list, next, err := s.List(ctx, "alice", memory.Page{Limit: 3, Token: token})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, m := range list {
			got = append(got, m.ID)
		}
		if next == "" {
			break
		}
		token = next
	}
	if pages != 3 {
		t.Errorf("pages = %d, want 3", pages)
	}
	// Newest first: the order of saving, reversed. Saves in the same
	// microsecond order by id, so compare as sets there.
	if diff := cmp.Diff(sorted(want), sorted(got)); diff != "" {
		t.Errorf("listed ids (-want +got):\n%s", diff)
	}
	for i := 1; i < len(got); i++ {
		a, _ := s.Get(ctx, "alice", got[i-1])
		b, _ := s.Get(ctx, "alice", got[i])
		if a.UpdatedAt.Before(b.UpdatedAt) {
			t.Errorf("list not newest first at %d: %v before %v", i, a.UpdatedAt, b.UpdatedAt)
		}
	}
	if _, _, err := s.List(ctx, "alice", memory.Page{Token: "garbage!"}); !errors.Is(err, memory.ErrInvalid) {
		t.Errorf("bad token: %v, want ErrInvalid", err)
	}
	if _, _, err := s.List(ctx, "alice", memory.Page{Limit: 101}); !errors.Is(err, memory.ErrInvalid) {
		t.Errorf("limit 101: %v, want ErrInvalid", err)
	}
}

func testInvalid(t *testing.T, s memory.Store) {
	long := make([]byte, memory.MaxTextBytes+1)
	for i := range long {
		long[i] = 'a'
	}
	for _, m := range []memory.Memory{
		{User: "", Text: "x", Vector: vec("x")},
		{User: "alice", Text: "   ", Vector: vec("x")},
		{User: "alice", Text: string(long), Vector: vec("x")},
		{User: "alice", Text: "bad \x00 text", Vector: vec("x")},
		{User: "alice", Text: "no vector"},
		{User: "alice", Text: "zero vector", Vector: make([]float32, 8)},
		{User: "alice", Text: "NaN", Vector: []float32{float32(math.NaN()), 1}},
	} {
		if _, err := s.Save(context.Background(), m); !errors.Is(err, memory.ErrInvalid) {
			t.Errorf("Save(%.20q) = %v, want ErrInvalid", m.Text, err)
		}
	}
}

func testConcurrentDuplicates(t *testing.T, s memory.Store) {
	v := vec("one fact")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Save(context.Background(), memory.Memory{User: "alice", Text: fmt.Sprint("one fact, said ", i), Vector: memorytest.Similar(v, 0.99, fmt.Sprint(i))})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := s.Count(context.Background(), "alice"); n != 1 {
		t.Errorf("Count = %d after 8 concurrent saves of one fact, want 1", n)
	}
}

func testImport(t *testing.T, s memory.Store) {
	var ms []memory.Memory
	for i := range 5 {
		ms = append(ms, memory.Memory{User: "alice", Text: fmt.Sprint("imported ", i), ChatID: "c", Vector: vec(fmt.Sprint("imp", i))})
	}
	if err := s.(memory.Importer).Import(context.Background(), ms); err != nil {
		t.Fatalf("Import: %v", err)
	}
	got := search(t, s, "alice", vec("imp3"), 2, 0.5)
	if diff := cmp.Diff([]string{"imported 3"}, texts(got)); diff != "" {
		t.Errorf("search after import (-want +got):\n%s", diff)
	}
	// Saving a restatement updates the imported memory.
	sv := save(t, s, memory.Memory{User: "alice", Text: "imported 3, again", Vector: memorytest.Similar(vec("imp3"), 0.99, "x")})
	if !sv.Updated || sv.ID != got[0].ID {
		t.Errorf("Save after import = %+v, want an update of %s", sv, got[0].ID)
	}
	if err := s.(memory.Importer).Import(context.Background(), []memory.Memory{{User: "alice", Text: ""}}); !errors.Is(err, memory.ErrInvalid) {
		t.Errorf("Import of an empty memory = %v, want ErrInvalid", err)
	}
}
