package store_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul/internal/store"
)

// TestConversations is the conversation store's conformance suite: the same cases on
// SQLite and on PostgreSQL.
func TestConversations(t *testing.T) { conformance(t, conversationCases) }

var conversationCases = []conformanceCase{
	{"turn round trip", testTurnRoundTrip},
	{"turn re-put adds only new messages", testTurnIncremental},
	{"turn filter by runs", testTurnFilter},
	{"conversations are per user", testConversationsPerUser},
	{"conversation list pages", testConversationPages},
	{"delete conversation", testDeleteConversation},
	{"invalid turns", testInvalidTurns},
	{"conversation cap evicts the least recently updated", testConversationCap},
}

func sampleTurn(user, chat, run string, n int) store.Turn {
	start := time.Date(2026, 3, 1, 12, 0, n, 0, time.UTC)
	return store.Turn{
		User: user, Chat: chat, Run: run, Turn: n, Agent: "assistant", Status: "completed",
		AnswerKey: "a" + run, VisibleKey: "v" + run, Title: fmt.Sprintf("question %d", n),
		PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15,
		StartedAt: start, FinishedAt: start.Add(1500 * time.Microsecond),
		Messages: []store.TurnMessage{
			{Seq: 0, Data: []byte(`{"role":"assistant","tool_calls":[{"id":"c1"}]}`)},
			{Seq: 1, Data: []byte(`{"role":"tool","tool_call_id":"c1","content":"é ✓"}`)},
		},
	}
}

func mustPutTurn(t *testing.T, s store.Store, turn store.Turn) {
	t.Helper()
	if err := s.PutTurn(t.Context(), turn); err != nil {
		t.Fatalf("PutTurn(%s): %v", turn.Run, err)
	}
}

func mustTurns(t *testing.T, s store.Store, user, chat string, q store.TurnQuery) []store.Turn {
	t.Helper()
	turns, err := s.Turns(t.Context(), user, chat, q)
	if err != nil {
		t.Fatalf("Turns(%s, %s): %v", user, chat, err)
	}
	return turns
}

func testTurnRoundTrip(t *testing.T, u string) {
	s := open(t, u)
	want := sampleTurn("alice", "alice/chat-1", "run-1", 1)
	mustPutTurn(t, s, want)
	got := mustTurns(t, s, "alice", "alice/chat-1", store.TurnQuery{Messages: true})
	if diff := cmp.Diff([]store.Turn{want}, got); diff != "" {
		t.Errorf("Turns (-want +got):\n%s", diff)
	}
	bare := mustTurns(t, s, "alice", "alice/chat-1", store.TurnQuery{})
	if len(bare) != 1 || bare[0].Messages != nil {
		t.Errorf("Turns without messages = %+v, want one turn without messages", bare)
	}
	c, err := s.Conversation(t.Context(), "alice", "alice/chat-1")
	if err != nil {
		t.Fatal(err)
	}
	if c.Turns != 1 || c.Title != "question 1" || c.User != "alice" || c.CreatedAt.IsZero() || c.UpdatedAt.Before(c.CreatedAt) {
		t.Errorf("Conversation = %+v", c)
	}
}

