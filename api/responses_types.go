package api

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/tools"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// This file holds the wire types of OpenAI's Responses API and the pure
// conversions between its items and Longhaul's messages. It does not import
// fiber, so it is tested without a server; the handlers are in
// responses.go, the stream in responses_render.go.
//
// A response is a run, or the next segment of one: a run that called the
// client's function tools stops at its client_tool_calls event and waits;
// the function_call_output items of the client's next request continue the
// same run, and the response that answers them is the stretch of the run's
// log after that event. So a response id names a run and the log offset its
// segment starts after ("resp_" + base64url(run id) + "." + offset, 0 for a
// run's first response), and any API process rebuilds a response from the
// run's durable log alone.

// respPrefix starts every response id.
const respPrefix = "resp_"

// responseID is the id of the response that is the segment of run after
// offset start.
func responseID(run string, start int64) string {
	return respPrefix + base64.RawURLEncoding.EncodeToString([]byte(run)) + "." + strconv.FormatInt(start, 10)
}

// parseResponseID is the run and segment start a response id names.
func parseResponseID(id string) (run string, start int64, ok bool) {
	rest, found := strings.CutPrefix(id, respPrefix)
	if !found {
		return "", 0, false
	}
	enc, off, found := strings.Cut(rest, ".")
	if !found {
		return "", 0, false
	}
	n, err := strconv.ParseInt(off, 10, 64)
	if err != nil || n < 0 {
		return "", 0, false
	}
	b, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || len(b) == 0 {
		return "", 0, false
	}
	return string(b), n, true
}

// truncationAuto is the Responses truncation that compacts what does not
// fit the model's window.
const truncationAuto = "auto"

// ResponsesRequest is the body of POST /v1/responses. Fields Longhaul does
// not use (include, prompt_cache_key, service_tier, …) are accepted and
// ignored.
type ResponsesRequest struct {
	Model              string             `json:"model"`
	Input              json.RawMessage    `json:"input"`
	Instructions       string             `json:"instructions,omitempty"`
	PreviousResponseID string             `json:"previous_response_id,omitempty"`
	Tools              []ResponseTool     `json:"tools,omitempty"`
	ToolChoice         json.RawMessage    `json:"tool_choice,omitempty"`
	ParallelToolCalls  *bool              `json:"parallel_tool_calls,omitempty"`
	Text               *ResponseText      `json:"text,omitempty"`
	MaxOutputTokens    int                `json:"max_output_tokens,omitempty"`
	Temperature        *float32           `json:"temperature,omitempty"`
	TopP               *float32           `json:"top_p,omitempty"`
	Reasoning          *ResponseReasoning `json:"reasoning,omitempty"`
	Metadata           map[string]string  `json:"metadata,omitempty"`
	Store              *bool              `json:"store,omitempty"`
	Background         bool               `json:"background,omitempty"`
	Stream             bool               `json:"stream,omitempty"`
	// Include asks for more in the output; Longhaul reads
	// file_search_call.results and ignores the rest.
	Include []string `json:"include,omitempty"`
	User    string   `json:"user,omitempty"`
	// Truncation is "disabled" (OpenAI's default: an input over the
	// model's window fails with 400 context_length_exceeded) or "auto"
	// (older turns are compacted to fit).
	Truncation string `json:"truncation,omitempty"`
}

// ResponseTool is a tool of a request: Longhaul takes function tools (flat:
// name, description, parameters, strict) and one hosted tool, file_search
// (vector_store_ids, max_num_results, ranking_options, filters: openai-node
// 7.57.0 resources/responses/responses.d.ts FileSearchTool; the Agents
// SDK 0.20.0's fileSearchTool sends the same, agents-openai
// dist/openaiResponsesModel.js:711-726), which the run's document_search
// tool serves; other hosted tools are refused.
type ResponseTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
	// VectorStoreIDs, MaxNumResults, RankingOptions and Filters are
	// file_search's.
	VectorStoreIDs []string        `json:"vector_store_ids,omitempty"`
	MaxNumResults  *int            `json:"max_num_results,omitempty"`
	RankingOptions *RankingOptions `json:"ranking_options,omitempty"`
	Filters        json.RawMessage `json:"filters,omitempty"`
}

// maxFileSearchStores bounds the vector stores a file_search tool names.
const maxFileSearchStores = 16

