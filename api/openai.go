package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"strings"
	"unicode"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/textcut"
)

// This file holds the OpenAI wire types and the pure conversions between them
// and Longhaul's domain types. It does not import fiber, so it is tested
// without a server.

// ChatRequest is the body of POST /v1/chat/completions. Fields Longhaul does
// not use are accepted and ignored, as clients send many.
type ChatRequest struct {
	Model               string          `json:"model"`
	Messages            []ChatMessage   `json:"messages"`
	Stream              bool            `json:"stream"`
	StreamOptions       *StreamOptions  `json:"stream_options,omitempty"`
	Temperature         *float32        `json:"temperature,omitempty"`
	TopP                *float32        `json:"top_p,omitempty"`
	MaxTokens           int             `json:"max_tokens,omitempty"`
	MaxCompletionTokens int             `json:"max_completion_tokens,omitempty"`
	Stop                StringList      `json:"stop,omitempty"`
	Seed                *int            `json:"seed,omitempty"`
	N                   *int            `json:"n,omitempty"`
	User                string          `json:"user,omitempty"`
	Metadata            json.RawMessage `json:"metadata,omitempty"`
}

// StreamOptions are the options of a streamed request.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// StringList is a JSON string or array of strings (as `stop` may be).
type StringList []string

// UnmarshalJSON accepts a string, an array of strings or null.
func (s *StringList) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*s = nil
		return nil
	}
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*s = StringList{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return errors.New("must be a string or an array of strings")
	}
	*s = many
	return nil
}

// ChatMessage is one message of a request: content is a string or an array
// of content parts, of which the text parts are kept.
type ChatMessage struct {
	Role       string         `json:"role"`
	Content    MessageContent `json:"content"`
	Name       string         `json:"name,omitempty"`
	ToolCalls  []WireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

// MessageContent is a message's text, decoded from a string or from content
// parts.
type MessageContent string

// UnmarshalJSON accepts a string, null, or an array of content parts.
func (m *MessageContent) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*m = ""
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*m = MessageContent(s)
		return nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(b, &parts); err != nil {
		return errors.New("must be a string or an array of content parts")
	}
	var texts []string
	for _, p := range parts {
		if p.Type == "text" {
			texts = append(texts, p.Text)
		}
	}
	*m = MessageContent(strings.Join(texts, "\n"))
	return nil
}

// WireToolCall is a tool call in OpenAI's wire format.
type WireToolCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// ChatCompletion is a non-streamed answer.
type ChatCompletion struct {
	ID      string           `json:"id"`
	Object  string           `json:"object"`
	Created int64            `json:"created"`
	Model   string           `json:"model"`
	Choices []CompletionItem `json:"choices"`
	Usage   *WireUsage       `json:"usage,omitempty"`
}

// CompletionItem is one choice of a ChatCompletion.
type CompletionItem struct {
	Index        int           `json:"index"`
	Message      ResponseEntry `json:"message"`
	FinishReason string        `json:"finish_reason"`
}

// ResponseEntry is the assistant message of a ChatCompletion.
type ResponseEntry struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// ChatChunk is one streamed frame (object chat.completion.chunk).
type ChatChunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []ChunkChoice `json:"choices"`
	Usage   *WireUsage    `json:"usage,omitempty"`
}

