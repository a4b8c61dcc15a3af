package wire

import (
	"regexp"
	"strings"
)

// A client's history carries back what the client showed of an answer,
// not only its text: Open WebUI keeps the content Longhaul streamed as the
// text of the answer's stored output and rebuilds each past assistant
// message from that output (v0.11.0, backend/open_webui/utils/
// middleware.py:2076-2105, utils/misc.py:257-472, convert_output_to_messages:
// a "message" item's output_text parts joined as the message's content), so
// the tool cards chatapi wrote into the stream (<details type="tool_calls">
// blocks) come back in the content, verbatim. Reasoning shown inside an
// answer comes back too: Open WebUI's reasoning block (<details
// type="reasoning">) and, for a provider it sends it back to as tags, a
// <think> block at the start (utils/misc.py:296-303, 431-435). Neither is
// the answer: they are taken out here, at the edge, so the domain's
// messages hold the answer's text alone.

// shownCards matches the tool cards a client shows in an answer: Longhaul's
// (chatapi's toolCard) and Open WebUI's own.
var shownCards = regexp.MustCompile(`(?s)<details type="tool_calls"[^>]*>.*?</details>\n?`)

// shownThoughts matches the reasoning a client shows inside an answer:
// Open WebUI's reasoning blocks and a <think> block at the start.
var shownThoughts = regexp.MustCompile(`(?s)<details type="reasoning"[^>]*>.*?</details>\n?|\A\s*<think>.*?</think>\s*`)

// AnswerText is the text of a past answer as a client sends it back: its
// content less the tool cards and shown reasoning (see above), trimmed
// when it had any. Content without them is returned as it is.
func AnswerText(s string) string {
	if strings.Contains(s, `<details type="reasoning"`) || strings.Contains(s, "<think>") {
		s = strings.TrimSpace(shownThoughts.ReplaceAllString(s, ""))
	}
	if !strings.Contains(s, `<details type="tool_calls"`) {
		return s
	}
	return strings.TrimSpace(shownCards.ReplaceAllString(s, ""))
}
