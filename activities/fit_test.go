package activities

import (
	"errors"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/internal/window"
	"github.com/sashabaranov/go-openai"
	"go.temporal.io/sdk/temporal"
)

// page is n characters of English-like text that starts with fact.
func page(fact string, n int) string {
	var b strings.Builder
	b.WriteString(fact + " ")
	for b.Len() < n {
		b.WriteString("The river runs past the old mill and the bakery on the corner of the square. ")
	}
	return b.String()[:n]
}

// research is a conversation: a question, then rounds of a tool call and
// its page, each page starting with its fact.
func research(rounds, chars int) []longhaul.Message {
	conv := []longhaul.Message{{Role: longhaul.RoleUser, Content: "What do the six pages say?"}}
	for i := range rounds {
		id := "call_" + string(rune('a'+i))
		conv = append(conv,
			longhaul.Message{Role: longhaul.RoleAssistant, ToolCalls: []longhaul.ToolCall{{ID: id, Name: "web_fetch", Arguments: `{"url":"https://example.com/` + id + `"}`}}},
			longhaul.Message{Role: longhaul.RoleTool, ToolCallID: id, Name: "web_fetch", Content: page("FACT-"+id, chars), Ref: "blob-" + id},
		)
	}
	return conv
}

// chatOf builds the request and shape as buildMessages does, with a system
// prompt of its own.
func chatOf(conv []longhaul.Message, sum *longhaul.Summary) (openai.ChatCompletionRequest, chatShape, []string) {
	req := openai.ChatCompletionRequest{}
	var shape chatShape
	var refs []string
	shape.cur, shape.user = currentRound(conv)
	sys := "You are a careful research assistant."
	covers := 0
	if sum != nil {
		covers = sum.Covers
		sys += "\n\n" + summaryHeading + "\n\n" + sum.Text
	}
	req.Messages = append(req.Messages, openai.ChatCompletionMessage{Role: "system", Content: sys})
	shape.src = append(shape.src, -1)
	refs = append(refs, "")
	for i, m := range conv {
		if i < covers && i != shape.user {
			continue
		}
		om := openai.ChatCompletionMessage{Role: string(m.Role), Content: m.Content, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			om.ToolCalls = append(om.ToolCalls, openai.ToolCall{ID: tc.ID, Type: "function", Function: openai.FunctionCall{Name: tc.Name, Arguments: tc.Arguments}})
		}
		req.Messages = append(req.Messages, om)
		shape.src = append(shape.src, i)
		refs = append(refs, m.Ref)
	}
	return req, shape, refs
}

func fitOf(tokens int) fitting {
	return fitting{model: "llama3.1:8b", window: window.Window{Tokens: tokens, Source: window.SourceDefault}, reserve: DefaultAnswerReserve(tokens)}
}

func TestCurrentRound(t *testing.T) {
	conv := research(3, 100)
	cur, user := currentRound(conv)
	if cur != 5 || user != 0 {
		t.Errorf("currentRound = %d, %d; want 5 (the last call), 0", cur, user)
	}
	conv = append(conv, longhaul.Message{Role: longhaul.RoleAssistant, Content: "done"}, longhaul.Message{Role: longhaul.RoleUser, Content: "and?"})
	if cur, user := currentRound(conv); cur != 8 || user != 8 {
		t.Errorf("currentRound after a new question = %d, %d; want 8, 8", cur, user)
	}
}

func TestFitChatSendsWhatFits(t *testing.T) {
	req, shape, refs := chatOf(research(1, 2000), nil)
	before := window.Request(req)
	data, compact, err := fitChat(&req, shape, refs, fitOf(4096))
	if err != nil || compact != 0 || data.Changed() {
		t.Fatalf("fitChat = %+v, %d, %v; want it sent as built", data, compact, err)
	}
	if data.Used != before || data.Left != 4096-512-before {
		t.Errorf("used %d left %d; want %d and %d", data.Used, data.Left, before, 4096-512-before)
	}
}

func TestFitChatExcerptsOlderToolResults(t *testing.T) {
	// Three pages of 6,000 characters: about 4,000 tokens, over a 4,096
	// window's budget; the older become their reference and an excerpt,
	// the latest stays whole.
	req, shape, refs := chatOf(research(3, 6000), nil)
	f := fitOf(4096)
	data, compact, err := fitChat(&req, shape, refs, f)
	if err != nil || compact != 0 {
		t.Fatalf("fitChat: compact %d, err %v", compact, err)
	}
	if data.Excerpted == 0 || data.Cut != 0 {
		t.Errorf("excerpted %d, cut %d; want older results excerpted, none cut", data.Excerpted, data.Cut)
	}
	if got := window.Request(req); got > f.budget() || got != data.Used {
		t.Errorf("request is %d tokens, reported %d, budget %d", got, data.Used, f.budget())
	}
	first := req.Messages[3].Content
	if !strings.Contains(first, "stored whole as blob-call_a") || !strings.Contains(first, "FACT-call_a") {
		t.Errorf("the first page became %q; want its reference and its start", first)
	}
	if last := req.Messages[len(req.Messages)-1].Content; len(last) != 6000 {
		t.Errorf("the latest page was changed (%d characters)", len(last))
	}
}

