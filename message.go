package longhaul

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
)

// Role is the author of a message, as in the OpenAI chat API.
type Role string

// The message roles.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one entry of a conversation. An assistant message may carry
// ToolCalls; a tool message answers one of them by ToolCallID.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content,omitempty"`
	// Parts, when set, are the message's content parts in order (text and
	// images); Content then holds their text alone, for summaries, memory
	// and matching.
	Parts      []Part     `json:"parts,omitempty"`
	Name       string     `json:"name,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	// Ref, on a tool message whose content is an excerpt, names the whole
	// output in the claim-check store.
	Ref string `json:"ref,omitempty"`
	// Reasoning, on an assistant message, is the model's thinking before
	// it: never part of Content. A tool loop's next call sends it back in
	// the field the server reads (activities' buildMessages).
	Reasoning string `json:"reasoning,omitempty"`
}

// Content part types.
const (
	PartText  = "text"
	PartImage = "image_url"
)

// Part is one content part of a message: text, or an image by URL. A large
// inline image (a data: URL) travels by reference: Ref names it in the
// claim-check store and URL is empty until the model call reads it back.
type Part struct {
	Type   string `json:"type"`
	Text   string `json:"text,omitempty"`
	URL    string `json:"url,omitempty"`
	Detail string `json:"detail,omitempty"`
	Ref    string `json:"ref,omitempty"`
}

// ToolSpec is a function tool a client declares in its request: offered to
// the model beside the agent's own tools, and run by the client, which
// sends the result back.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      bool            `json:"strict,omitempty"`
}

// Response format types.
const (
	FormatText       = "text"
	FormatJSONObject = "json_object"
	FormatJSONSchema = "json_schema"
)

// ResponseFormat is the shape a client asks the answer to have: any JSON
// object, or one matching Schema.
type ResponseFormat struct {
	Type   string          `json:"type"`
	Name   string          `json:"name,omitempty"`
	Schema json.RawMessage `json:"schema,omitempty"`
	Strict bool            `json:"strict,omitempty"`
}

// ToolCall is a model's request to run one tool with JSON arguments.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Usage counts the tokens of one or more model calls.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	// ReasoningTokens are the part of CompletionTokens a thinking model
	// spent thinking, as the server reported them
	// (completion_tokens_details.reasoning_tokens); 0 when it did not.
	ReasoningTokens int `json:"reasoning_tokens,omitempty"`
}

// Add returns the sum of u and o.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		PromptTokens:     u.PromptTokens + o.PromptTokens,
		CompletionTokens: u.CompletionTokens + o.CompletionTokens,
		TotalTokens:      u.TotalTokens + o.TotalTokens,
		ReasoningTokens:  u.ReasoningTokens + o.ReasoningTokens,
	}
}

// ModelUsage is the usage of one model within a run.
type ModelUsage struct {
	// Model is the model reference ("llama3.1:8b", "remote:gpt-4o").
	Model string `json:"model"`
	Usage
}

// UsageData is the payload of the usage event: the run's usage, in
// OpenAI's usage fields, and the same per model.
type UsageData struct {
	Usage
	Models []ModelUsage `json:"models,omitempty"`
}

// Translation is a user's request as an agent with language: auto works on
// it: detected in Language and translated into Into.
type Translation struct {
	// Language is the user's language, an ISO 639-1 code ("sv"), and
	// LanguageName its English name ("Swedish").
	Language     string `json:"language"`
	LanguageName string `json:"language_name,omitempty"`
	// Into is the language the agent works in (reason_in).
	Into string `json:"into"`
	// Original is the user's message, Text the same in Into.
	Original string `json:"original"`
	Text     string `json:"text"`
}

// User is the person a request is made for, as Open WebUI reports it.
type User struct {
	ID    string `json:"id,omitempty"`
	Email string `json:"email,omitempty"`
	Name  string `json:"name,omitempty"`
	Role  string `json:"role,omitempty"`
	// Groups are the groups the user belongs to, from the header the
	// operator names (LONGHAUL_USER_GROUPS_HEADER); with Role, what allow:
	// rules judge (internal/access).
	Groups []string `json:"groups,omitempty"`
	// Principal is who holds the run, as the API resolved it from the
	// request's credential (see internal/identity).
	Principal string `json:"principal,omitempty"`
}

// Key is the value that scopes a user's runs and memory: the principal; for
// runs started before principals existed, the id, else the e-mail, else
// "anonymous".
func (u User) Key() string {
	switch {
	case u.Principal != "":
		return u.Principal
	case u.ID != "":
		return u.ID
	case u.Email != "":
		return u.Email
	}
	return "anonymous"
}

// ModelOptions are a request's settings passed to the model calls that
// answer it (not to the planner's or the supervisors').
type ModelOptions struct {
	Temperature         *float32 `json:"temperature,omitempty"`
	TopP                *float32 `json:"top_p,omitempty"`
	MaxTokens           int      `json:"max_tokens,omitempty"`
	MaxCompletionTokens int      `json:"max_completion_tokens,omitempty"`
	Stop                []string `json:"stop,omitempty"`
	Seed                *int     `json:"seed,omitempty"`
	Logprobs            bool     `json:"logprobs,omitempty"`
	TopLogprobs         int      `json:"top_logprobs,omitempty"`
	ReasoningEffort     string   `json:"reasoning_effort,omitempty"`
	// ToolChoice is the client's tool_choice as sent ("auto", "none",
	// "required" or a named function). A choice that forces a call applies
	// to the request's first model call only, so the tool loop can end.
	ToolChoice        json.RawMessage `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls,omitempty"`
	// ResponseFormat asks the answer to be JSON (see ResponseFormat).
	ResponseFormat *ResponseFormat `json:"response_format,omitempty"`
	// Truncation is the Responses API's truncation: "disabled" fails a
	// request whose input is over the model's window instead of compacting
	// it (the tool loop's own later calls are still fitted).
	Truncation string `json:"truncation,omitempty"`
}

// TruncationDisabled is the Truncation that refuses to compact.
const TruncationDisabled = "disabled"

// MatchKey is what an answer is recognised by in a later request's history:
// its text, whitespace normalised, hashed. Empty text has no key. The
// workflow keys a recorded turn with it and the conversation store's
// restore matches the client's history by it. The text is the answer's
// alone: what a client showed beside it (tool cards, reasoning) is taken
// out at the edge that reads the client's history (internal/wire).
func MatchKey(text string) string {
	s := strings.Join(strings.Fields(text), " ")
	if s == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// LastUserText is the text of the last message of msgs with role user, or
// "" when there is none.
func LastUserText(msgs []Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == RoleUser {
			return msgs[i].Content
		}
	}
	return ""
}
