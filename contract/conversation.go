package contract

import (
	"time"

	"github.com/longhaul-dev/longhaul"
)

// RecordTurnRequest is a finished chat turn to store.
type RecordTurnRequest struct {
	User   string `json:"user"`
	ChatID string `json:"chat_id"`
	Turn   int    `json:"turn"`
	Agent  string `json:"agent"`
	Status string `json:"status"`
	// Title is the start of the turn's user message (the workflow's
	// turnTitle), which titles the chat.
	Title string `json:"title,omitempty"`
	// Messages are what the run added to the conversation: assistant
	// messages with their tool calls, tool results, the final answer.
	Messages []longhaul.Message `json:"messages"`
	// FirstSeq numbers Messages[0] among the turn's messages: a turn that
	// continued as new stores its messages in parts.
	FirstSeq int `json:"first_seq,omitempty"`
	// Calls is what became of these messages' tool calls, by call id
	// (the workflow's callRecords of the run's tool events).
	Calls      map[string]CallRecord `json:"calls,omitempty"`
	Usage      longhaul.Usage        `json:"usage"`
	StartedAt  time.Time             `json:"started_at"`
	FinishedAt time.Time             `json:"finished_at"`
	// VisibleKey and AnswerKey are the longhaul.MatchKey of every assistant text
	// the client was shown, in order, joined by newlines, and of the final
	// answer: what later requests are matched against. A part of a turn
	// that continued as new has neither.
	VisibleKey string `json:"visible_key,omitempty"`
	AnswerKey  string `json:"answer_key,omitempty"`
	// Summary is the chat's summary of its earlier messages when the
	// turn's model calls needed one (activities.Compact): kept with the
	// turn, so the next turn reuses it instead of compacting again.
	Summary *longhaul.Summary `json:"summary,omitempty"`
}

// CallRecord is what became of one tool call: its result's reference and
// flags, and its events.
type CallRecord struct {
	Ref       string       `json:"ref,omitempty"`
	Truncated bool         `json:"truncated,omitempty"`
	Error     bool         `json:"error,omitempty"`
	Status    []CallStatus `json:"status,omitempty"`
}

// RestoreRequest is a chat turn's history as the client sent it.
type RestoreRequest struct {
	User     string             `json:"user"`
	ChatID   string             `json:"chat_id"`
	Messages []longhaul.Message `json:"messages"`
}

// RestoreResult is the history the model should see instead.
type RestoreResult struct {
	// Turns is how many earlier answers were replaced by their stored
	// timelines.
	Turns int `json:"turns"`
	// Replaced holds those timelines, by the index of the message each
	// replaces: only what restoring adds, so the history the workflow
	// already holds is not written into its history a second time.
	Replaced []Replacement `json:"replaced,omitempty"`
	// Messages is the whole new history as the first runs that restored
	// turns received it; Apply still reads it from their histories.
	Messages []longhaul.Message `json:"messages,omitempty"`
	// Cut is how many older tool results were shortened to fit the budget.
	Cut int `json:"cut,omitempty"`
	// Summary is the summary the chat's latest turns kept of its earlier
	// messages (see RecordTurnRequest.Summary), for the workflow to reuse
	// when its key matches the restored history.
	Summary *longhaul.Summary `json:"summary,omitempty"`
}

// Replacement is a stored turn's timeline, standing in for the answer at
// Index of the history.
type Replacement struct {
	Index    int                `json:"index"`
	Messages []longhaul.Message `json:"messages"`
}

// Apply returns msgs with the restored timelines in place of the answers
// they replace (msgs itself when nothing was restored).
func (r RestoreResult) Apply(msgs []longhaul.Message) []longhaul.Message {
	if r.Messages != nil {
		return r.Messages
	}
	if len(r.Replaced) == 0 {
		return msgs
	}
	out := make([]longhaul.Message, 0, len(msgs))
	next := 0
	for i, m := range msgs {
		if next < len(r.Replaced) && r.Replaced[next].Index == i {
			out = append(out, r.Replaced[next].Messages...)
			next++
			continue
		}
		out = append(out, m)
	}
	return out
}