func testTurnIncremental(t *testing.T, u string) {
	s := open(t, u)
	turn := sampleTurn("alice", "alice/chat-1", "run-1", 1)
	first := turn
	first.Status, first.Messages = "running", turn.Messages[:1]
	mustPutTurn(t, s, first)
	// A retry of the first part, then the whole turn with one more message.
	mustPutTurn(t, s, first)
	turn.Messages = append(turn.Messages, store.TurnMessage{Seq: 2, Data: []byte(`{"role":"assistant","content":"done"}`)})
	mustPutTurn(t, s, turn)
	mustPutTurn(t, s, turn)
	got := mustTurns(t, s, "alice", "alice/chat-1", store.TurnQuery{Messages: true})
	if diff := cmp.Diff([]store.Turn{turn}, got); diff != "" {
		t.Errorf("Turns after parts and retries (-want +got):\n%s", diff)
	}
	// Two runs of the same turn (a Regenerate) are two stored turns.
	mustPutTurn(t, s, sampleTurn("alice", "alice/chat-1", "run-1b", 1))
	if c, err := s.Conversation(t.Context(), "alice", "alice/chat-1"); err != nil || c.Turns != 2 {
		t.Errorf("Conversation = %+v, %v; want 2 turns", c, err)
	}
	// Concurrent puts of the same turn (two workers retrying) store it once.
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { errs[i] = s.PutTurn(t.Context(), sampleTurn("alice", "alice/chat-2", "run-2", 1)) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if got := mustTurns(t, s, "alice", "alice/chat-2", store.TurnQuery{Messages: true}); len(got) != 1 || len(got[0].Messages) != 2 {
		t.Errorf("concurrent puts stored %+v", got)
	}
}

func testTurnFilter(t *testing.T, u string) {
	s := open(t, u)
	for i, run := range []string{"run-1", "run-2", "run-3"} {
		mustPutTurn(t, s, sampleTurn("alice", "alice/chat-1", run, i+1))
	}
	got := mustTurns(t, s, "alice", "alice/chat-1", store.TurnQuery{Runs: []string{"run-3", "run-1", "run-9"}, Messages: true})
	var runs []string
	for _, turn := range got {
		runs = append(runs, turn.Run)
		if len(turn.Messages) != 2 {
			t.Errorf("turn %s has %d messages, want 2", turn.Run, len(turn.Messages))
		}
	}
	if !slices.Equal(runs, []string{"run-1", "run-3"}) {
		t.Errorf("filtered runs = %v, want [run-1 run-3] (oldest first)", runs)
	}
}

func testConversationsPerUser(t *testing.T, u string) {
	s := open(t, u)
	mustPutTurn(t, s, sampleTurn("alice", "shared-id", "run-a", 1))
	if got := mustTurns(t, s, "bob", "shared-id", store.TurnQuery{Messages: true}); len(got) != 0 {
		t.Errorf("bob sees alice's turns: %+v", got)
	}
	if _, err := s.Conversation(t.Context(), "bob", "shared-id"); !errors.Is(err, store.ErrNoConversation) {
		t.Errorf("bob's Conversation error = %v, want ErrNoConversation", err)
	}
	if list, err := s.ListConversations(t.Context(), "bob", 10, nil); err != nil || len(list) != 0 {
		t.Errorf("bob's list = %+v, %v; want none", list, err)
	}
	if _, err := s.DeleteConversation(t.Context(), "bob", "shared-id"); !errors.Is(err, store.ErrNoConversation) {
		t.Errorf("bob's delete error = %v, want ErrNoConversation", err)
	}
	if got := mustTurns(t, s, "alice", "shared-id", store.TurnQuery{}); len(got) != 1 {
		t.Errorf("alice's turns after bob's delete = %+v", got)
	}
}

func testConversationPages(t *testing.T, u string) {
	var mu sync.Mutex
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	s := open(t, u, store.WithClock(clock))
	// chat-0 … chat-4 in order, chat-3 and chat-4 at the same instant;
	// then chat-1 gets a new turn and is the newest.
	for i := range 5 {
		mu.Lock()
		if i != 4 {
			now = now.Add(time.Second)
		}
		mu.Unlock()
		mustPutTurn(t, s, sampleTurn("alice", fmt.Sprintf("alice/chat-%d", i), fmt.Sprintf("run-%d", i), 1))
	}
	mu.Lock()
	now = now.Add(time.Second)
	mu.Unlock()
	mustPutTurn(t, s, sampleTurn("alice", "alice/chat-1", "run-1-2", 2))
	mustPutTurn(t, s, sampleTurn("bob", "bob/chat-9", "run-9", 1))
	var got []string
	var after *store.ConversationCursor
	for page := 0; ; page++ {
		list, err := s.ListConversations(t.Context(), "alice", 2, after)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) == 0 || page > 5 {
			break
		}
		for _, c := range list {
			got = append(got, c.Chat)
		}
		last := list[len(list)-1]
		after = &store.ConversationCursor{UpdatedAt: last.UpdatedAt, Chat: last.Chat}
	}
	want := []string{"alice/chat-1", "alice/chat-4", "alice/chat-3", "alice/chat-2", "alice/chat-0"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pages (-want +got):\n%s", diff)
	}
	list, err := s.ListConversations(t.Context(), "alice", 1, nil)
	if err != nil || len(list) != 1 || list[0].Turns != 2 {
		t.Errorf("first = %+v, %v; want chat-1 with 2 turns", list, err)
	}
}

