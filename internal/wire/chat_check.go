// A chat request checked as OpenAI checks it (messages, tools, formats,
// choices), and turned into the domain's messages and options.

package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/longhaul-dev/longhaul"
)

// SchemaCheck reports whether a JSON schema is one the engine can use. The api
// package passes tools.CheckSchema: compiling a schema is an adapter's job.
type SchemaCheck func(json.RawMessage) error

// validRoles are the message roles a request may carry.
var validRoles = map[string]longhaul.Role{
	"system":    longhaul.RoleSystem,
	"developer": longhaul.RoleSystem,
	"user":      longhaul.RoleUser,
	"assistant": longhaul.RoleAssistant,
	"tool":      longhaul.RoleTool,
}

// Validate reports the first problem with a request, as a client would want
// it named; check compiles its response_format schema.
func (r *ChatRequest) Validate(check SchemaCheck) error {
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
	if r.TopLogprobs != nil && (*r.TopLogprobs < 0 || *r.TopLogprobs > 20 || !r.Logprobs) {
		return errors.New("top_logprobs: must be between 0 and 20, with logprobs true")
	}
	if err := r.validateTools(); err != nil {
		return err
	}
	if err := r.Longhaul.Validate(); err != nil {
		return err
	}
	if err := r.ResponseFormat.validate(check); err != nil {
		return err
	}
	if r.Temperature != nil && (*r.Temperature < 0 || *r.Temperature > 2) {
		return errors.New("temperature: must be between 0 and 2")
	}
	if r.TopP != nil && (*r.TopP < 0 || *r.TopP > 1) {
		return errors.New("top_p: must be between 0 and 1")
	}
	return nil
}

// Turn is the number of user messages: the same for a retried request, one
// more for the chat's next question.
func (r *ChatRequest) Turn() int {
	n := 0
	for _, m := range r.Messages {
		if m.Role == "user" {
			n++
		}
	}
	return n
}

// IsBackgroundTask reports whether the request is one of Open WebUI's
// housekeeping prompts (title, tags, follow-ups, search queries,
// autocompletion). Each is a single user message that starts with
// "### Task:" and holds the chat it is about (Open WebUI v0.10.2,
// routers/tasks.py:172-174 and the like build
// 'messages': [{'role': 'user', 'content': content}]).
//
// A chat turn with a file attached starts its last user message with
// "### Task:" too: Open WebUI prepends its RAG template (config.py:1045,
// DEFAULT_RAG_TEMPLATE) to the question (utils/middleware.py:809-813
// add_or_update_user_message with append=False; utils/misc.py:484-497).
// That is the user's turn, not a task: it is told apart by the retrieved
// context, which the template closes with </context> and the question
// follows, or by the chat's earlier messages. The tasks about a chat hold
// it between <chat_history> tags (config.py:2135-2230), whatever it quotes.
func (r *ChatRequest) IsBackgroundTask() bool {
	last, users := "", 0
	for _, m := range r.Messages {
		switch m.Role {
		case "system", "developer":
		case "user":
			users++
			last = strings.TrimSpace(m.Content.Text)
		default:
			return false
		}
	}
	if users != 1 || !strings.HasPrefix(last, "### Task:") {
		return false
	}
	if strings.Contains(last, "<chat_history>") {
		return true
	}
	if i := strings.LastIndex(last, "</context>"); i >= 0 && strings.Contains(last[:i], "<context>") && strings.TrimSpace(last[i+len("</context>"):]) != "" {
		return false
	}
	return true
}

// Options are the request's settings for the model calls that answer it.
func (r *ChatRequest) Options() longhaul.ModelOptions {
	o := longhaul.ModelOptions{
		Temperature: r.Temperature, TopP: r.TopP, MaxTokens: r.MaxTokens, MaxCompletionTokens: r.MaxCompletionTokens,
		Stop: r.Stop, Seed: r.Seed, Logprobs: r.Logprobs, ReasoningEffort: r.ReasoningEffort,
		ToolChoice: r.ToolChoice, ParallelToolCalls: r.ParallelToolCalls, ResponseFormat: r.ResponseFormat.domain(),
	}
	if r.TopLogprobs != nil {
		o.TopLogprobs = *r.TopLogprobs
	}
	return o
}

// toolName is what OpenAI allows as a function's (and a schema's) name.
var toolName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// validateTools checks the request's tools and tool_choice.
func (r *ChatRequest) validateTools() error {
	for i, t := range r.Tools {
		if t.Type != "function" || t.Function == nil {
			return fmt.Errorf("tools[%d]: only function tools are supported (type \"function\" with a function object)", i)
		}
	}
	if err := CheckToolSpecs(r.ClientTools(), "tools[%d].function"); err != nil {
		return err
	}
	if len(r.ToolChoice) == 0 {
		return nil
	}
	if _, err := ChoiceName(r.ToolChoice); err != nil {
		return errors.New("tool_choice: " + err.Error())
	}
	return nil
}

