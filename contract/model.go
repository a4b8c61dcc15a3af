package contract

import (
	"github.com/longhaul-dev/longhaul"
)

// Caller names who makes a structured model call (a plan, a review, the
// dispatch, memory extraction, translation, compaction): the agent, the
// user it runs for and the model. The structured requests embed it without
// a JSON tag, so its fields are the request's own in the payload and every
// recorded request decodes into the type that embeds it.
type Caller struct {
	Agent string `json:"agent"`
	// Principal is the run's user, whose budgets the call's spend counts
	// against (nil on a call scheduled before it existed: "anonymous").
	Principal *longhaul.User `json:"principal,omitempty"`
	// Model is the model of the call's role; empty: the worker's default.
	Model string `json:"model,omitempty"`
}

// ModelRequest is one call to the model.
type ModelRequest struct {
	// Call names this call within the run (e.g. "turn-2"); events carry it.
	Call string `json:"call"`
	// Principal is the run's user: the prompt leaves out the fragments of
	// the skills their allow: rules hide. Without it (a call scheduled
	// before it existed) the user has no role or groups.
	Principal *longhaul.User `json:"principal,omitempty"`
	// Progress, for a child run's call, is the line to show on the
	// parent's call as the call starts.
	Progress *Progress `json:"progress,omitempty"`
	// Agent is the agent whose prompt leads the conversation.
	Agent string `json:"agent"`
	// Model overrides the agent's model.
	Model    string             `json:"model,omitempty"`
	Messages []longhaul.Message `json:"messages"`
	// Tools are the names of the tools offered to the model.
	Tools []string `json:"tools,omitempty"`
	// ClientTools are offered too: the client's own, which it runs (their
	// calls get ids from ClientCallID).
	ClientTools []longhaul.ToolSpec   `json:"client_tools,omitempty"`
	Options     longhaul.ModelOptions `json:"options,omitempty"`
	// NoPrompt leaves the agent's prompt out (background tasks).
	NoPrompt bool `json:"no_prompt,omitempty"`
	// Final marks the call after an agent used all its turns: the
	// max-turns prompt follows the conversation, so the model answers with
	// what it has.
	Final bool `json:"final,omitempty"`
	// Skill, when set, narrows the prompt to the agent's base prompt and
	// this skill's fragment: a skill's own loop.
	Skill string `json:"skill,omitempty"`
	// Instructions are added to the system prompt: a plan step's task and
	// what earlier steps found.
	Instructions string `json:"instructions,omitempty"`
	// Publish streams the answer's text to the API as ephemeral deltas
	// (over NATS) while it arrives.
	Publish bool `json:"publish,omitempty"`
	// After is the offset of the run's last durable event when the call
	// was scheduled: its deltas belong after it.
	After int64 `json:"after,omitempty"`
	// ConvRef, when set, is the stored start of the conversation (a claim
	// check): the call reads it from the blob store and Messages follow it.
	ConvRef string `json:"conv_ref,omitempty"`
	// NextCall is the sequence number the first tool call of the answer
	// will have (see ToolRequest.Seq): a call the model gave no id, or an
	// id the conversation already has, is named after it.
	NextCall int64 `json:"next_call,omitempty"`
	// Store asks the call to store the whole conversation with its answer
	// and return the reference, so the next call sends only what follows.
	Store bool `json:"store,omitempty"`
	// Documents says the run has vector stores to search. Without them the
	// prompt leaves out the fragments of the skills whose only tool is
	// document_search (the documents skill), as the run is not offered it.
	Documents bool `json:"documents,omitempty"`
	// AttemptBase numbers the call's attempts on from the attempts of the
	// models that failed before this one (a fallback): the streamed text of
	// attempt AttemptBase+n replaces theirs, as a retry's does.
	AttemptBase int `json:"attempt_base,omitempty"`
	// Fallback says another model answers when this one fails: an endpoint
	// that cools down after repeated failures (activities.Breaker) is
	// skipped at once rather than tried.
	Fallback bool `json:"fallback,omitempty"`
	// Window is the agent's own context window (context: in its file),
	// zero for the model's (see activities/fit.go).
	Window int `json:"window,omitempty"`
	// Findings are material for the answer (a plan's step results), sent
	// after the system prompt, one message each: what a window too small
	// for all of them cuts first, each in turn (see activities/fit.go).
	Findings []string `json:"findings,omitempty"`
	// Summary, when set, stands for the conversation's first
	// Summary.Covers messages, which are not sent (see activities.Compact).
	Summary *longhaul.Summary `json:"summary,omitempty"`
}

// ModelResponse is the model's complete answer: the authoritative message,
// whatever was streamed before.
type ModelResponse struct {
	Message longhaul.Message `json:"message"`
	// Reasoning is the model's thought before its answer, in whichever
	// form its server sent it (reasoning, reasoning_content, a leading
	// <think> block); Message.Reasoning holds it too.
	Reasoning    string         `json:"reasoning,omitempty"`
	FinishReason string         `json:"finish_reason"`
	Usage        longhaul.Usage `json:"usage"`
	Model        string         `json:"model"`
	// Targets names what each tool call acts on (a host, a zone, a path),
	// by tool call id, for progress lines and the Temporal UI.
	Targets map[string]string `json:"targets,omitempty"`
	// ConvRef is the stored conversation including this answer, when the
	// request asked for Store and the worker has a store.
	ConvRef string `json:"conv_ref,omitempty"`
	// Attempt is the activity attempt that produced the answer.
	Attempt int `json:"attempt,omitempty"`
	// Context says how the request was made to fit the model's window,
	// when anything was shortened (see activities/fit.go).
	Context *longhaul.ContextData `json:"context,omitempty"`
	// Compact, when positive, says the model was not called: the
	// conversation's older turns, up to this index, must be compacted
	// first (activities.Compact), and the call made again with the summary.
	Compact int `json:"compact,omitempty"`
}