func testDeleteConversation(t *testing.T, u string) {
	s := open(t, u)
	mustPutTurn(t, s, sampleTurn("alice", "alice/chat-1", "run-1", 1))
	mustPutTurn(t, s, sampleTurn("alice", "alice/chat-1", "run-2", 2))
	mustPutTurn(t, s, sampleTurn("alice", "alice/chat-2", "run-3", 1))
	for _, run := range []string{"run-1", "run-2", "run-3"} {
		put(t, s, store.Blob{Run: run, Kind: "tool_output", Name: "c1", Data: []byte("big output of " + run)})
	}
	runs, err := s.DeleteConversation(t.Context(), "alice", "alice/chat-1")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(runs)
	if !slices.Equal(runs, []string{"run-1", "run-2"}) {
		t.Errorf("deleted runs = %v, want [run-1 run-2]", runs)
	}
	if got := mustTurns(t, s, "alice", "alice/chat-1", store.TurnQuery{Messages: true}); len(got) != 0 {
		t.Errorf("turns after delete = %+v", got)
	}
	for _, run := range []string{"run-1", "run-2"} {
		if list := mustList(t, s, run); len(list) != 0 {
			t.Errorf("blobs of %s after delete = %+v", run, list)
		}
	}
	if list := mustList(t, s, "run-3"); len(list) != 1 {
		t.Errorf("the other chat's blobs = %+v, want 1", list)
	}
	if got := mustTurns(t, s, "alice", "alice/chat-2", store.TurnQuery{Messages: true}); len(got) != 1 || len(got[0].Messages) != 2 {
		t.Errorf("the other chat's turns = %+v", got)
	}
	if _, err := s.DeleteConversation(t.Context(), "alice", "alice/chat-1"); !errors.Is(err, store.ErrNoConversation) {
		t.Errorf("second delete error = %v, want ErrNoConversation", err)
	}
	if _, err := s.Conversation(t.Context(), "alice", "alice/chat-1"); !errors.Is(err, store.ErrNoConversation) {
		t.Errorf("Conversation after delete error = %v, want ErrNoConversation", err)
	}
}

func testInvalidTurns(t *testing.T, u string) {
	s := open(t, u)
	for name, turn := range map[string]store.Turn{
		"no user":        {Chat: "c", Run: "r"},
		"no chat":        {User: "u", Run: "r"},
		"no run":         {User: "u", Chat: "c"},
		"NUL in chat":    {User: "u", Chat: "c\x00", Run: "r"},
		"invalid UTF-8":  {User: "u", Chat: "c", Run: "r", Title: "\xff"},
		"NUL in message": {User: "u", Chat: "c", Run: "r", Messages: []store.TurnMessage{{Data: []byte("a\x00")}}},
	} {
		if err := s.PutTurn(t.Context(), turn); err == nil {
			t.Errorf("%s: PutTurn accepted %+v", name, turn)
		}
	}
	if _, err := s.Conversation(t.Context(), "u", "\xff"); !errors.Is(err, store.ErrNoConversation) {
		t.Errorf("Conversation of an invalid id: %v, want ErrNoConversation", err)
	}
}

// testConversationCap holds a user to two stored chats: a turn of a third
// chat removes the least recently updated one with its turns and messages
// (a turn of an older chat counts as an update), and another user's chats
// are not counted or touched.
func testConversationCap(t *testing.T, u string) {
	var tick atomic.Int64
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s := open(t, u, store.WithMaxConversations(2), store.WithClock(func() time.Time {
		return base.Add(time.Duration(tick.Add(1)) * time.Second)
	}))
	putTurn := func(user, chat, run string, n int) {
		t.Helper()
		if err := s.PutTurn(t.Context(), sampleTurn(user, chat, run, n)); err != nil {
			t.Fatal(err)
		}
	}
	chats := func(user string) []string {
		t.Helper()
		cs, err := s.ListConversations(t.Context(), user, 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		out := []string{}
		for _, c := range cs {
			out = append(out, c.Chat)
		}
		return out
	}
	putTurn("bob", "b1", "run-b1", 1)
	putTurn("bob", "b2", "run-b2", 1)
	putTurn("ann", "a1", "run-a1", 1)
	putTurn("ann", "a2", "run-a2", 1)
	putTurn("ann", "a1", "run-a1b", 2) // a1 is now the more recent
	putTurn("ann", "a3", "run-a3", 1)  // evicts a2
	if diff := cmp.Diff([]string{"a3", "a1"}, chats("ann")); diff != "" {
		t.Errorf("ann's chats (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"b2", "b1"}, chats("bob")); diff != "" {
		t.Errorf("bob's chats (-want +got):\n%s", diff)
	}
	if turns, err := s.Turns(t.Context(), "ann", "a2", store.TurnQuery{Messages: true}); err != nil || len(turns) != 0 {
		t.Errorf("turns of the evicted chat = %v, %v; want none", turns, err)
	}
	if turns, err := s.Turns(t.Context(), "ann", "a1", store.TurnQuery{Messages: true}); err != nil || len(turns) != 2 || len(turns[1].Messages) != 2 {
		t.Errorf("turns of a kept chat = %+v, %v; want both with their messages", turns, err)
	}
}
