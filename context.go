package longhaul

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// Summary stands for the start of a conversation that no longer fits the
// model's window: the compact role's summary of its first Covers messages,
// which model calls send in their place.
type Summary struct {
	Text string `json:"text"`
	// Covers is how many messages of the conversation, from its start,
	// the summary stands for.
	Covers int `json:"covers"`
	// Key recognises the covered messages in a later turn's history (see
	// SummaryKey), so the chat's next request reuses the summary.
	Key string `json:"key,omitempty"`
	// Model is the model that wrote it, and Tokens its estimated size.
	Model  string `json:"model,omitempty"`
	Tokens int    `json:"tokens,omitempty"`
}

// ContextData is the payload of the context event: how a model call was
// made to fit its model's window, and what it used of it.
type ContextData struct {
	Call  string `json:"call,omitempty"`
	Model string `json:"model"`
	// Window is the model's window in tokens and WindowSource where it
	// came from (a setting, the endpoint, the default).
	Window       int    `json:"window"`
	WindowSource string `json:"window_source,omitempty"`
	// Used is the request's estimated prompt tokens as sent, Reserved what
	// was kept free for the answer, and Left what remained of the window.
	Used     int `json:"used"`
	Reserved int `json:"reserved"`
	Left     int `json:"left"`
	// Excerpted counts older tool results sent as their reference and an
	// excerpt; Cut the latest tool results cut to what was left;
	// Summarized the messages a summary stood for.
	Excerpted  int `json:"excerpted,omitempty"`
	Cut        int `json:"cut,omitempty"`
	Summarized int `json:"summarized,omitempty"`
	// Compacted is set on the event of a compaction: the compact role's
	// model wrote (or extended) the summary, in SummaryTokens tokens.
	Compacted     bool `json:"compacted,omitempty"`
	SummaryTokens int  `json:"summary_tokens,omitempty"`
}

// Changed reports whether the request was changed to fit: anything
// excerpted, cut or summarized.
func (d ContextData) Changed() bool {
	return d.Excerpted > 0 || d.Cut > 0 || d.Summarized > 0 || d.Compacted
}

// SummaryKey is what a summary's covered messages are recognised by in a
// later turn: their number, their roles in order and the users' words
// (whitespace normalised), hashed. A chat's next request carries the same
// history with the earlier answers restored to their timelines, so the same
// covered messages give the same key; an edited or branched history gives
// another, and the summary is not reused.
func SummaryKey(msgs []Message) string { return SummaryKeyBy(msgs, MatchKey) }

// SummaryKeyBy is SummaryKey with the users' words keyed by textKey
// instead of MatchKey: a workflow replaying a run that keyed them another
// way keys them as it did.
func SummaryKeyBy(msgs []Message, textKey func(string) string) string {
	h := sha256.New()
	h.Write([]byte(strconv.Itoa(len(msgs))))
	for _, m := range msgs {
		h.Write([]byte{0})
		h.Write([]byte(m.Role))
		if m.Role == RoleUser {
			h.Write([]byte{0})
			h.Write([]byte(textKey(m.Content)))
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}
