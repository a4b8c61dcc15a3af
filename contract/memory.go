package contract

import (
	"github.com/longhaul-dev/longhaul"
)

// RecallRequest asks for the user's memories closest to Query.
type RecallRequest struct {
	User  string `json:"user"`
	Query string `json:"query"`
	// All returns the closest memories whatever their score (a plan's
	// memory step, which the step review judges); otherwise only those at
	// or above the recall threshold.
	All bool `json:"all,omitempty"`
}

// RecallResponse lists the memories found, most similar first.
type RecallResponse struct {
	Memories []longhaul.MemoryItem `json:"memories"`
	// Note is the system message that gives the turn its memories: the
	// recall prompt and one line per memory; empty without memories.
	Note string `json:"note,omitempty"`
}

// ExtractRequest asks for the lasting facts about the user in a turn.
type ExtractRequest struct {
	Caller
	// Messages are the turn: the user's message and the answer (earlier
	// turns may come first, for context).
	Messages []longhaul.Message `json:"messages"`
}

// ExtractResponse lists the facts found, each one sentence.
type ExtractResponse struct {
	Facts []string       `json:"facts"`
	Usage longhaul.Usage `json:"usage"`
}

// SaveRequest saves facts as the user's memories, learned in Chat.
type SaveRequest struct {
	User  string   `json:"user"`
	Chat  string   `json:"chat,omitempty"`
	Facts []string `json:"facts"`
}

// SaveResponse lists what was saved or updated.
type SaveResponse struct {
	Memories []longhaul.MemoryItem `json:"memories"`
}