func TestFitChatCutsTheCurrentRoundEvenly(t *testing.T) {
	// One round of two pages of 16,000 characters each cannot fit 4,096
	// tokens: both are cut to the same size, each keeping its start.
	conv := []longhaul.Message{
		{Role: longhaul.RoleUser, Content: "Compare the two pages."},
		{Role: longhaul.RoleAssistant, ToolCalls: []longhaul.ToolCall{{ID: "a", Name: "web_fetch", Arguments: "{}"}, {ID: "b", Name: "web_fetch", Arguments: "{}"}}},
		{Role: longhaul.RoleTool, ToolCallID: "a", Content: page("FIRST-FACT", 16000)},
		{Role: longhaul.RoleTool, ToolCallID: "b", Content: page("LAST-FACT", 16000)},
	}
	req, shape, refs := chatOf(conv, nil)
	f := fitOf(4096)
	data, compact, err := fitChat(&req, shape, refs, f)
	if err != nil || compact != 0 {
		t.Fatalf("fitChat: compact %d, err %v", compact, err)
	}
	if data.Cut != 2 || window.Request(req) > f.budget() {
		t.Fatalf("cut %d, %d tokens of %d; want both cut to fit", data.Cut, window.Request(req), f.budget())
	}
	a, b := req.Messages[3].Content, req.Messages[4].Content
	for _, s := range []string{a, b} {
		if !strings.Contains(s, "[Cut: ") {
			t.Errorf("a cut result has no note: %q", s[len(s)-120:])
		}
	}
	if !strings.HasPrefix(a, "FIRST-FACT") || !strings.HasPrefix(b, "LAST-FACT") {
		t.Error("a cut result lost its start")
	}
	if d := len(a) - len(b); d > 200 || d < -200 {
		t.Errorf("uneven cut: %d and %d characters", len(a), len(b))
	}
}

func TestFitChatAsksForCompaction(t *testing.T) {
	// A long chat: forty turns of a question and a long answer. The older
	// turns cannot fit; the call asks to compact them, up to the latest
	// question.
	var conv []longhaul.Message
	for i := range 40 {
		conv = append(conv,
			longhaul.Message{Role: longhaul.RoleUser, Content: "Tell me about the river, part " + string(rune('A'+i%26))},
			longhaul.Message{Role: longhaul.RoleAssistant, Content: page("Part", 600)})
	}
	conv = append(conv, longhaul.Message{Role: longhaul.RoleUser, Content: "Which was the 2026 one?"})
	req, shape, refs := chatOf(conv, nil)
	_, compact, err := fitChat(&req, shape, refs, fitOf(4096))
	if err != nil || compact != 80 {
		t.Fatalf("fitChat = compact %d, %v; want compaction up to 80", compact, err)
	}
	// With the summary, the call fits.
	req, shape, refs = chatOf(conv, &longhaul.Summary{Text: "The user asked about the river; tmdb:931285 is the 2026 one.", Covers: 80})
	data, compact, err := fitChat(&req, shape, refs, fitOf(4096))
	if err != nil || compact != 0 || data.Used > fitOf(4096).budget() {
		t.Fatalf("with the summary: %+v, compact %d, %v", data, compact, err)
	}
}

func TestFitChatTooLong(t *testing.T) {
	// The latest user message alone is over the window: no compaction can
	// help, and the error names the model, the window and the setting.
	conv := []longhaul.Message{{Role: longhaul.RoleUser, Content: page("x", 40000)}}
	req, shape, refs := chatOf(conv, nil)
	_, _, err := fitChat(&req, shape, refs, fitOf(4096))
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != longhaul.ErrTypeContextLength || !app.NonRetryable() {
		t.Fatalf("fitChat error = %v; want a non-retryable %s", err, longhaul.ErrTypeContextLength)
	}
	for _, want := range []string{"llama3.1:8b", "4096", "LONGHAUL_LLM_CONTEXT", "OLLAMA_CONTEXT_LENGTH"} {
		if !strings.Contains(app.Message(), want) {
			t.Errorf("the error %q does not name %s", app.Message(), want)
		}
	}
}

func TestFitStructuredCutsEvenly(t *testing.T) {
	req := openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{
		{Role: "system", Content: "Plan the work."},
		{Role: "user", Content: page("Q", 9000)},
		{Role: "user", Content: page("STEPS", 9000)},
	}}
	orig := req.Messages
	f := fitOf(4096)
	data, err := fitStructured(&req, f)
	if err != nil || data.Cut != 2 || window.Request(req) > f.budget() {
		t.Fatalf("fitStructured = %+v, %v; %d tokens of %d", data, err, window.Request(req), f.budget())
	}
	if orig[1].Content != page("Q", 9000) {
		t.Error("fitStructured changed the caller's messages")
	}
	if req.Messages[0].Content != "Plan the work." {
		t.Error("the system prompt was cut")
	}
}

func TestCutLevel(t *testing.T) {
	for _, c := range []struct {
		sizes      []int
		over, want int
	}{
		{[]int{100, 100}, 50, 75},
		{[]int{300, 100}, 100, 200},
		{[]int{300, 100}, 250, 75},
		{[]int{10, 10}, 50, 0},
		{[]int{1000}, 1, 999},
	} {
		got := cutLevel(c.sizes, c.over)
		shed := 0
		for _, s := range c.sizes {
			shed += max(s-got, 0)
		}
		if got != c.want || (got > 0 && shed < c.over) {
			t.Errorf("cutLevel(%v, %d) = %d (sheds %d); want %d", c.sizes, c.over, got, shed, c.want)
		}
	}
}

func TestDefaultAnswerReserve(t *testing.T) {
	for tokens, want := range map[int]int{1024: 256, 4096: 512, 8192: 1024, 131072: 4096} {
		if got := DefaultAnswerReserve(tokens); got != want {
			t.Errorf("DefaultAnswerReserve(%d) = %d; want %d", tokens, got, want)
		}
	}
}
