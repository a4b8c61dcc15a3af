package activities

import (
	"github.com/longhaul-dev/longhaul/internal/wire"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/internal/testing/storetest"
)

func user(s string) longhaul.Message { return longhaul.Message{Role: longhaul.RoleUser, Content: s} }
func said(s string, calls ...longhaul.ToolCall) longhaul.Message {
	return longhaul.Message{Role: longhaul.RoleAssistant, Content: s, ToolCalls: calls}
}
func result(id, name, s string) longhaul.Message {
	return longhaul.Message{Role: longhaul.RoleTool, ToolCallID: id, Name: name, Content: s}
}

// card is a tool card as the API renders it into an answer.
func card(id string) string {
	return "\n<details type=\"tool_calls\" done=\"true\" id=\"" + id + "\" name=\"x\" arguments=\"&quot;{}&quot;\" result=\"&quot;ok&quot;\">\n<summary>Tool Executed</summary>\n</details>\n"
}

// shown is an answer as Open WebUI sends it back, once the chat request is
// read: its tool cards taken out (wire.AnswerText), as the activity gets it.
func shown(s string) string { return wire.AnswerText(s) }

var (
	trending = longhaul.ToolCall{ID: "c1", Name: "tmdb_trending", Arguments: `{"window":"week"}`}
	turn1    = []longhaul.Message{
		said("", trending),
		result("c1", "tmdb_trending", `{"results":["[tmdb:931285] Mortal Kombat II (2026)","[tmdb:1] Other (2025)"]}`),
		said("Trending this week: Mortal Kombat II and Other."),
	}
	left, right = longhaul.ToolCall{ID: "c2", Name: "web_fetch", Arguments: `{"url":"https://a.example"}`},
		longhaul.ToolCall{ID: "c3", Name: "web_fetch", Arguments: `{"url":"https://b.example"}`}
	turn2 = []longhaul.Message{
		said("Let me read both.", left, right),
		result("c2", "web_fetch", "page a"),
		result("c3", "web_fetch", "page b, first 20 characters of a long page"),
		said("Both pages say the same."),
	}
	turn3a = []longhaul.Message{said("", longhaul.ToolCall{ID: "c4", Name: "current_time", Arguments: `{}`}), result("c4", "current_time", "12:00"), said("It is noon.")}
	turn3b = []longhaul.Message{said("", longhaul.ToolCall{ID: "c5", Name: "current_time", Arguments: `{}`}), result("c5", "current_time", "12:01"), said("It is one past noon.")}
	turn4  = []longhaul.Message{said("Just words.")}
)

func visible(msgs []longhaul.Message) string {
	var out []string
	for _, m := range msgs {
		if m.Role == longhaul.RoleAssistant && m.Content != "" {
			out = append(out, m.Content)
		}
	}
	return strings.Join(out, "\n")
}

