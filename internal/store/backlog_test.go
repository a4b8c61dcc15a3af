package store_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul/internal/store"
)

// TestBacklog is the backlog's conformance suite: the same cases on
// SQLite and on PostgreSQL.
func TestBacklog(t *testing.T) { conformance(t, backlogCases) }

var backlogCases = []conformanceCase{
	{"backlog round trip", testBacklogRoundTrip},
	{"backlog is per user", testBacklogPerUser},
	{"backlog add is idempotent on its key", testBacklogIdempotentAdd},
	{"backlog cap", testBacklogCap},
	{"backlog list filters, orders and bounds", testBacklogList},
	{"backlog update", testBacklogUpdate},
	{"backlog refuses bad items", testBacklogInvalid},
	{"backlog concurrent adds", testBacklogConcurrentAdds},
	{"delete conversation takes its backlog items", testBacklogDeleteConversation},
	{"delete user backlog takes all of one user's items", testBacklogDeleteUser},
}

func testBacklogDeleteUser(t *testing.T, u string) {
	s := open(t, u)
	mustAdd(t, s, store.BacklogItem{User: "alice", Title: "one", Chat: "c1"}, "k1")
	mustAdd(t, s, store.BacklogItem{User: "alice", Title: "two"}, "")
	mustAdd(t, s, store.BacklogItem{User: "bob", Title: "bob's"}, "")
	n, err := s.DeleteUserBacklog(t.Context(), "alice")
	if err != nil || n != 2 {
		t.Fatalf("DeleteUserBacklog(alice) = %d, %v; want 2", n, err)
	}
	if items, total := mustItems(t, s, "alice", store.BacklogQuery{}); total != 0 {
		t.Errorf("alice still has %v", titles(items))
	}
	if items, _ := mustItems(t, s, "bob", store.BacklogQuery{}); len(items) != 1 {
		t.Errorf("bob's backlog = %v, want his one item", titles(items))
	}
	// Numbering starts again, and the old idempotency key adds anew.
	if again := mustAdd(t, s, store.BacklogItem{User: "alice", Title: "again"}, "k1"); again.ID != 1 || again.Title != "again" {
		t.Errorf("after deletion: %+v, want a new item #1", again)
	}
	if n, err := s.DeleteUserBacklog(t.Context(), "carol"); err != nil || n != 0 {
		t.Errorf("DeleteUserBacklog(carol) = %d, %v; want 0", n, err)
	}
}

func mustAdd(t *testing.T, s store.Store, it store.BacklogItem, key string) store.BacklogItem {
	t.Helper()
	got, err := s.AddBacklogItem(t.Context(), it, key)
	if err != nil {
		t.Fatalf("AddBacklogItem(%q): %v", it.Title, err)
	}
	return got
}

func mustItems(t *testing.T, s store.Store, user string, q store.BacklogQuery) ([]store.BacklogItem, int) {
	t.Helper()
	items, total, err := s.BacklogItems(t.Context(), user, q)
	if err != nil {
		t.Fatalf("BacklogItems(%s, %+v): %v", user, q, err)
	}
	return items, total
}

func titles(items []store.BacklogItem) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, it.Title)
	}
	return out
}

func ptr(s string) *string { return &s }

func testBacklogRoundTrip(t *testing.T, u string) {
	s := open(t, u)
	a := mustAdd(t, s, store.BacklogItem{User: "alice", Title: "  Renew passport ", Notes: "before June", Chat: "c1", Run: "r1"}, "r1/1")
	want := store.BacklogItem{User: "alice", ID: 1, Title: "Renew passport", Notes: "before June", Priority: "normal",
		Status: store.BacklogOpen, Chat: "c1", Run: "r1", CreatedAt: a.CreatedAt, UpdatedAt: a.CreatedAt}
	if diff := cmp.Diff(want, a); diff != "" {
		t.Errorf("added (-want +got):\n%s", diff)
	}
	if a.CreatedAt.IsZero() || a.Closed() {
		t.Errorf("added item: created %v, closed %v", a.CreatedAt, a.Closed())
	}
	b := mustAdd(t, s, store.BacklogItem{User: "alice", Title: "Call the plumber", Priority: "high"}, "")
	if b.ID != 2 {
		t.Errorf("second item's id = %d, want 2", b.ID)
	}
	got, err := s.GetBacklogItem(t.Context(), "alice", 1)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a, got); diff != "" {
		t.Errorf("GetBacklogItem (-added +got):\n%s", diff)
	}
	// Reopened store: the items survive.
	s2 := open(t, u)
	items, total := mustItems(t, s2, "alice", store.BacklogQuery{})
	if diff := cmp.Diff([]string{"Call the plumber", "Renew passport"}, titles(items)); diff != "" || total != 2 {
		t.Errorf("list after reopen: total %d (-want +got):\n%s", total, diff)
	}
}

