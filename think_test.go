package longhaul

import "testing"

func TestSplitThinking(t *testing.T) {
	full := WithThinking("first this", "then that")
	for _, tt := range []struct {
		in              string
		reasoning, text string
		thought         bool
	}{
		{"", "", "", false},
		{"<thi", "", "", false},
		{"plain", "", "plain", true},
		{ThinkOpen + "first", "first", "", false},
		{full, "first this", "then that", true},
		{WithThinking("", "only text"), "", "only text", true},
	} {
		r, x, ok := SplitThinking(tt.in)
		if r != tt.reasoning || x != tt.text || ok != tt.thought {
			t.Errorf("SplitThinking(%q) = %q, %q, %v; want %q, %q, %v", tt.in, r, x, ok, tt.reasoning, tt.text, tt.thought)
		}
	}
}