func TestRestoreMatching(t *testing.T) {
	be := storetest.Backends[0]
	blobs, err := store.Open(t.Context(), be.Fresh(t))
	if err != nil {
		t.Fatal(err)
	}
	defer blobs.Close()
	a := &Activities{Blobs: blobs, log: slog.New(slog.DiscardHandler)}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	record := func(run string, n int, msgs []longhaul.Message, calls map[string]contract.CallRecord) {
		t.Helper()
		err := a.recordTurn(t.Context(), run, contract.RecordTurnRequest{
			User: "alice", ChatID: "alice/chat", Turn: n, Agent: "assistant", Status: "completed",
			Messages: msgs, Calls: calls, StartedAt: now.Add(time.Duration(n) * time.Minute), FinishedAt: now.Add(time.Duration(n) * time.Minute),
			VisibleKey: longhaul.MatchKey(visible(msgs)), AnswerKey: longhaul.MatchKey(msgs[len(msgs)-1].Content),
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	record("run-1", 1, turn1, nil)
	// The second page was long: the model read an excerpt, the store keeps it whole.
	record("run-2", 2, turn2, map[string]contract.CallRecord{"c3": {
		Truncated: true, Ref: "sha256:" + strings.Repeat("b", 64),
		Status: []contract.CallStatus{{Type: string(longhaul.EventToolOutput), Time: now}},
	}})
	record("run-3a", 3, turn3a, nil)
	record("run-3b", 3, turn3b, nil) // Regenerate: the same turn asked again
	record("run-4", 4, turn4, nil)

	cat := func(parts ...[]longhaul.Message) []longhaul.Message {
		var out []longhaul.Message
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	one := func(m longhaul.Message) []longhaul.Message { return []longhaul.Message{m} }
	tests := []struct {
		name   string
		user   string
		budget int
		in     []longhaul.Message
		want   []longhaul.Message // nil: nothing restored
		turns  int
	}{
		{
			name:  "answer with the cards Longhaul rendered",
			in:    []longhaul.Message{user("trending?"), said(shown(card("c1") + "Trending this week: Mortal Kombat II and Other.")), user("the 2026 one")},
			want:  cat(one(user("trending?")), turn1, one(user("the 2026 one"))),
			turns: 1,
		},
		{
			name:  "cards stripped, whitespace changed",
			in:    []longhaul.Message{user("trending?"), said("  Trending this week:\n\nMortal Kombat II   and Other.\n"), user("the 2026 one")},
			want:  cat(one(user("trending?")), turn1, one(user("the 2026 one"))),
			turns: 1,
		},
		{
			name:  "edited answer stays as sent",
			in:    []longhaul.Message{user("trending?"), said("Trending this week: only Other."), user("the 2026 one")},
			turns: 0,
		},
		{
			name:  "parallel calls and a claim-checked output, matched by all the text shown",
			in:    []longhaul.Message{user("compare"), said(shown("Let me read both." + card("c2") + card("c3") + "Both pages say the same.")), user("ok")},
			want:  cat(one(user("compare")), turn2, one(user("ok"))),
			turns: 1,
		},
		{
			name:  "parallel calls matched by the final answer alone",
			in:    []longhaul.Message{user("compare"), said("Both pages say the same."), user("ok")},
			want:  cat(one(user("compare")), turn2, one(user("ok"))),
			turns: 1,
		},
		{
			name:  "regenerated answer restores its own run",
			in:    []longhaul.Message{user("time?"), said("It is one past noon."), user("thanks")},
			want:  cat(one(user("time?")), turn3b, one(user("thanks"))),
			turns: 1,
		},
		{
			name:  "a turn without tool calls has nothing to restore",
			in:    []longhaul.Message{user("talk"), said("Just words."), user("more")},
			turns: 0,
		},
		{
			name:  "another user's chat with the same id",
			user:  "bob",
			in:    []longhaul.Message{user("trending?"), said("Trending this week: Mortal Kombat II and Other."), user("the 2026 one")},
			turns: 0,
		},
		{
			name: "several turns",
			in: []longhaul.Message{
				user("trending?"), said("Trending this week: Mortal Kombat II and Other."),
				user("compare"), said("Both pages say the same."),
				user("edited"), said("nothing like it"),
				user("time?"), said("It is noon."),
				user("next"),
			},
			want: cat(one(user("trending?")), turn1, one(user("compare")), turn2,
				one(user("edited")), one(said("nothing like it")), one(user("time?")), turn3a, one(user("next"))),
			turns: 3,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u := tc.user
			if u == "" {
				u = "alice"
			}
			a.RestoreChars = tc.budget
			res, err := a.RestoreConversation(t.Context(), contract.RestoreRequest{User: u, ChatID: "alice/chat", Messages: tc.in})
			if err != nil {
				t.Fatal(err)
			}
			if res.Turns != tc.turns {
				t.Errorf("Turns = %d, want %d", res.Turns, tc.turns)
			}
			if diff := cmp.Diff(tc.want, restoredOrNil(tc.in, res), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("messages (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRestoreBudget: the newest restored turn's results stay whole; older
// ones share what is left of the budget, newest first, and the cut says so
// and names the stored whole.
func TestRestoreBudget(t *testing.T) {
	big := func(c string) string { return strings.Repeat(c, 100) }
	ref := "sha256:" + strings.Repeat("c", 64)
	timelines := map[string][]contract.TimelineMessage{}
	var in []longhaul.Message
	matched := map[int]string{}
	for _, c := range []string{"a", "b", "c"} {
		run := "run-" + c
		timelines[run] = []contract.TimelineMessage{
			{Role: longhaul.RoleAssistant, ToolCalls: []longhaul.ToolCall{{ID: c, Name: "t"}}},
			{Role: longhaul.RoleTool, ToolCallID: c, Name: "t", Content: big(c), Ref: ref},
			{Role: longhaul.RoleAssistant, Content: "answer " + c},
		}
		in = append(in, user("q"+c))
		matched[len(in)] = run
		in = append(in, said("answer "+c))
	}
	res := restore(in, matched, timelines, 130)
	var outputs []string
	for _, m := range res.Apply(in) {
		if m.Role == longhaul.RoleTool {
			outputs = append(outputs, m.Content)
		}
	}
	if res.Turns != 3 || res.Cut != 2 || len(outputs) != 3 {
		t.Fatalf("Turns %d, Cut %d, %d outputs; want 3, 2, 3", res.Turns, res.Cut, len(outputs))
	}
	if outputs[2] != big("c") {
		t.Errorf("newest output = %q, want it whole", outputs[2])
	}
	if !strings.HasPrefix(outputs[1], strings.Repeat("b", 30)+"\n[Longhaul left out 70 of the 100 characters") || !strings.Contains(outputs[1], ref) {
		t.Errorf("middle output = %q, want 30 characters and the note with the ref", outputs[1])
	}
	if !strings.HasPrefix(outputs[0], "[Longhaul left out 100 of the 100") {
		t.Errorf("oldest output = %q, want only the note", outputs[0])
	}
	// With budget to spare nothing is cut.
	if res := restore(in, matched, timelines, 1000); res.Cut != 0 {
		t.Errorf("Cut = %d with a big budget, want 0", res.Cut)
	}
}

// restoredOrNil is the history a restore gives the model, nil when it
// restored nothing (as the result's Messages was).
func restoredOrNil(in []longhaul.Message, res contract.RestoreResult) []longhaul.Message {
	if res.Turns == 0 {
		return nil
	}
	return res.Apply(in)
}