func testBacklogPerUser(t *testing.T, u string) {
	s := open(t, u)
	mustAdd(t, s, store.BacklogItem{User: "alice", Title: "alice's secret plan"}, "")
	b := mustAdd(t, s, store.BacklogItem{User: "bob", Title: "bob's chore"}, "")
	if b.ID != 1 {
		t.Errorf("bob's first id = %d, want 1 (ids are counted per user)", b.ID)
	}
	mustAdd(t, s, store.BacklogItem{User: "bob", Title: "bob's second"}, "")
	if _, err := s.GetBacklogItem(t.Context(), "carol", 1); !errors.Is(err, store.ErrNoBacklogItem) {
		t.Errorf("carol reads item 1: %v, want ErrNoBacklogItem", err)
	}
	if _, err := s.GetBacklogItem(t.Context(), "alice", 2); !errors.Is(err, store.ErrNoBacklogItem) {
		t.Errorf("alice reads bob's item 2: %v, want ErrNoBacklogItem", err)
	}
	_, err := s.UpdateBacklogItem(t.Context(), "alice", 2, store.BacklogPatch{Status: ptr(store.BacklogDone)})
	if !errors.Is(err, store.ErrNoBacklogItem) || strings.Contains(err.Error(), "bob") {
		t.Errorf("alice closes bob's item 2: %v, want ErrNoBacklogItem without its content", err)
	}
	items, _ := mustItems(t, s, "alice", store.BacklogQuery{Status: store.BacklogAll})
	if diff := cmp.Diff([]string{"alice's secret plan"}, titles(items)); diff != "" {
		t.Errorf("alice's list (-want +got):\n%s", diff)
	}
	if items, _ := mustItems(t, s, "bob", store.BacklogQuery{Text: "secret"}); len(items) != 0 {
		t.Errorf("bob's search finds %v", titles(items))
	}
	bobs, _ := mustItems(t, s, "bob", store.BacklogQuery{})
	if bobs[0].Status != store.BacklogOpen {
		t.Errorf("bob's item after alice's update: %+v", bobs[0])
	}
}

func testBacklogIdempotentAdd(t *testing.T, u string) {
	s := open(t, u)
	first := mustAdd(t, s, store.BacklogItem{User: "alice", Title: "Water the plants", Run: "r1"}, "r1/3")
	again := mustAdd(t, s, store.BacklogItem{User: "alice", Title: "Water the plants", Run: "r1"}, "r1/3")
	if diff := cmp.Diff(first, again); diff != "" {
		t.Errorf("retried add (-first +again):\n%s", diff)
	}
	// The same key of another user is another add.
	if b := mustAdd(t, s, store.BacklogItem{User: "bob", Title: "x"}, "r1/3"); b.User != "bob" || b.Title != "x" {
		t.Errorf("bob's add with alice's key = %+v", b)
	}
	next := mustAdd(t, s, store.BacklogItem{User: "alice", Title: "Feed the cat", Run: "r1"}, "r1/4")
	if next.ID != 2 {
		t.Errorf("next add's id = %d, want 2 (the retry took no id)", next.ID)
	}
	if _, total := mustItems(t, s, "alice", store.BacklogQuery{}); total != 2 {
		t.Errorf("alice has %d items, want 2", total)
	}
}

