package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
)

// InputItem is one item of a request's input, or of a response's input
// items: a message, a function call the model made, or its output.
type InputItem struct {
	Type   string `json:"type"`
	ID     string `json:"id,omitempty"`
	Role   string `json:"role,omitempty"`
	Status string `json:"status,omitempty"`
	// Content is a message's content: a string or content parts on input,
	// always parts on output.
	Content   json.RawMessage `json:"content,omitempty"`
	CallID    string          `json:"call_id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments string          `json:"arguments,omitempty"`
	// Output is a function_call_output's output: a string, or content
	// parts of which the text is kept.
	Output json.RawMessage `json:"output,omitempty"`
}

// ContentPart is one content part of a message item.
type ContentPart struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	ImageURL string `json:"image_url,omitempty"`
	FileID   string `json:"file_id,omitempty"`
	Detail   string `json:"detail,omitempty"`
	Refusal  string `json:"refusal,omitempty"`
	// Annotations and Logprobs are set (empty) on output_text parts.
	Annotations *[]any `json:"annotations,omitempty"`
	Logprobs    *[]any `json:"logprobs,omitempty"`
}

// outputTextPart is an output_text part of an answer.
func outputTextPart(text string) ContentPart {
	return ContentPart{Type: "output_text", Text: text, Annotations: &[]any{}, Logprobs: &[]any{}}
}

// OutputItem is one item of a response's output: a message, a reasoning
// summary, a call of the client's function tool, or a call of one of the
// agent's own (server-side) tools, shown as OpenAI shows a hosted MCP
// tool's call (mcp_call, server_label "longhaul").
type OutputItem struct {
	Type   string `json:"type"`
	ID     string `json:"id"`
	Status string `json:"status,omitempty"`
	// message
	Role    string         `json:"role,omitempty"`
	Content *[]ContentPart `json:"content,omitempty"`
	// reasoning
	Summary *[]SummaryPart `json:"summary,omitempty"`
	// function_call and mcp_call
	CallID      string  `json:"call_id,omitempty"`
	Name        string  `json:"name,omitempty"`
	Arguments   *string `json:"arguments,omitempty"`
	ServerLabel string  `json:"server_label,omitempty"`
	Output      *string `json:"output,omitempty"`
	Error       *string `json:"error,omitempty"`
	// file_search_call (openai-node responses.d.ts
	// ResponseFileSearchToolCall): the queries, and the results when the
	// request's include has file_search_call.results.
	Queries *[]string           `json:"queries,omitempty"`
	Results *[]FileSearchResult `json:"results,omitempty"`
}

// FileSearchResult is one result of a file_search_call.
type FileSearchResult struct {
	FileID     string         `json:"file_id"`
	Filename   string         `json:"filename"`
	Score      float64        `json:"score"`
	Text       string         `json:"text"`
	Attributes map[string]any `json:"attributes"`
}

// documentSearchTool is the agents' tool a file_search_call item shows:
// its arguments are {"query", "max_num_results"?} and its output
// {"results": [{file_id, filename, vector_store_id, chunk, score, text,
// attributes}]} (docs-shared decision, the documents skill).
const documentSearchTool = "document_search"

// IncludeSearchResults is the include value asking for a
// file_search_call's results.
const IncludeSearchResults = "file_search_call.results"

// searchQuery reads a document_search call's query from its arguments.
func searchQuery(args string) []string {
	var a struct {
		Query string `json:"query"`
	}
	if json.Unmarshal([]byte(args), &a) != nil || a.Query == "" {
		return []string{}
	}
	return []string{a.Query}
}

// searchResults reads a document_search call's results from its output;
// nil when the output is not the tool's JSON (an error, or an excerpt of
// an output too long for the model).
func searchResults(output string) *[]FileSearchResult {
	var o struct {
		Results []FileSearchResult `json:"results"`
	}
	if json.Unmarshal([]byte(output), &o) != nil || o.Results == nil {
		return nil
	}
	return &o.Results
}

// SummaryPart is one part of a reasoning item's summary.
type SummaryPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// mcpServerLabel is the server_label of the agent's tool calls.
const mcpServerLabel = "longhaul"

// InputItems decodes a request's input: a string is one user message.
func InputItems(raw json.RawMessage) ([]InputItem, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []InputItem{{Type: "message", Role: "user", Content: raw}}, nil
	}
	var items []InputItem
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, errors.New("input: must be a string or an array of input items")
	}
	if len(items) == 0 {
		return nil, errors.New("input: must not be empty")
	}
	for i := range items {
		if items[i].Type == "" && items[i].Role != "" {
			items[i].Type = "message" // an easy input message
		}
	}
	return items, nil
}

// ItemsToMessages converts input items into the conversation's messages:
// developer messages become system messages, function_call items the tool
// calls of an assistant message (the one just before, if it is one), and
// function_call_output items tool messages. Reasoning items and the
// agent's own tool calls (mcp_call) that a client sends back are skipped:
// the conversation keeps what they led to.
func ItemsToMessages(items []InputItem) ([]longhaul.Message, error) {
	var out []longhaul.Message
	for i, it := range items {
		switch it.Type {
		case "message":
			m, err := ItemMessage(it)
			if err != nil {
				return nil, fmt.Errorf("input[%d]: %w", i, err)
			}
			out = append(out, m)
		case "function_call":
			if it.CallID == "" || it.Name == "" {
				return nil, fmt.Errorf("input[%d]: a function_call needs a call_id and a name", i)
			}
			tc := longhaul.ToolCall{ID: it.CallID, Name: it.Name, Arguments: it.Arguments}
			if n := len(out); n > 0 && out[n-1].Role == longhaul.RoleAssistant {
				out[n-1].ToolCalls = append(out[n-1].ToolCalls, tc)
			} else {
				out = append(out, longhaul.Message{Role: longhaul.RoleAssistant, ToolCalls: []longhaul.ToolCall{tc}})
			}
		case "function_call_output":
			if it.CallID == "" {
				return nil, fmt.Errorf("input[%d]: a function_call_output needs a call_id", i)
			}
			text, err := outputText(it.Output)
			if err != nil {
				return nil, fmt.Errorf("input[%d]: %w", i, err)
			}
			out = append(out, longhaul.Message{Role: longhaul.RoleTool, ToolCallID: it.CallID, Content: text})
		case "reasoning", "mcp_call", "mcp_list_tools":
		default:
			return nil, fmt.Errorf("input[%d]: items of type %q are not supported (message, function_call and function_call_output are)", i, it.Type)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("input: holds no message")
	}
	return out, nil
}

// ItemMessage converts a message item.
func ItemMessage(it InputItem) (longhaul.Message, error) {
	var role longhaul.Role
	switch it.Role {
	case "user":
		role = longhaul.RoleUser
	case "system", "developer":
		role = longhaul.RoleSystem
	case "assistant":
		role = longhaul.RoleAssistant
	default:
		return longhaul.Message{}, fmt.Errorf("role: %q is not one of user, system, developer, assistant", it.Role)
	}
	m := longhaul.Message{Role: role}
	var s string
	if json.Unmarshal(it.Content, &s) == nil {
		m.Content = s
		return m, nil
	}
	var parts []ContentPart
	if err := json.Unmarshal(it.Content, &parts); err != nil {
		return m, errors.New("content: must be a string or an array of content parts")
	}
	var texts []string
	images := false
	for _, p := range parts {
		switch p.Type {
		case "input_text", "output_text":
			texts = append(texts, p.Text)
			m.Parts = append(m.Parts, longhaul.Part{Type: longhaul.PartText, Text: p.Text})
		case "refusal":
			texts = append(texts, p.Refusal)
			m.Parts = append(m.Parts, longhaul.Part{Type: longhaul.PartText, Text: p.Refusal})
		case "input_image":
			if p.ImageURL == "" {
				return m, errors.New("content: an input_image needs an image_url (file ids are not supported)")
			}
			if role != longhaul.RoleUser {
				return m, errors.New("content: only user messages may carry images")
			}
			images = true
			m.Parts = append(m.Parts, longhaul.Part{Type: longhaul.PartImage, URL: p.ImageURL, Detail: p.Detail})
		default:
			return m, fmt.Errorf("content: parts of type %q are not supported (input_text, input_image, output_text and refusal are)", p.Type)
		}
	}
	m.Content = strings.Join(texts, "\n")
	if !images {
		m.Parts = nil // text alone travels as Content
	}
	return m, nil
}

// outputText is a function_call_output's output as text.
func outputText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []ContentPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("output: must be a string or an array of content parts")
	}
	var texts []string
	for _, p := range parts {
		if p.Type == "input_text" || p.Type == "output_text" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n"), nil
}

// MessagesToItems converts messages back into input items (a response's
// input items), with ids made from prefix and each item's index.
func MessagesToItems(msgs []longhaul.Message, prefix string) []InputItem {
	var out []InputItem
	id := func(kind string) string { return kind + "_" + prefix + "_" + strconv.Itoa(len(out)) }
	for _, m := range msgs {
		switch m.Role {
		case longhaul.RoleTool:
			out = append(out, InputItem{Type: "function_call_output", ID: id("fco"), CallID: m.ToolCallID, Output: jsonString(m.Content), Status: ResponseCompleted})
			continue
		}
		if m.Content != "" || len(m.Parts) > 0 || len(m.ToolCalls) == 0 {
			it := InputItem{Type: "message", ID: id("msg"), Role: string(m.Role), Status: ResponseCompleted}
			it.Content, _ = json.Marshal(messageParts(m))
			out = append(out, it)
		}
		for _, tc := range m.ToolCalls {
			out = append(out, InputItem{Type: "function_call", ID: id("fc"), CallID: tc.ID, Name: tc.Name, Arguments: tc.Arguments, Status: ResponseCompleted})
		}
	}
	return out
}

// messageParts are a message's content parts as a message item holds
// them: output_text for the assistant's, input_text and input_image for
// others.
func messageParts(m longhaul.Message) []ContentPart {
	textType := "input_text"
	if m.Role == longhaul.RoleAssistant {
		textType = "output_text"
	}
	text := func(t string) ContentPart {
		if textType == "output_text" {
			return outputTextPart(t)
		}
		return ContentPart{Type: textType, Text: t}
	}
	if len(m.Parts) == 0 {
		return []ContentPart{text(m.Content)}
	}
	var out []ContentPart
	for _, p := range m.Parts {
		switch p.Type {
		case longhaul.PartImage:
			url := p.URL
			if url == "" && p.Ref != "" {
				url = "longhaul-blob:" + p.Ref // claim-checked: the data is in the run's store
			}
			out = append(out, ContentPart{Type: "input_image", ImageURL: url, Detail: p.Detail})
		default:
			out = append(out, text(p.Text))
		}
	}
	return out
}

// jsonString is s as a JSON string.
func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// FunctionOutputs are the trailing function_call_output items of input
// that answer client tool calls of one run, as tool results, and that run;
// ok is false when input does not end with such items.
func FunctionOutputs(items []InputItem) (run string, results []contract.ToolResult, ok bool) {
	i := len(items)
	for i > 0 && items[i-1].Type == "function_call_output" {
		i--
	}
	if i == len(items) {
		return "", nil, false
	}
	for _, it := range items[i:] {
		r, found := contract.ParseClientCallID(it.CallID)
		if !found || (run != "" && r != run) {
			return "", nil, false
		}
		run = r
		text, err := outputText(it.Output)
		if err != nil {
			return "", nil, false
		}
		results = append(results, contract.ToolResult{ToolCallID: it.CallID, Content: text})
	}
	return run, results, true
}