// ChunkChoice is the choice of a ChatChunk. FinishReason is null until the
// last content chunk.
type ChunkChoice struct {
	Index        int     `json:"index"`
	Delta        Delta   `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

// Delta is the new part of the message in a ChatChunk.
type Delta struct {
	Role    string `json:"role,omitempty"`
	Content string `json:"content,omitempty"`
}

// WireUsage is token usage in OpenAI's format.
type WireUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func wireUsage(u longhaul.Usage) *WireUsage {
	return &WireUsage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
}

// StatusFrame is Open WebUI's status event, sent in the stream in place of a
// chunk: {"event":{"type":"status","data":{"description":…,"done":…}}}.
type StatusFrame struct {
	Event StatusEvent `json:"event"`
}

// StatusEvent is the event of a StatusFrame.
type StatusEvent struct {
	Type string     `json:"type"`
	Data StatusData `json:"data"`
}

// StatusData describes progress for Open WebUI's status line.
type StatusData struct {
	Description string `json:"description"`
	Done        bool   `json:"done"`
	Hidden      bool   `json:"hidden,omitempty"`
}

func statusFrame(description string, done bool) StatusFrame {
	return StatusFrame{Event: StatusEvent{Type: "status", Data: StatusData{Description: description, Done: done}}}
}

// ModelList is the answer of GET /v1/models.
type ModelList struct {
	Object string      `json:"object"`
	Data   []ModelInfo `json:"data"`
}

// ModelInfo is one entry of ModelList.
type ModelInfo struct {
	ID          string `json:"id"`
	Object      string `json:"object"`
	Created     int64  `json:"created"`
	OwnedBy     string `json:"owned_by"`
	Description string `json:"description,omitempty"`
}

// ErrorBody is OpenAI's error envelope.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the error inside ErrorBody.
type ErrorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    string  `json:"code,omitempty"`
}

// validRoles are the message roles a request may carry.
var validRoles = map[string]longhaul.Role{
	"system":    longhaul.RoleSystem,
	"developer": longhaul.RoleSystem,
	"user":      longhaul.RoleUser,
	"assistant": longhaul.RoleAssistant,
	"tool":      longhaul.RoleTool,
}

// validate reports the first problem with a request, as a client would want
// it named.
func (r *ChatRequest) validate() error {
	if r.Model == "" {
		return errors.New("model: required")
	}
	if len(r.Messages) == 0 {
		return errors.New("messages: must not be empty")
	}
	users := 0
	for i, m := range r.Messages {
		role, ok := validRoles[m.Role]
		if !ok {
			return fmt.Errorf("messages[%d].role: %q is not one of system, developer, user, assistant, tool", i, m.Role)
		}
		if role == longhaul.RoleUser {
			users++
		}
		if role == longhaul.RoleTool && m.ToolCallID == "" {
			return fmt.Errorf("messages[%d].tool_call_id: required for a tool message", i)
		}
	}
	if users == 0 {
		return errors.New("messages: at least one user message is required")
	}
	if r.N != nil && *r.N != 1 {
		return errors.New("n: only 1 is supported")
	}
	if r.MaxTokens < 0 || r.MaxCompletionTokens < 0 {
		return errors.New("max_tokens: must not be negative")
	}
	if r.Temperature != nil && (*r.Temperature < 0 || *r.Temperature > 2) {
		return errors.New("temperature: must be between 0 and 2")
	}
	if r.TopP != nil && (*r.TopP < 0 || *r.TopP > 1) {
		return errors.New("top_p: must be between 0 and 1")
	}
	return nil
}

// turn is the number of user messages: the same for a retried request, one
// more for the chat's next question.
func (r *ChatRequest) turn() int {
	n := 0
	for _, m := range r.Messages {
		if m.Role == "user" {
			n++
		}
	}
	return n
}

// isBackgroundTask reports whether the request is one of Open WebUI's
// housekeeping prompts (title, tags, follow-ups, search queries,
// autocompletion), which all start the last user message with "### Task:".
func (r *ChatRequest) isBackgroundTask() bool {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return strings.HasPrefix(strings.TrimSpace(string(r.Messages[i].Content)), "### Task:")
		}
	}
	return false
}

// options are the sampling settings of the request.
func (r *ChatRequest) options() longhaul.ModelOptions {
	maxTokens := r.MaxTokens
	if r.MaxCompletionTokens > 0 {
		maxTokens = r.MaxCompletionTokens
	}
	return longhaul.ModelOptions{Temperature: r.Temperature, TopP: r.TopP, MaxTokens: maxTokens, Stop: r.Stop, Seed: r.Seed}
}

// stripToolCards removes tool cards from an assistant message's text.
func stripToolCards(s string) string { return longhaul.StripToolCards(s) }

// domainMessages converts the request's messages, stripping tool cards from
// assistant messages.
func domainMessages(in []ChatMessage) []longhaul.Message {
	out := make([]longhaul.Message, 0, len(in))
	for _, m := range in {
		dm := longhaul.Message{
			Role:       validRoles[m.Role],
			Content:    string(m.Content),
			Name:       m.Name,
			ToolCallID: m.ToolCallID,
		}
		if dm.Role == longhaul.RoleAssistant {
			dm.Content = stripToolCards(dm.Content)
		}
		for _, tc := range m.ToolCalls {
			dm.ToolCalls = append(dm.ToolCalls, longhaul.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		out = append(out, dm)
	}
	return out
}

// toolCard renders a finished tool call the way Open WebUI renders its own:
// a <details type="tool_calls"> block whose attributes hold the JSON-encoded
// arguments and result, HTML-escaped.
func toolCard(d longhaul.ToolOutputData, arguments string) string {
	args, _ := json.Marshal(arguments)
	result, _ := json.Marshal(d.Output)
	return fmt.Sprintf("\n<details type=\"tool_calls\" done=\"true\" id=\"%s\" name=\"%s\" arguments=\"%s\" result=\"%s\" files=\"\" embeds=\"\">\n<summary>Tool Executed</summary>\n</details>\n",
		html.EscapeString(d.ToolCallID), html.EscapeString(d.Name), html.EscapeString(string(args)), html.EscapeString(string(result)))
}

// summarize gives the last user message, cut to limit runes with "…",
// for the run's summary in the Temporal UI.
func summarize(msgs []longhaul.Message, limit int) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != longhaul.RoleUser {
			continue
		}
		return textcut.Ellipsis(strings.Join(strings.Fields(msgs[i].Content), " "), limit)
	}
	return ""
}

// chatInput reads a chat message that answers a run waiting for a person:
// approve, yes, ok, y and the like approve the pending call; deny, no, n,
// reject and the like deny it (whatever the case, with punctuation or
// spaces around); anything else is the person's reply, passed on as text.
func chatInput(text string) contract.InputRequest {
	word := strings.ToLower(strings.Join(strings.Fields(strings.TrimFunc(text, func(r rune) bool {
		return unicode.IsPunct(r) || unicode.IsSpace(r) || unicode.IsSymbol(r)
	})), " "))
	if word != "" {
		switch contract.Decide(contract.InputRequest{Text: word}) {
		case contract.DecisionApproved:
			yes := true
			return contract.InputRequest{Approve: &yes}
		case contract.DecisionDenied:
			no := false
			return contract.InputRequest{Approve: &no}
		}
	}
	return contract.InputRequest{Text: strings.TrimSpace(text)}
}

// lastUser is the index of the last user message, or -1.
func lastUser(msgs []longhaul.Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == longhaul.RoleUser {
			return i
		}
	}
	return -1
}

// replyTo is the assistant message the last user message answers, or nil
// when the conversation has none before it (its first turn).
func replyTo(msgs []longhaul.Message) *longhaul.Message {
	for i := lastUser(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == longhaul.RoleAssistant {
			return &msgs[i]
		}
	}
	return nil
}

// askedForApproval reports whether the assistant message the last user
// message answers is an approval prompt of this API.
func askedForApproval(msgs []longhaul.Message) bool {
	m := replyTo(msgs)
	return m != nil && strings.Contains(m.Content, approvalReplyHint)
}
