package activities_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/window"
)

// compactConv is a conversation of n turns, each question and answer
// naming its turn (MARK-i), about 600 characters an answer.
func compactConv(n int) []longhaul.Message {
	var conv []longhaul.Message
	for i := range n {
		conv = append(conv,
			longhaul.Message{Role: longhaul.RoleUser, Content: fmt.Sprintf("Question MARK-%d?", i)},
			longhaul.Message{Role: longhaul.RoleAssistant, Content: fmt.Sprintf("MARK-%d: ", i) + strings.Repeat("the river ran past the mill. ", 20)})
	}
	return append(conv, longhaul.Message{Role: longhaul.RoleUser, Content: "And now?"})
}

// TestCompact summarizes a conversation too long for one call of a
// 1,024-token window in stretches, each folded into the summary so far,
// and leaves out the latest user message; a retry after a dead worker
// goes on from the progress its heartbeats recorded, never summarizing a
// stretch twice.
func TestCompact(t *testing.T) {
	f := newFixture(t, nil, nil)
	f.acts.Windows = window.NewResolver(window.Settings{"llmtest": 1024}, nil)
	var asked []string
	f.srv.On(llmtest.AnyMessageContains("You compact a conversation"), llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		in := r.LastUserMessage()
		asked = append(asked, in)
		before, added, _ := strings.Cut(in, "Conversation to add to it:")
		var marks []string
		for _, w := range strings.Fields(strings.TrimPrefix(before, "Summary so far:") + " " + added) {
			if strings.HasPrefix(w, "MARK-") && !strings.Contains(strings.Join(marks, " "), strings.Trim(w, ":?")) {
				marks = append(marks, strings.Trim(w, ":?"))
			}
		}
		return llmtest.Text(strings.Join(marks, " "))
	}))
	conv := compactConv(8)
	req := contract.CompactRequest{Call: "turn-1-compact", Caller: contract.Caller{Agent: "assistant"}, Messages: conv, Upto: 16}

	env := f.activityEnv()
	val, err := env.ExecuteActivity(f.acts.Compact, req)
	if err != nil {
		t.Fatalf("Compact: %v", err)
	}
	var resp contract.CompactResponse
	if err := val.Get(&resp); err != nil {
		t.Fatal(err)
	}
	if resp.Calls < 2 || resp.Calls != len(asked) {
		t.Fatalf("%d calls (%d asked); want the conversation in several stretches", resp.Calls, len(asked))
	}
	for i := range 8 {
		if !strings.Contains(resp.Summary.Text, fmt.Sprintf("MARK-%d", i)) {
			t.Errorf("the summary %q lost MARK-%d", resp.Summary.Text, i)
		}
	}
	if resp.Summary.Covers != 16 || resp.Summary.Key != longhaul.SummaryKey(conv[:16]) || resp.Summary.Tokens == 0 {
		t.Errorf("summary %+v", resp.Summary)
	}
	for _, in := range asked {
		if strings.Contains(in, "And now?") {
			t.Errorf("the latest user message was summarized: %q", in)
		}
	}

	// A retry whose dead attempt had summarized up to message 10.
	asked = nil
	env = f.activityEnv()
	env.SetHeartbeatDetails(struct {
		Next  int            `json:"next"`
		Text  string         `json:"text"`
		Usage longhaul.Usage `json:"usage"`
		Calls int            `json:"calls"`
	}{Next: 10, Text: "MARK-0 MARK-1 MARK-2 MARK-3 MARK-4 EARLIER", Calls: 2})
	val, err = env.ExecuteActivity(f.acts.Compact, req)
	if err != nil {
		t.Fatalf("Compact, resumed: %v", err)
	}
	if err := val.Get(&resp); err != nil {
		t.Fatal(err)
	}
	if len(asked) == 0 || !strings.Contains(asked[0], "EARLIER") {
		t.Fatalf("the resumed attempt did not go on from the recorded summary: %q", asked)
	}
	for _, in := range asked {
		_, added, _ := strings.Cut(in, "Conversation to add to it:")
		if strings.Contains(added, "MARK-4:") {
			t.Errorf("the resumed attempt summarized message 9 again: %q", added)
		}
	}
	if !strings.Contains(resp.Summary.Text, "MARK-7") || resp.Calls != 2+len(asked) {
		t.Errorf("resumed summary %q in %d calls (%d asked)", resp.Summary.Text, resp.Calls, len(asked))
	}
}