// checkFileSearch checks a file_search tool: the stores it names, and
// what of OpenAI's options the document_search tool can honour. It has no
// filters (refused, as results the caller meant to exclude would reach
// the model) and picks its own number of results and ranking (the
// options are checked and ignored, as docs/documents.md says).
func checkFileSearch(i int, t ResponseTool) error {
	if len(t.VectorStoreIDs) == 0 || len(t.VectorStoreIDs) > maxFileSearchStores {
		return fmt.Errorf("tools[%d].vector_store_ids: from 1 to %d vector stores", i, maxFileSearchStores)
	}
	if t.MaxNumResults != nil && (*t.MaxNumResults < 1 || *t.MaxNumResults > 50) {
		return fmt.Errorf("tools[%d].max_num_results: must be from 1 to 50", i)
	}
	if f := bytes.TrimSpace(t.Filters); len(f) > 0 && !bytes.Equal(f, []byte("null")) {
		return fmt.Errorf("tools[%d].filters: not supported on the Responses API's file_search (use POST /v1/vector_stores/{id}/search for filtered searches)", i)
	}
	if ro := t.RankingOptions; ro != nil {
		if err := checkRanking(ro.Ranker); err != nil {
			return fmt.Errorf("tools[%d].%v", i, err)
		}
		if ro.ScoreThreshold != nil && (*ro.ScoreThreshold < 0 || *ro.ScoreThreshold > 1) {
			return fmt.Errorf("tools[%d].ranking_options.score_threshold: must be from 0 to 1", i)
		}
	}
	return nil
}

// vectorStores are the stores of the request's file_search tools.
func (r *ResponsesRequest) vectorStores() []string {
	var out []string
	for _, t := range r.Tools {
		if t.Type == "file_search" {
			for _, id := range t.VectorStoreIDs {
				if !slices.Contains(out, id) {
					out = append(out, id)
				}
			}
		}
	}
	return out
}

// ResponseText is a request's (and a response's) text settings.
type ResponseText struct {
	Format *ResponseTextFormat `json:"format,omitempty"`
}

