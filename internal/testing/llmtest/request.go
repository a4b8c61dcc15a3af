package llmtest

import (
	"net/http"
	"slices"
	"strings"
	"unicode"

	openai "github.com/sashabaranov/go-openai"
)

// Request is one chat completion request received by the server. Values
// returned by Server.Requests share their Header and Body with the server's
// record and must not be modified.
type Request struct {
	// N is the request's 1-based position among the chat requests received.
	N int
	// Method and Path are the HTTP method and URL path, such as "POST" and
	// "/v1/chat/completions".
	Method string
	Path   string
	// Header holds the request headers, including Authorization.
	Header http.Header
	// Body is the raw request body.
	Body []byte
	// Chat is the decoded body: model, messages (roles, content, tool_calls,
	// tool_call_id), tools, response_format, stream and stream_options.
	Chat openai.ChatCompletionRequest
	// PromptTokens is PromptTokens(Chat): the request's prompt as the
	// model reads it, in tokens, before any cut.
	PromptTokens int
	// Cut reports that the request did not fit the window set with
	// SetWindow and the model cut it (BehaviourOllama) or refused it
	// (BehaviourOpenAI).
	Cut bool
	// Dropped is how many messages BehaviourOllama left out of what the
	// model read (the oldest non-system ones).
	Dropped int
	// Reasoning holds each message's "reasoning" field as sent ("" where
	// it has none), in the order of Chat.Messages: the thinking a client
	// sends back with an assistant message, which Ollama reads as the
	// message's thinking (ollama v0.32.15 openai/openai.go:565,
	// FromChatRequest: Thinking: msg.Reasoning).
	Reasoning []string

	// read is the prompt tokens the model read, for usage: PromptTokens,
	// or less after a cut; 0 without a window.
	read int
}

// LastUserMessage returns the text of the last message with role "user", or
// "" when there is none.
func (r Request) LastUserMessage() string {
	for i := len(r.Chat.Messages) - 1; i >= 0; i-- {
		if m := r.Chat.Messages[i]; m.Role == openai.ChatMessageRoleUser {
			return MessageText(m)
		}
	}
	return ""
}

// ToolResults returns the messages with role "tool" (the results of
// earlier tool calls), in order.
func (r Request) ToolResults() []openai.ChatCompletionMessage {
	return slices.DeleteFunc(slices.Clone(r.Chat.Messages), func(m openai.ChatCompletionMessage) bool { return m.Role != openai.ChatMessageRoleTool })
}

// SystemPrompt returns the text of the system prompt as the model reads
// it: the messages with role "system" or "developer", joined by blank
// lines, as Ollama's templates collate them (ollama v0.32.15
// template/template.go collate: every system message's content goes to
// .System); "" when there is none.
func (r Request) SystemPrompt() string {
	var parts []string
	for _, m := range r.Chat.Messages {
		if m.Role == openai.ChatMessageRoleSystem || m.Role == openai.ChatMessageRoleDeveloper {
			parts = append(parts, MessageText(m))
		}
	}
	return strings.Join(parts, "\n\n")
}

// Streaming reports whether the request asked for a streamed response.
func (r Request) Streaming() bool {
	return r.Chat.Stream
}

// MessageText returns the text of m: its content string, or else the text of
// its content parts joined with newlines.
func MessageText(m openai.ChatCompletionMessage) string {
	if m.Content != "" || len(m.MultiContent) == 0 {
		return m.Content
	}
	var texts []string
	for _, p := range m.MultiContent {
		if p.Type == openai.ChatMessagePartTypeText || p.Text != "" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// LastUserContains returns a matcher for On that accepts requests whose last
// user message contains substr.
func LastUserContains(substr string) func(Request) bool {
	return func(r Request) bool { return strings.Contains(r.LastUserMessage(), substr) }
}

// AnyMessageContains returns a matcher for On that accepts requests in which
// any message, whatever its role, contains substr.
func AnyMessageContains(substr string) func(Request) bool {
	return func(r Request) bool {
		for _, m := range r.Chat.Messages {
			if strings.Contains(MessageText(m), substr) {
				return true
			}
		}
		return false
	}
}

// HasResponseFormat returns a matcher for On that accepts requests carrying a
// response_format other than "text", such as structured-output calls.
func HasResponseFormat() func(Request) bool {
	return func(r Request) bool {
		f := r.Chat.ResponseFormat
		return f != nil && f.Type != "" && f.Type != openai.ChatCompletionResponseFormatTypeText
	}
}

// HasSchema returns a matcher for On that accepts requests asking for
// structured output in the JSON schema named name: the engine's own
// structured calls (plan, step_review, grade…) each name theirs.
func HasSchema(name string) func(Request) bool {
	return func(r Request) bool { return SchemaName(r) == name }
}

// SchemaName is the name of the JSON schema r asks its answer to follow,
// or "" when it asks for none.
func SchemaName(r Request) string {
	if f := r.Chat.ResponseFormat; f != nil && f.JSONSchema != nil {
		return f.JSONSchema.Name
	}
	return ""
}

// HasTools returns a matcher for On that accepts requests offering at least
// one tool.
func HasTools() func(Request) bool {
	return func(r Request) bool { return len(r.Chat.Tools) > 0 }
}

// EmbeddingRequest is one embeddings request received by the server.
type EmbeddingRequest struct {
	// N is the request's 1-based position among the embeddings requests
	// received.
	N      int
	Method string
	Path   string
	Header http.Header
	Body   []byte
	// Model, EncodingFormat and Dimensions echo the request's fields.
	Model          string
	EncodingFormat string
	Dimensions     int
	// Input holds the inputs given as strings; Tokens those given as token
	// arrays. One of them is empty.
	Input  []string
	Tokens [][]int
}

// CountTokens is the deterministic token estimate behind the usage numbers:
// every maximal run of letters and digits counts as one token and so does
// every other rune that is not whitespace. "Hello, world!" is 4 tokens.
func CountTokens(s string) int {
	n := 0
	inWord := false
	for _, c := range s {
		switch {
		case unicode.IsLetter(c) || unicode.IsDigit(c):
			if !inWord {
				n++
			}
			inWord = true
		case unicode.IsSpace(c):
			inWord = false
		default:
			n++
			inWord = false
		}
	}
	return n
}

// promptTokens estimates the prompt size of req: the tokens of every
// message's text, tool-call names and arguments.
func promptTokens(req openai.ChatCompletionRequest) int {
	n := 0
	for _, m := range req.Messages {
		n += CountTokens(MessageText(m))
		for _, tc := range m.ToolCalls {
			n += CountTokens(tc.Function.Name) + CountTokens(tc.Function.Arguments)
		}
	}
	return n
}