func testBacklogCap(t *testing.T, u string) {
	s := open(t, u, store.WithMaxBacklogItems(2))
	mustAdd(t, s, store.BacklogItem{User: "alice", Title: "one"}, "k1")
	mustAdd(t, s, store.BacklogItem{User: "alice", Title: "two"}, "k2")
	_, err := s.AddBacklogItem(t.Context(), store.BacklogItem{User: "alice", Title: "three"}, "k3")
	if !errors.Is(err, store.ErrBacklogFull) || !strings.Contains(err.Error(), "2 active items") {
		t.Fatalf("third add: %v, want ErrBacklogFull naming the cap", err)
	}
	// A retry of an add that got in is answered, not refused.
	if again := mustAdd(t, s, store.BacklogItem{User: "alice", Title: "two"}, "k2"); again.ID != 2 {
		t.Errorf("retried add at the cap = %+v", again)
	}
	// Another user has their own cap.
	mustAdd(t, s, store.BacklogItem{User: "bob", Title: "bob's"}, "k3")
	// Closing frees a place; closed items are trimmed to the cap.
	for id := int64(1); id <= 2; id++ {
		if _, err := s.UpdateBacklogItem(t.Context(), "alice", id, store.BacklogPatch{Status: ptr(store.BacklogDone)}); err != nil {
			t.Fatal(err)
		}
	}
	three := mustAdd(t, s, store.BacklogItem{User: "alice", Title: "three"}, "k3")
	if _, err := s.UpdateBacklogItem(t.Context(), "alice", three.ID, store.BacklogPatch{Status: ptr(store.BacklogWontDo)}); err != nil {
		t.Fatal(err)
	}
	closed, total := mustItems(t, s, "alice", store.BacklogQuery{Status: store.BacklogClosed})
	if diff := cmp.Diff([]string{"three", "two"}, titles(closed)); diff != "" || total != 2 {
		t.Errorf("closed items kept: total %d (-want +got):\n%s", total, diff)
	}
	// Reopening past the cap is refused.
	mustAdd(t, s, store.BacklogItem{User: "alice", Title: "four"}, "k4")
	mustAdd(t, s, store.BacklogItem{User: "alice", Title: "five"}, "k5")
	if _, err := s.UpdateBacklogItem(t.Context(), "alice", three.ID, store.BacklogPatch{Status: ptr(store.BacklogOpen)}); !errors.Is(err, store.ErrBacklogFull) {
		t.Errorf("reopen past the cap: %v, want ErrBacklogFull", err)
	}
}

