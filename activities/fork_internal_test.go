package activities

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul"
)

// TestRecordedUpTo: a fork at a tool call reuses every turn up to the one
// that made it, with all of that turn's results (a model answer with calls
// needs each one), and goes on at the next turn.
func TestRecordedUpTo(t *testing.T) {
	a, b, c := longhaul.ToolCall{ID: "a", Name: "x"}, longhaul.ToolCall{ID: "b", Name: "x"}, longhaul.ToolCall{ID: "c", Name: "x"}
	res := func(id string) longhaul.Message {
		return longhaul.Message{Role: longhaul.RoleTool, ToolCallID: id, Name: "x", Content: "result " + id}
	}
	rec := &recorded{
		turns: []recordedTurn{{n: 1, msg: said("", a, b)}, {n: 2, msg: said("", c)}, {n: 3, msg: said("done")}},
		results: map[string]recordedResult{
			"a": {msg: res("a"), seq: 1}, "b": {msg: res("b"), seq: 2}, "c": {msg: res("c"), seq: 3},
		},
	}
	for _, tc := range []struct {
		call string
		want []longhaul.Message
		turn int
		seq  int64
	}{
		{"a", []longhaul.Message{said("", a, b), res("a"), res("b")}, 2, 2},
		{"b", []longhaul.Message{said("", a, b), res("a"), res("b")}, 2, 2},
		{"c", []longhaul.Message{said("", a, b), res("a"), res("b"), said("", c), res("c")}, 3, 3},
	} {
		msgs, turn, seq, err := rec.upTo(tc.call)
		if err != nil {
			t.Fatalf("upTo(%s): %v", tc.call, err)
		}
		if diff := cmp.Diff(tc.want, msgs); diff != "" || turn != tc.turn || seq != tc.seq {
			t.Errorf("upTo(%s) = turn %d seq %d, want %d %d; messages (-want +got):\n%s", tc.call, turn, seq, tc.turn, tc.seq, diff)
		}
	}
	if _, _, _, err := rec.upTo("z"); err == nil || !strings.Contains(err.Error(), "no tool call z") {
		t.Errorf("upTo of an unknown call: %v", err)
	}
	delete(rec.results, "b")
	if _, _, _, err := rec.upTo("a"); err == nil || !strings.Contains(err.Error(), "tool call b, of the turns up to a, has no recorded result") {
		t.Errorf("upTo with a result missing: %v", err)
	}
}
