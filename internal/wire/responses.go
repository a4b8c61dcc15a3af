package wire

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
)

// The wire types of OpenAI's Responses API and the pure conversions
// between its items and Longhaul's messages: the request and response
// objects here, the items and content parts in responses_items.go, the
// stream events and the renderer that derives them from a run's log in
// responses_events.go, and what a run keeps of its request in
// responses_state.go.
//
// A response is a run, or the next segment of one: a run that called the
// client's function tools stops at its client_tool_calls event and waits;
// the function_call_output items of the client's next request continue the
// same run, and the response that answers them is the stretch of the run's
// log after that event. So a response id names a run and the log offset its
// segment starts after ("resp_" + base64url(run id) + "." + offset, 0 for a
// run's first response), and any API process rebuilds a response from the
// run's durable log alone.

// ResponsePrefix starts every response id.
const ResponsePrefix = "resp_"

// ResponseID is the id of the response that is the segment of run after
// offset start.
func ResponseID(run string, start int64) string {
	return ResponsePrefix + base64.RawURLEncoding.EncodeToString([]byte(run)) + "." + strconv.FormatInt(start, 10)
}

// ParseResponseID is the run and segment start a response id names.
func ParseResponseID(id string) (run string, start int64, ok bool) {
	rest, found := strings.CutPrefix(id, ResponsePrefix)
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
	// Webhook is a URL the background response's events are delivered
	// to, signed (Longhaul's extension; see docs/api.md, Webhooks).
	Webhook string `json:"webhook,omitempty"`
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
func checkFileSearch(i int, t ResponseTool, checkRanking RankingCheck) error {
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

// VectorStores are the stores of the request's file_search tools.
func (r *ResponsesRequest) VectorStores() []string {
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

// RankingCheck accepts or refuses the ranker a file_search tool's
// ranking_options name (the documents package knows which this server has).
type RankingCheck func(ranker string) error

// Validate checks what a request must hold and refuses what Longhaul
// cannot do; check compiles its text.format schema, and checkRanking
// judges its file_search tools' rankers.
func (r *ResponsesRequest) Validate(check SchemaCheck, checkRanking RankingCheck) error {
	if r.Model == "" {
		return errors.New("model: required")
	}
	if len(bytes.TrimSpace(r.Input)) == 0 || bytes.Equal(bytes.TrimSpace(r.Input), []byte("null")) {
		return errors.New("input: required (a string or an array of input items)")
	}
	if r.Background && r.Store != nil && !*r.Store {
		return errors.New("background: a background response must be stored (store: true)")
	}
	if r.Webhook != "" && !r.Background {
		return errors.New("webhook: only a background response (background: true) takes a webhook")
	}
	for i, t := range r.Tools {
		switch t.Type {
		case "function":
			if len(t.VectorStoreIDs) > 0 || t.MaxNumResults != nil || t.RankingOptions != nil || len(t.Filters) > 0 {
				return fmt.Errorf("tools[%d]: a function tool takes name, description, parameters and strict", i)
			}
		case "file_search":
			if err := checkFileSearch(i, t, checkRanking); err != nil {
				return err
			}
		default:
			return fmt.Errorf("tools[%d]: type %q is not supported: Longhaul's agents bring their own server-side tools; declare function tools and file_search only", i, t.Type)
		}
	}
	if err := CheckToolSpecs(r.ClientTools(), "tools[%d]"); err != nil {
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
	if err := CheckResponseFormat(r.Options().ResponseFormat, "text.format", check); err != nil {
		return err
	}
	if _, err := chatToolChoice(r.ToolChoice); err != nil {
		return err
	}
	return nil
}

// Stored reports whether the response is kept after it completes (store
// defaults to true).
func (r *ResponsesRequest) Stored() bool { return r.Store == nil || *r.Store }

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

// Options converts the request's model settings.
func (r *ResponsesRequest) Options() longhaul.ModelOptions {
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

// ClientTools converts the request's function tools.
func (r *ResponsesRequest) ClientTools() []longhaul.ToolSpec {
	var out []longhaul.ToolSpec
	for _, t := range r.Tools {
		if t.Type != "function" {
			continue
		}
		out = append(out, longhaul.ToolSpec{Name: t.Name, Description: t.Description, Parameters: ToolParams(t.Parameters), Strict: t.Strict != nil && *t.Strict})
	}
	return out
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
	// Webhook is the response's own webhook with its secret (Longhaul's
	// extension), only in the answer to the background request that named
	// one.
	Webhook *RunWebhook `json:"webhook,omitempty"`
	// searchResults says whether file_search_call items carry their
	// results (include: file_search_call.results); not on the
	SearchResults bool `json:"-"`
}

// Response statuses.
const (
	ResponseQueued     = "queued"
	ResponseInProgress = "in_progress"
	ResponseCompleted  = "completed"
	ResponseFailed     = "failed"
	ResponseCancelled  = "cancelled"
	ResponseIncomplete = "incomplete"
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
	InputTokensDetails  TokenDetails `json:"input_tokens_details"`
	OutputTokens        int          `json:"output_tokens"`
	OutputTokensDetails TokenDetails `json:"output_tokens_details"`
	TotalTokens         int          `json:"total_tokens"`
}

// TokenDetails breaks a token count down: the reasoning tokens the model
// endpoints reported (cached tokens are not known).
type TokenDetails struct {
	CachedTokens    *int `json:"cached_tokens,omitempty"`
	ReasoningTokens *int `json:"reasoning_tokens,omitempty"`
}

// responseUsage converts a run's usage.
func responseUsage(u longhaul.Usage) *ResponseUsage {
	zero, reasoning := 0, u.ReasoningTokens
	return &ResponseUsage{
		InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, TotalTokens: u.TotalTokens,
		InputTokensDetails: TokenDetails{CachedTokens: &zero}, OutputTokensDetails: TokenDetails{ReasoningTokens: &reasoning},
	}
}

// ResponseDeleted answers DELETE /v1/responses/{id}.
type ResponseDeleted = Deleted

// InputItemList answers GET /v1/responses/{id}/input_items.
type InputItemList = CursorPage[InputItem]