func testBacklogList(t *testing.T, u string) {
	s := open(t, u)
	add := func(title, notes, priority string) store.BacklogItem {
		return mustAdd(t, s, store.BacklogItem{User: "alice", Title: title, Notes: notes, Priority: priority}, "")
	}
	add("Buy milk", "", "low")
	add("Fix the ÄLVSJÖ invoice", "", "normal")
	add("Book dentist", "ask for a morning slot", "high")
	done := add("Pay rent", "", "high")
	add("Plan holiday", "", "normal")
	if _, err := s.UpdateBacklogItem(t.Context(), "alice", done.ID, store.BacklogPatch{Status: ptr(store.BacklogDone)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateBacklogItem(t.Context(), "alice", 5, store.BacklogPatch{Status: ptr(store.BacklogInProgress)}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		q     store.BacklogQuery
		want  []string
		total int
	}{
		{store.BacklogQuery{}, []string{"Book dentist", "Fix the ÄLVSJÖ invoice", "Plan holiday", "Buy milk"}, 4},
		{store.BacklogQuery{Status: "closed"}, []string{"Pay rent"}, 1},
		{store.BacklogQuery{Status: "all"}, []string{"Book dentist", "Fix the ÄLVSJÖ invoice", "Plan holiday", "Buy milk", "Pay rent"}, 5},
		{store.BacklogQuery{Status: "in_progress"}, []string{"Plan holiday"}, 1},
		{store.BacklogQuery{Text: "älvsjö"}, []string{"Fix the ÄLVSJÖ invoice"}, 1},
		{store.BacklogQuery{Text: "MORNING"}, []string{"Book dentist"}, 1},
		{store.BacklogQuery{Text: "rent"}, []string{}, 0},
		{store.BacklogQuery{Limit: 2}, []string{"Book dentist", "Fix the ÄLVSJÖ invoice"}, 4},
	} {
		items, total := mustItems(t, s, "alice", c.q)
		if diff := cmp.Diff(c.want, titles(items)); diff != "" || total != c.total {
			t.Errorf("BacklogItems(%+v): total %d, want %d (-want +got):\n%s", c.q, total, c.total, diff)
		}
	}
	if _, _, err := s.BacklogItems(t.Context(), "alice", store.BacklogQuery{Status: "someday"}); !errors.Is(err, store.ErrInvalidBacklogItem) {
		t.Errorf("unknown status filter: %v", err)
	}
}

func testBacklogUpdate(t *testing.T, u string) {
	s := open(t, u)
	it := mustAdd(t, s, store.BacklogItem{User: "alice", Title: "Draft", Notes: "n"}, "")
	got, err := s.UpdateBacklogItem(t.Context(), "alice", it.ID, store.BacklogPatch{Title: ptr("Draft the report"), Priority: ptr("HIGH")})
	if err != nil {
		t.Fatal(err)
	}
	if got.Title != "Draft the report" || got.Priority != "high" || got.Notes != "n" || got.Status != store.BacklogOpen {
		t.Errorf("updated = %+v", got)
	}
	closed, err := s.UpdateBacklogItem(t.Context(), "alice", it.ID, store.BacklogPatch{Status: ptr(store.BacklogDone)})
	if err != nil {
		t.Fatal(err)
	}
	if closed.ClosedAt.IsZero() {
		t.Errorf("closed item has no ClosedAt: %+v", closed)
	}
	// The same patch again (a retried call) changes nothing.
	again, err := s.UpdateBacklogItem(t.Context(), "alice", it.ID, store.BacklogPatch{Status: ptr(store.BacklogDone)})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(closed, again); diff != "" {
		t.Errorf("repeated close (-first +again):\n%s", diff)
	}
	reopened, err := s.UpdateBacklogItem(t.Context(), "alice", it.ID, store.BacklogPatch{Status: ptr(store.BacklogOpen)})
	if err != nil {
		t.Fatal(err)
	}
	if !reopened.ClosedAt.IsZero() || reopened.Closed() {
		t.Errorf("reopened = %+v", reopened)
	}
	if _, err := s.UpdateBacklogItem(t.Context(), "alice", 99, store.BacklogPatch{Title: ptr("x")}); !errors.Is(err, store.ErrNoBacklogItem) {
		t.Errorf("update of a missing item: %v", err)
	}
	if _, err := s.UpdateBacklogItem(t.Context(), "alice", it.ID, store.BacklogPatch{Title: ptr("  ")}); !errors.Is(err, store.ErrInvalidBacklogItem) {
		t.Errorf("update to an empty title: %v", err)
	}
	if g, _ := s.GetBacklogItem(t.Context(), "alice", it.ID); g.Title != "Draft the report" {
		t.Errorf("a refused update changed the item: %+v", g)
	}
}

func testBacklogInvalid(t *testing.T, u string) {
	s := open(t, u)
	for _, c := range []struct {
		name string
		it   store.BacklogItem
	}{
		{"empty title", store.BacklogItem{User: "alice", Title: " "}},
		{"long title", store.BacklogItem{User: "alice", Title: strings.Repeat("é", store.MaxBacklogTitle+1)}},
		{"long notes", store.BacklogItem{User: "alice", Title: "t", Notes: strings.Repeat("x", store.MaxBacklogNotes+1)}},
		{"priority", store.BacklogItem{User: "alice", Title: "t", Priority: "urgent"}},
		{"status", store.BacklogItem{User: "alice", Title: "t", Status: "later"}},
		{"closed on add", store.BacklogItem{User: "alice", Title: "t", Status: store.BacklogDone}},
		{"NUL", store.BacklogItem{User: "alice", Title: "a\x00b"}},
		{"bad UTF-8", store.BacklogItem{User: "alice", Title: "a\xffb"}},
		{"no user", store.BacklogItem{Title: "t"}},
	} {
		if _, err := s.AddBacklogItem(t.Context(), c.it, ""); !errors.Is(err, store.ErrInvalidBacklogItem) {
			t.Errorf("%s: %v, want ErrInvalidBacklogItem", c.name, err)
		}
	}
	// At the limits exactly is fine.
	mustAdd(t, s, store.BacklogItem{User: "alice", Title: strings.Repeat("é", store.MaxBacklogTitle), Notes: strings.Repeat("ö", store.MaxBacklogNotes)}, "")
	if _, total := mustItems(t, s, "alice", store.BacklogQuery{}); total != 1 {
		t.Errorf("%d items stored, want 1", total)
	}
}

func testBacklogConcurrentAdds(t *testing.T, u string) {
	s := open(t, u, store.WithMaxBacklogItems(10))
	var wg sync.WaitGroup
	errs := make([]error, 16)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.AddBacklogItem(t.Context(), store.BacklogItem{User: "alice", Title: fmt.Sprint("item ", i)}, fmt.Sprint("k", i))
		}()
	}
	wg.Wait()
	var ok, full int
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, store.ErrBacklogFull):
			full++
		default:
			t.Errorf("concurrent add: %v", err)
		}
	}
	items, total := mustItems(t, s, "alice", store.BacklogQuery{})
	if ok != 10 || full != 6 || total != 10 {
		t.Errorf("16 concurrent adds at a cap of 10: %d added, %d refused, %d stored", ok, full, total)
	}
	seen := map[int64]bool{}
	for _, it := range items {
		if seen[it.ID] || it.ID < 1 || it.ID > 10 {
			t.Errorf("id %d repeated or out of 1..10", it.ID)
		}
		seen[it.ID] = true
	}
}

