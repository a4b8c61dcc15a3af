package wire

import "testing"

// TestAnswerText: what a client showed of a past answer beside its text
// (tool cards, Open WebUI's reasoning block, a <think> block at the start)
// comes back in its history and is taken out; the text stays as it was.
func TestAnswerText(t *testing.T) {
	card := "\n<details type=\"tool_calls\" done=\"true\" id=\"c1\" name=\"current_time\" arguments=\"&#34;{}&#34;\" result=\"&#34;03:04&#34;\" files=\"\" embeds=\"\">\n<summary>Tool Executed</summary>\n</details>\n"
	for in, want := range map[string]string{
		"<details type=\"reasoning\" done=\"true\" duration=\"2\">\n<summary>Thought for 2 seconds</summary>\n> a < b\n</details>\nB wins.": "B wins.",
		"<think>\na < b\n</think>\n\nB wins.": "B wins.",
		"B wins. <think>kept</think>":         "B wins. <think>kept</think>",
		"Checking." + card + "It is 03:04.":   "Checking.\nIt is 03:04.",
		card + card + "It is 03:04.":          "It is 03:04.",
		"plain  text ":                        "plain  text ",
	} {
		if got := AnswerText(in); got != want {
			t.Errorf("AnswerText(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestDomainMessagesTakeCardsOutOfAnswersOnly: an assistant message loses
// its cards; a user's text is the user's, whatever it holds.
func TestDomainMessagesTakeCardsOutOfAnswersOnly(t *testing.T) {
	shown := "<think>x</think>It is 03:04."
	got := DomainMessages([]ChatMessage{
		{Role: "user", Content: MessageContent{Text: shown}},
		{Role: "assistant", Content: MessageContent{Text: shown}},
	})
	if got[0].Content != shown || got[1].Content != "It is 03:04." {
		t.Fatalf("contents %q, %q", got[0].Content, got[1].Content)
	}
}
