package longhaul

import (
	"regexp"
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
	Role       Role       `json:"role"`
	Content    string     `json:"content,omitempty"`
	Name       string     `json:"name,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
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
}

// Add returns the sum of u and o.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		PromptTokens:     u.PromptTokens + o.PromptTokens,
		CompletionTokens: u.CompletionTokens + o.CompletionTokens,
		TotalTokens:      u.TotalTokens + o.TotalTokens,
	}
}

// User is the person a request is made for, as Open WebUI reports it.
type User struct {
	ID    string `json:"id,omitempty"`
	Email string `json:"email,omitempty"`
	Name  string `json:"name,omitempty"`
	Role  string `json:"role,omitempty"`
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

// ModelOptions are per-request sampling settings passed to every model call.
type ModelOptions struct {
	Temperature *float32 `json:"temperature,omitempty"`
	TopP        *float32 `json:"top_p,omitempty"`
	MaxTokens   int      `json:"max_tokens,omitempty"`
	Stop        []string `json:"stop,omitempty"`
	Seed        *int     `json:"seed,omitempty"`
}

// toolCards matches the Open WebUI tool cards Longhaul writes into answers
// (and Open WebUI's own), which come back in later requests' history.
var toolCards = regexp.MustCompile(`(?s)<details type="tool_calls"[^>]*>.*?</details>\n?`)

// StripToolCards removes tool cards (<details type="tool_calls"> blocks)
// from an assistant message's text.
func StripToolCards(s string) string {
	if !strings.Contains(s, `<details type="tool_calls"`) {
		return s
	}
	return strings.TrimSpace(toolCards.ReplaceAllString(s, ""))
}
