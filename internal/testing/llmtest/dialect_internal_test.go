package llmtest

import "testing"

func TestTokenPrefix(t *testing.T) {
	for _, tt := range []struct {
		in   string
		n    int
		want string
		used int
	}{
		{"one two three", 2, "one two", 2},
		{"one two", 5, "one two", 2},
		{"Hello, world!", 2, "Hello,", 2},
		{"  lead", 0, "", 0},
		{"<think>\nhm", 3, "<think>", 3},
		{"", 3, "", 0},
	} {
		got, used := tokenPrefix(tt.in, tt.n)
		if got != tt.want || used != tt.used {
			t.Errorf("tokenPrefix(%q, %d) = %q, %d; want %q, %d", tt.in, tt.n, got, used, tt.want, tt.used)
		}
	}
}

func TestLimitOutput(t *testing.T) {
	calls := []ToolCall{{Name: "f", Arguments: "{}"}, {Name: "g", Arguments: "{}"}}
	// Each call costs 3 tokens (name, "{", "}").
	for _, tt := range []struct {
		limit              int
		reasoning, content string
		calls              int
		cut                bool
	}{
		{0, "a b", "c", 2, false},
		{1, "a", "", 0, true},
		{3, "a b", "c", 0, true},
		{6, "a b", "c", 1, true},
		{9, "a b", "c", 2, false},
	} {
		r, c, cs, cut := limitOutput("a b", "c", calls, tt.limit)
		if r != tt.reasoning || c != tt.content || len(cs) != tt.calls || cut != tt.cut {
			t.Errorf("limit %d: %q %q %d calls cut %v; want %q %q %d %v", tt.limit, r, c, len(cs), cut, tt.reasoning, tt.content, tt.calls, tt.cut)
		}
	}
}

func TestOllamaCallID(t *testing.T) {
	if got := ollamaCallID(1); got != "call_00000001" {
		t.Errorf("ollamaCallID(1) = %q", got)
	}
	if got := ollamaCallID(36); got != "call_00000010" {
		t.Errorf("ollamaCallID(36) = %q", got)
	}
}