// ResponseTextFormat is the shape asked of the answer: text, any JSON
// object, or JSON matching a schema.
type ResponseTextFormat struct {
	Type        string          `json:"type"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// ResponseReasoning is a request's (and a response's) reasoning settings.
type ResponseReasoning struct {
	Effort  *string `json:"effort"`
	Summary *string `json:"summary"`
}

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

// Response is a response object.
type Response struct {
	ID                 string             `json:"id"`
	Object             string             `json:"object"`
	CreatedAt          int64              `json:"created_at"`
	Status             string             `json:"status"`
	Background         bool               `json:"background"`
	Error              *ResponseError     `json:"error"`
	IncompleteDetails  *IncompleteDetails `json:"incomplete_details"`
	Instructions       *string            `json:"instructions"`
	MaxOutputTokens    *int               `json:"max_output_tokens"`
	Model              string             `json:"model"`
	Output             []OutputItem       `json:"output"`
	ParallelToolCalls  bool               `json:"parallel_tool_calls"`
	PreviousResponseID *string            `json:"previous_response_id"`
	Reasoning          ResponseReasoning  `json:"reasoning"`
	Store              bool               `json:"store"`
	Temperature        *float32           `json:"temperature"`
	Text               ResponseText       `json:"text"`
	ToolChoice         json.RawMessage    `json:"tool_choice"`
	Tools              []ResponseTool     `json:"tools"`
	TopP               *float32           `json:"top_p"`
	Truncation         string             `json:"truncation"`
	Usage              *ResponseUsage     `json:"usage"`
	User               *string            `json:"user"`
	Metadata           map[string]string  `json:"metadata"`
	// searchResults says whether file_search_call items carry their
	// results (include: file_search_call.results); not on the wire.
	SearchResults bool `json:"-"`
}

// Response statuses.
const (
	respQueued     = "queued"
	respInProgress = "in_progress"
	respCompleted  = "completed"
	respFailed     = "failed"
	respCancelled  = "cancelled"
	respIncomplete = "incomplete"
)

// ResponseError is why a response failed.
type ResponseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// IncompleteDetails says why a response is incomplete.
type IncompleteDetails struct {
	Reason string `json:"reason"`
}

// ResponseUsage counts a response's tokens.
type ResponseUsage struct {
	InputTokens         int          `json:"input_tokens"`
	InputTokensDetails  tokenDetails `json:"input_tokens_details"`
	OutputTokens        int          `json:"output_tokens"`
	OutputTokensDetails tokenDetails `json:"output_tokens_details"`
	TotalTokens         int          `json:"total_tokens"`
}

// tokenDetails breaks a token count down; Longhaul knows no breakdown.
type tokenDetails struct {
	CachedTokens    *int `json:"cached_tokens,omitempty"`
	ReasoningTokens *int `json:"reasoning_tokens,omitempty"`
}

// responseUsage converts a run's usage.
func responseUsage(u longhaul.Usage) *ResponseUsage {
	zero := 0
	return &ResponseUsage{
		InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, TotalTokens: u.TotalTokens,
		InputTokensDetails: tokenDetails{CachedTokens: &zero}, OutputTokensDetails: tokenDetails{ReasoningTokens: &zero},
	}
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

// includeSearchResults is the include value asking for a
// file_search_call's results.
const includeSearchResults = "file_search_call.results"

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

// StreamEvent is one event of a streamed response. Which fields are set
// depends on its type.
type StreamEvent struct {
	Type           string       `json:"type"`
	SequenceNumber int64        `json:"sequence_number"`
	Response       *Response    `json:"response,omitempty"`
	OutputIndex    *int         `json:"output_index,omitempty"`
	ItemID         string       `json:"item_id,omitempty"`
	ContentIndex   *int         `json:"content_index,omitempty"`
	Item           *OutputItem  `json:"item,omitempty"`
	Part           *ContentPart `json:"part,omitempty"`
	Delta          *string      `json:"delta,omitempty"`
	Text           *string      `json:"text,omitempty"`
	Arguments      *string      `json:"arguments,omitempty"`
	Name           string       `json:"name,omitempty"`
	Logprobs       *[]any       `json:"logprobs,omitempty"`
	Code           string       `json:"code,omitempty"`
	Message        string       `json:"message,omitempty"`
	Param          *string      `json:"param,omitempty"`
}

// ResponseDeleted answers DELETE /v1/responses/{id}.
type ResponseDeleted struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Deleted bool   `json:"deleted"`
}

// InputItemList answers GET /v1/responses/{id}/input_items.
type InputItemList struct {
	Object  string      `json:"object"`
	Data    []InputItem `json:"data"`
	FirstID *string     `json:"first_id"`
	LastID  *string     `json:"last_id"`
	HasMore bool        `json:"has_more"`
}

// validate checks what a request must hold and refuses what Longhaul
// cannot do.
func (r *ResponsesRequest) validate() error {
	if r.Model == "" {
		return errors.New("model: required")
	}
	if len(bytes.TrimSpace(r.Input)) == 0 || bytes.Equal(bytes.TrimSpace(r.Input), []byte("null")) {
		return errors.New("input: required (a string or an array of input items)")
	}
	if r.Background && r.Store != nil && !*r.Store {
		return errors.New("background: a background response must be stored (store: true)")
	}
	for i, t := range r.Tools {
		switch t.Type {
		case "function":
			if len(t.VectorStoreIDs) > 0 || t.MaxNumResults != nil || t.RankingOptions != nil || len(t.Filters) > 0 {
				return fmt.Errorf("tools[%d]: a function tool takes name, description, parameters and strict", i)
			}
		case "file_search":
			if err := checkFileSearch(i, t); err != nil {
				return err
			}
		default:
			return fmt.Errorf("tools[%d]: type %q is not supported: Longhaul's agents bring their own server-side tools; declare function tools and file_search only", i, t.Type)
		}
	}
	if err := wire.CheckToolSpecs(r.clientTools(), "tools[%d]"); err != nil {
		return err
	}
	if r.MaxOutputTokens < 0 {
		return errors.New("max_output_tokens: must not be negative")
	}
	switch r.Truncation {
	case "", truncationAuto, longhaul.TruncationDisabled:
	default:
		return fmt.Errorf("truncation: %q is not one of auto, disabled", r.Truncation)
	}
	if err := wire.CheckResponseFormat(r.options().ResponseFormat, "text.format", tools.CheckSchema); err != nil {
		return err
	}
	if _, err := chatToolChoice(r.ToolChoice); err != nil {
		return err
	}
	return nil
}

// stored reports whether the response is kept after it completes (store
// defaults to true).
func (r *ResponsesRequest) stored() bool { return r.Store == nil || *r.Store }

// chatToolChoice converts a Responses tool_choice ("auto", "none",
// "required" or {"type":"function","name":…}) into the chat completions
// form the model gets.
func chatToolChoice(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "auto", "none", "required":
			return raw, nil
		}
		return nil, fmt.Errorf("tool_choice: %q is not one of auto, none, required", s)
	}
	var named struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if json.Unmarshal(raw, &named) != nil || named.Type != "function" || named.Name == "" {
		return nil, errors.New(`tool_choice: must be "auto", "none", "required" or {"type":"function","name":…}`)
	}
	b, _ := json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": named.Name}})
	return b, nil
}

// responsesToolChoice converts a chat completions tool_choice back into
// the Responses form, for the response object; none sent is "auto".
func responsesToolChoice(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage(`"auto"`)
	}
	var named struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(raw, &named) == nil && named.Function.Name != "" {
		b, _ := json.Marshal(map[string]string{"type": "function", "name": named.Function.Name})
		return b
	}
	return raw
}

// options converts the request's model settings.
func (r *ResponsesRequest) options() longhaul.ModelOptions {
	o := longhaul.ModelOptions{
		Temperature: r.Temperature, TopP: r.TopP, MaxCompletionTokens: r.MaxOutputTokens,
		ParallelToolCalls: r.ParallelToolCalls, Truncation: longhaul.TruncationDisabled,
	}
	if r.Truncation == truncationAuto {
		o.Truncation = truncationAuto
	}
	o.ToolChoice, _ = chatToolChoice(r.ToolChoice)
	if r.Reasoning != nil && r.Reasoning.Effort != nil {
		o.ReasoningEffort = *r.Reasoning.Effort
	}
	if r.Text != nil && r.Text.Format != nil && r.Text.Format.Type != longhaul.FormatText {
		f := r.Text.Format
		o.ResponseFormat = &longhaul.ResponseFormat{Type: f.Type, Name: f.Name, Schema: f.Schema, Strict: f.Strict != nil && *f.Strict}
	}
	return o
}

// clientTools converts the request's function tools.
func (r *ResponsesRequest) clientTools() []longhaul.ToolSpec {
	var out []longhaul.ToolSpec
	for _, t := range r.Tools {
		if t.Type != "function" {
			continue
		}
		out = append(out, longhaul.ToolSpec{Name: t.Name, Description: t.Description, Parameters: wire.ToolParams(t.Parameters), Strict: t.Strict != nil && *t.Strict})
	}
	return out
}

// inputItems decodes a request's input: a string is one user message.
func inputItems(raw json.RawMessage) ([]InputItem, error) {
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

// itemsToMessages converts input items into the conversation's messages:
// developer messages become system messages, function_call items the tool
// calls of an assistant message (the one just before, if it is one), and
// function_call_output items tool messages. Reasoning items and the
// agent's own tool calls (mcp_call) that a client sends back are skipped:
// the conversation keeps what they led to.
func itemsToMessages(items []InputItem) ([]longhaul.Message, error) {
	var out []longhaul.Message
	for i, it := range items {
		switch it.Type {
		case "message":
			m, err := itemMessage(it)
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

// itemMessage converts a message item.
func itemMessage(it InputItem) (longhaul.Message, error) {
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

// messagesToItems converts messages back into input items (a response's
// input items), with ids made from prefix and each item's index.
func messagesToItems(msgs []longhaul.Message, prefix string) []InputItem {
	var out []InputItem
	id := func(kind string) string { return kind + "_" + prefix + "_" + strconv.Itoa(len(out)) }
	for _, m := range msgs {
		switch m.Role {
		case longhaul.RoleTool:
			out = append(out, InputItem{Type: "function_call_output", ID: id("fco"), CallID: m.ToolCallID, Output: jsonString(m.Content), Status: respCompleted})
			continue
		}
		if m.Content != "" || len(m.Parts) > 0 || len(m.ToolCalls) == 0 {
			it := InputItem{Type: "message", ID: id("msg"), Role: string(m.Role), Status: respCompleted}
			it.Content, _ = json.Marshal(messageParts(m))
			out = append(out, it)
		}
		for _, tc := range m.ToolCalls {
			out = append(out, InputItem{Type: "function_call", ID: id("fc"), CallID: tc.ID, Name: tc.Name, Arguments: tc.Arguments, Status: respCompleted})
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

// functionOutputs are the trailing function_call_output items of input
// that answer client tool calls of one run, as tool results, and that run;
// ok is false when input does not end with such items.
func functionOutputs(items []InputItem) (run string, results []contract.ToolResult, ok bool) {
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