func testBacklogDeleteConversation(t *testing.T, u string) {
	s := open(t, u)
	mustPutTurn(t, s, sampleTurn("alice", "chat-1", "run-1", 1))
	mustPutTurn(t, s, sampleTurn("bob", "chat-1", "run-2", 1))
	mustAdd(t, s, store.BacklogItem{User: "alice", Title: "from chat 1", Chat: "chat-1", Run: "run-1"}, "")
	mustAdd(t, s, store.BacklogItem{User: "alice", Title: "from chat 2", Chat: "chat-2", Run: "run-3"}, "")
	mustAdd(t, s, store.BacklogItem{User: "bob", Title: "bob's from chat 1", Chat: "chat-1", Run: "run-2"}, "")
	if _, err := s.DeleteConversation(t.Context(), "alice", "chat-1"); err != nil {
		t.Fatal(err)
	}
	items, _ := mustItems(t, s, "alice", store.BacklogQuery{Status: store.BacklogAll})
	if diff := cmp.Diff([]string{"from chat 2"}, titles(items)); diff != "" {
		t.Errorf("alice's items after deleting chat-1 (-want +got):\n%s", diff)
	}
	bobs, _ := mustItems(t, s, "bob", store.BacklogQuery{})
	if diff := cmp.Diff([]string{"bob's from chat 1"}, titles(bobs)); diff != "" {
		t.Errorf("bob's items after alice deleted her chat-1 (-want +got):\n%s", diff)
	}
	// Ids are not given out again.
	if it := mustAdd(t, s, store.BacklogItem{User: "alice", Title: "new"}, ""); it.ID != 3 {
		t.Errorf("id after a deletion = %d, want 3", it.ID)
	}
}

// BenchmarkBacklog measures the backlog's calls on SQLite at a full
// backlog (the default cap of active items and as many closed ones): an
// add (a new user each time, so the cap never refuses), a text search over
// every item, and an update.
func BenchmarkBacklog(b *testing.B) {
	s, err := store.Open(b.Context(), "sqlite://"+b.TempDir()+"/bench.db")
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := b.Context()
	for i := range 2 * store.DefaultMaxBacklogItems {
		it, err := s.AddBacklogItem(ctx, store.BacklogItem{User: "full", Title: fmt.Sprintf("item %d", i), Notes: strings.Repeat("n", 200)}, "")
		if err != nil {
			b.Fatal(err)
		}
		if i%2 == 0 {
			if _, err := s.UpdateBacklogItem(ctx, "full", it.ID, store.BacklogPatch{Status: ptr(store.BacklogDone)}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("add", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := s.AddBacklogItem(ctx, store.BacklogItem{User: fmt.Sprint("u", i), Title: "t"}, fmt.Sprint("k", i)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("list all with text", func(b *testing.B) {
		for b.Loop() {
			if _, n, err := s.BacklogItems(ctx, "full", store.BacklogQuery{Status: store.BacklogAll, Text: "item 39", Limit: 20}); err != nil || n == 0 {
				b.Fatal(n, err)
			}
		}
	})
	b.Run("update", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := s.UpdateBacklogItem(ctx, "full", 2, store.BacklogPatch{Notes: ptr(fmt.Sprint("note ", i))}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
