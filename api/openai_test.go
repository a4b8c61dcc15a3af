package api

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul"
)

func TestDecodeRequest(t *testing.T) {
	body := `{"model":"assistant","stream":true,"stop":"END","stream_options":{"include_usage":true},
	  "messages":[
	    {"role":"system","content":"be brief"},
	    {"role":"user","content":[{"type":"text","text":"look at"},{"type":"image_url","image_url":{"url":"data:x"}},{"type":"text","text":"this"}]},
	    {"role":"assistant","content":"Sure.\n<details type=\"tool_calls\" done=\"true\" id=\"c1\" name=\"web_fetch\" arguments=\"&quot;{}&quot;\" result=\"&quot;page&quot;\">\n<summary>Tool Executed</summary>\n</details>\nIt says hi.","tool_calls":null},
	    {"role":"user","content":"thanks"}
	  ],"unknown_field":{"a":1}}`
	var req ChatRequest
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatal(err)
	}
	if err := req.validate(); err != nil {
		t.Fatal(err)
	}
	got := domainMessages(req.Messages)
	want := []longhaul.Message{
		{Role: longhaul.RoleSystem, Content: "be brief"},
		{Role: longhaul.RoleUser, Content: "look at\nthis"},
		{Role: longhaul.RoleAssistant, Content: "Sure.\nIt says hi."},
		{Role: longhaul.RoleUser, Content: "thanks"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	if req.turn() != 2 {
		t.Errorf("turn = %d, want 2", req.turn())
	}
	if diff := cmp.Diff(longhaul.ModelOptions{Stop: []string{"END"}}, req.options()); diff != "" {
		t.Errorf("options (-want +got):\n%s", diff)
	}
}

func TestValidate(t *testing.T) {
	n2 := 2
	tests := []struct {
		name string
		req  ChatRequest
		want string
	}{
		{"no model", ChatRequest{Messages: []ChatMessage{{Role: "user", Content: MessageContent{Text: "hi"}}}}, "model: required"},
		{"no messages", ChatRequest{Model: "m"}, "messages: must not be empty"},
		{"bad role", ChatRequest{Model: "m", Messages: []ChatMessage{{Role: "robot"}}}, `messages[0].role: "robot"`},
		{"no user", ChatRequest{Model: "m", Messages: []ChatMessage{{Role: "system", Content: MessageContent{Text: "x"}}}}, "at least one user message"},
		{"tool without id", ChatRequest{Model: "m", Messages: []ChatMessage{{Role: "user"}, {Role: "tool"}}}, "tool_call_id: required"},
		{"n", ChatRequest{Model: "m", N: &n2, Messages: []ChatMessage{{Role: "user"}}}, "n: only 1"},
		{"negative max_tokens", ChatRequest{Model: "m", MaxTokens: -1, Messages: []ChatMessage{{Role: "user"}}}, "max_tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.req.validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("validate() = %v, want it to say %q", err, tt.want)
			}
		})
	}
}

func TestToolCardEscapesAndStrips(t *testing.T) {
	card := toolCard(longhaul.ToolOutputData{ToolCallID: `c"1`, Name: "web_fetch", Output: `<b>"hi" & bye</b>`}, `{"url":"https://x.test/?a=1&b=2"}`)
	if strings.Contains(card, `<b>`) || strings.Contains(card, `"hi"`) {
		t.Fatalf("card not escaped: %s", card)
	}
	if !strings.HasPrefix(strings.TrimSpace(card), `<details type="tool_calls" done="true" id="c&#34;1" name="web_fetch" arguments="&#34;{\&#34;url\&#34;`) {
		t.Fatalf("unexpected card: %s", card)
	}
	text := "before" + card + "after" + card
	if got := stripToolCards(text); got != "before\nafter" {
		t.Fatalf("stripToolCards = %q", got)
	}
}

func TestStringList(t *testing.T) {
	for in, want := range map[string]StringList{`"a"`: {"a"}, `["a","b"]`: {"a", "b"}, `null`: nil} {
		var s StringList
		if err := json.Unmarshal([]byte(in), &s); err != nil || !cmp.Equal(want, s) {
			t.Errorf("%s → %v, %v", in, s, err)
		}
	}
	var s StringList
	if err := json.Unmarshal([]byte(`3`), &s); err == nil {
		t.Error("a number was accepted as stop")
	}
}