// CheckToolSpecs checks a request's function tools, whatever API they came
// by: OpenAI's rules for names, each name once, parameters a schema object.
// path locates tool i in the request ("tools[%d].function").
func CheckToolSpecs(specs []longhaul.ToolSpec, path string) error {
	seen := map[string]bool{}
	for i, t := range specs {
		at := fmt.Sprintf(path, i)
		if !toolName.MatchString(t.Name) {
			return fmt.Errorf("%s.name: %q must be 1 to 64 letters, digits, underscores or dashes", at, t.Name)
		}
		if seen[t.Name] {
			return fmt.Errorf("%s.name: %q is declared twice", at, t.Name)
		}
		seen[t.Name] = true
		if p := bytes.TrimSpace(t.Parameters); len(p) > 0 && p[0] != '{' {
			return fmt.Errorf("%s.parameters: must be a JSON schema object", at)
		}
	}
	return nil
}

// CheckResponseFormat checks a requested answer format, whatever API it
// came by (nil is text); path locates it in the request, and check
// compiles its schema.
func CheckResponseFormat(f *longhaul.ResponseFormat, path string, check SchemaCheck) error {
	if f == nil {
		return nil
	}
	switch f.Type {
	case longhaul.FormatJSONObject:
		return nil
	case longhaul.FormatJSONSchema:
	default:
		return fmt.Errorf("%s.type: %q is not one of text, json_object, json_schema", path, f.Type)
	}
	if !toolName.MatchString(f.Name) {
		return fmt.Errorf("%s.name: %q must be 1 to 64 letters, digits, underscores or dashes", path, f.Name)
	}
	if err := check(f.Schema); err != nil {
		return fmt.Errorf("%s.schema: %w", path, err)
	}
	return nil
}

// ChoiceName is the function a tool_choice names, empty for "none",
// "auto" and "required".
func ChoiceName(choice json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(choice, &s) == nil {
		switch s {
		case "none", "auto", "required":
			return "", nil
		}
		return "", fmt.Errorf("%q is not one of none, auto, required", s)
	}
	var named struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(choice, &named) != nil || named.Type != "function" || named.Function.Name == "" {
		return "", errors.New(`must be "none", "auto", "required" or {"type": "function", "function": {"name": …}}`)
	}
	return named.Function.Name, nil
}

// ClientTools are the request's tools in the domain's form.
func (r *ChatRequest) ClientTools() []longhaul.ToolSpec {
	var out []longhaul.ToolSpec
	for _, t := range r.Tools {
		out = append(out, longhaul.ToolSpec{Name: t.Function.Name, Description: t.Function.Description, Parameters: ToolParams(t.Function.Parameters), Strict: t.Function.Strict})
	}
	return out
}

// ToolParams is a declared tool's parameters schema; null is none.
func ToolParams(raw json.RawMessage) json.RawMessage {
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil
	}
	return raw
}

// validate checks a response_format; nil is fine.
func (f *WireFormat) validate(check SchemaCheck) error {
	path := "response_format"
	if f != nil && f.Type == longhaul.FormatJSONSchema {
		if f.JSONSchema == nil {
			return errors.New("response_format.json_schema: required with type json_schema")
		}
		path += ".json_schema"
	}
	return CheckResponseFormat(f.domain(), path, check)
}

// domain is the response format in the domain's form; nil for text.
func (f *WireFormat) domain() *longhaul.ResponseFormat {
	if f == nil || f.Type == longhaul.FormatText {
		return nil
	}
	out := &longhaul.ResponseFormat{Type: f.Type}
	if f.JSONSchema != nil {
		out.Name, out.Schema, out.Strict = f.JSONSchema.Name, f.JSONSchema.Schema, f.JSONSchema.Strict
	}
	return out
}

// DomainMessages converts the request's messages; an assistant message's
// content becomes its answer's text (AnswerText: the tool cards and
// reasoning a client showed in it taken out).
func DomainMessages(in []ChatMessage) []longhaul.Message {
	out := make([]longhaul.Message, 0, len(in))
	for _, m := range in {
		dm := longhaul.Message{
			Role:       validRoles[m.Role],
			Content:    m.Content.Text,
			Parts:      m.Content.Parts,
			Name:       m.Name,
			ToolCallID: m.ToolCallID,
		}
		if dm.Role == longhaul.RoleAssistant {
			dm.Content = AnswerText(dm.Content)
		}
		for _, tc := range m.ToolCalls {
			dm.ToolCalls = append(dm.ToolCalls, longhaul.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		out = append(out, dm)
	}
	return out
}
