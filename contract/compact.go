package contract

import (
	"github.com/longhaul-dev/longhaul"
)

// CompactRequest asks for the conversation's older turns to be summarized:
// messages Previous.Covers (0 without a summary) to Upto, folded into
// Previous's text.
type CompactRequest struct {
	Call string `json:"call"`
	// Caller's Model is the compact role's model.
	Caller
	Messages []longhaul.Message `json:"messages,omitempty"`
	// ConvRef is the stored start of the conversation; Messages follow it.
	ConvRef  string            `json:"conv_ref,omitempty"`
	Previous *longhaul.Summary `json:"previous,omitempty"`
	Upto     int               `json:"upto"`
	// Window is the agent's own context window (context:), zero for the
	// model's.
	Window int `json:"window,omitempty"`
}

// CompactResponse is the new summary and what writing it cost.
type CompactResponse struct {
	Summary longhaul.Summary `json:"summary"`
	Usage   longhaul.Usage   `json:"usage"`
	// Calls is how many model calls it took: one per stretch of the
	// conversation that fits the compact model's window.
	Calls int `json:"calls"`
}
