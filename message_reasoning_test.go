package longhaul

import "testing"

// TestStripToolCardsDropsShownReasoning: reasoning a client showed inside
// a past answer (Open WebUI's reasoning block, a <think> block at the
// start) comes back in its history; it is not the answer's text.
func TestStripToolCardsDropsShownReasoning(t *testing.T) {
	for in, want := range map[string]string{
		"<details type=\"reasoning\" done=\"true\" duration=\"2\">\n<summary>Thought for 2 seconds</summary>\n> a < b\n</details>\nB wins.": "B wins.",
		"<think>\na < b\n</think>\n\nB wins.": "B wins.",
		"B wins. <think>kept</think>":         "B wins. <think>kept</think>",
		"plain":                               "plain",
	} {
		if got := StripToolCards(in); got != want {
			t.Errorf("StripToolCards(%q) = %q, want %q", in, got, want)
		}
	}
	if MatchKey("<think>x</think>Same.") != MatchKey("Same.") {
		t.Error("a past answer with its shown reasoning does not match its text")
	}
}
