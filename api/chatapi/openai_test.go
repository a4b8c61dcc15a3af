package chatapi

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

func TestToolCardEscapesAndStrips(t *testing.T) {
	card := toolCard(longhaul.ToolOutputData{ToolCallID: `c"1`, Name: "web_fetch", Output: `<b>"hi" & bye</b>`}, `{"url":"https://x.test/?a=1&b=2"}`)
	if strings.Contains(card, `<b>`) || strings.Contains(card, `"hi"`) {
		t.Fatalf("card not escaped: %s", card)
	}
	if !strings.HasPrefix(strings.TrimSpace(card), `<details type="tool_calls" done="true" id="c&#34;1" name="web_fetch" arguments="&#34;{\&#34;url\&#34;`) {
		t.Fatalf("unexpected card: %s", card)
	}
	text := "before" + card + "after" + card
	if got := wire.AnswerText(text); got != "before\nafter" {
		t.Fatalf("wire.AnswerText = %q", got)
	}
}

func TestClientResults(t *testing.T) {
	a, b := contract.ClientCallID("run-1", 3), contract.ClientCallID("run-1", 4)
	other := contract.ClientCallID("run-2", 1)
	tool := func(id, content string) wire.ChatMessage {
		return wire.ChatMessage{Role: "tool", ToolCallID: id, Content: wire.MessageContent{Text: content}}
	}
	user := wire.ChatMessage{Role: "user", Content: wire.MessageContent{Text: "hi"}}
	for _, tt := range []struct {
		name string
		msgs []wire.ChatMessage
		run  string
		want []contract.ToolResult
	}{
		{"two results", []wire.ChatMessage{user, {Role: "assistant"}, tool(a, "x"), tool(b, "y")}, "run-1",
			[]contract.ToolResult{{ToolCallID: a, Content: "x"}, {ToolCallID: b, Content: "y"}}},
		{"ends with a user message", []wire.ChatMessage{user, {Role: "assistant"}, tool(a, "x"), user}, "", nil},
		{"a foreign call id", []wire.ChatMessage{user, {Role: "assistant"}, tool("call_abc", "x")}, "", nil},
		{"two runs", []wire.ChatMessage{user, {Role: "assistant"}, tool(a, "x"), tool(other, "y")}, "", nil},
	} {
		run, got, ok := clientResults(tt.msgs)
		if run != tt.run || ok != (tt.run != "") || !cmp.Equal(got, tt.want) {
			t.Errorf("%s: clientResults = %q, %+v, %v", tt.name, run, got, ok)
		}
	}
}

func TestClientCallID(t *testing.T) {
	for _, run := range []string{"run-0b9c", "chat-u1_c2-turn-3-m.9", "x"} {
		id := contract.ClientCallID(run, 12)
		if got, ok := contract.ParseClientCallID(id); !ok || got != run {
			t.Errorf("ParseClientCallID(%q) = %q, %v; want %q", id, got, ok, run)
		}
	}
	for _, id := range []string{"call_123", "call_lh_", "call_lh_cnVu", "call_lh_cnVu.x", "call_lh_!!.1", "call_lh7"} {
		if run, ok := contract.ParseClientCallID(id); ok {
			t.Errorf("ParseClientCallID(%q) = %q, want no run", id, run)
		}
	}
}
