package activities

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/natsbus"
	"github.com/longhaul-dev/longhaul/internal/window"
	"github.com/sashabaranov/go-openai"
	"go.temporal.io/sdk/temporal"
)

// This file decodes a model's streamed answer as the servers send it:
// go-openai's stream reader finds the frames (RecvRaw), and each is read
// here into streamChunk, which knows the fields go-openai's own type lacks.

// streamChunk is one frame of a Chat Completions stream.
type streamChunk struct {
	openai.ChatCompletionStreamResponse
	Choices []chunkChoice `json:"choices"`
	// Error is an error frame that go-openai's reader let through (one not
	// starting `data: {"error":`), read as its message.
	Error json.RawMessage `json:"error,omitempty"`
	// Message is the message of a frame whose object is "error" (vLLM's
	// ErrorResponse before it was nested under "error").
	Message string `json:"message,omitempty"`
}

type chunkChoice struct {
	openai.ChatCompletionStreamChoice
	Delta chunkDelta `json:"delta"`
}

// chunkDelta is a choice's delta with every reasoning field servers use:
// reasoning_content (DeepSeek; go-openai's field) and reasoning (Ollama,
// ollama v0.32.15 openai/openai.go:46 Delta.Reasoning, filled from the
// message's Thinking at :335; vLLM since it renamed reasoning_content).
type chunkDelta struct {
	openai.ChatCompletionStreamChoiceDelta
	Reasoning string          `json:"reasoning,omitempty"`
	ToolCalls []chunkToolCall `json:"tool_calls,omitempty"`
}

// reasoning is the delta's reasoning, whichever field carries it.
func (d chunkDelta) reasoning() string {
	if d.ReasoningContent != "" {
		return d.ReasoningContent
	}
	return d.Reasoning
}

type chunkToolCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Function struct {
		Name      string        `json:"name,omitempty"`
		Arguments jsonArguments `json:"arguments,omitempty"`
	} `json:"function"`
}

// jsonArguments is a tool call's arguments: a string of JSON, as OpenAI
// sends them, or (some gateways and servers) the JSON object itself,
// taken as its JSON text.
type jsonArguments string

func (a *jsonArguments) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0 || string(b) == "null":
		*a = ""
		return nil
	case b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*a = jsonArguments(s)
		return nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return err
	}
	*a = jsonArguments(buf.String())
	return nil
}

// decodeChunk reads one frame; a frame that is an error is returned as
// the error it reports.
func decodeChunk(raw []byte) (streamChunk, error) {
	var c streamChunk
	if err := json.Unmarshal(raw, &c); err != nil {
		return streamChunk{}, temporal.NewApplicationErrorWithCause(
			fmt.Sprintf("the model stream sent a frame that is not a chunk: %.200s", raw), longhaul.ErrTypeModelUnavailable, err)
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		return streamChunk{}, midStreamError(frameError(c.Error))
	}
	if c.Object == "error" {
		var e openai.APIError
		if json.Unmarshal(raw, &e) != nil || e.Message == "" {
			e.Message = c.Message
		}
		return streamChunk{}, midStreamError(&e)
	}
	return c, nil
}

// frameError reads an error frame's "error": an object (OpenAI's shape)
// or a bare message.
func frameError(raw json.RawMessage) *openai.APIError {
	var e openai.APIError
	if json.Unmarshal(raw, &e) == nil && e.Message != "" {
		return &e
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return &openai.APIError{Message: s}
	}
	return &openai.APIError{Message: string(raw)}
}

// midStreamError is an error frame a server sent after the stream began,
// with the server's words: OpenAI's and vLLM's `data: {"error": {...}}`
// (vLLM's create_streaming_error_response, vllm/entrypoints/openai/
// engine/serving.py: ErrorInfo's message, type, and code, the HTTP
// status as a number). It is retried, unless its code says the request
// itself is at fault (a 4xx) or too long for the model.
func midStreamError(e *openai.APIError) error {
	status := 0
	switch c := e.Code.(type) {
	case int:
		status = c
	case float64:
		status = int(c)
	case string:
		if c == longhaul.ErrTypeContextLength {
			return endpointTooLong(0, e.Message, e)
		}
	}
	msg := "the model endpoint failed mid-answer: " + e.Message
	if e.Type != "" {
		msg += " (" + e.Type + ")"
	}
	if status >= 400 && status < 500 && status != 408 && status != 429 {
		return temporal.NewNonRetryableApplicationError(msg, longhaul.ErrTypeModelRejected, e, status)
	}
	return temporal.NewApplicationErrorWithCause(msg, longhaul.ErrTypeModelUnavailable, e)
}

// streamFrameError turns what go-openai's reader reports for an error
// frame (`data: {"error": ...}`, which it reads itself: an *APIError
// without an HTTP status) into midStreamError; any other error is
// returned as it is.
func streamFrameError(err error) error {
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) && apiErr.HTTPStatusCode == 0 {
		return midStreamError(apiErr)
	}
	return err
}

// streamed assembles a model's answer from the chunks of its stream.
type streamed struct {
	resp    contract.ModelResponse
	content strings.Builder
	think   thinking
	// tags parts the content into a <think> block at its start and the
	// answer.
	tags thinkTags
	// calls are the tool calls by their index in the answer.
	calls map[int]*longhaul.ToolCall
	// size is the bytes of output so far, against the output cap.
	size int
	// empty is set while the last chunk carried nothing: no text,
	// reasoning, tool call, finish reason or usage.
	empty bool
}

// chunkSize is the output one chunk adds: text, reasoning, tool calls'
// names and arguments.
func chunkSize(c streamChunk) int {
	size := 0
	for _, ch := range c.Choices {
		size += len(ch.Delta.Content) + len(ch.Delta.reasoning())
		for _, tc := range ch.Delta.ToolCalls {
			size += len(tc.Function.Name) + len(tc.Function.Arguments)
		}
	}
	return size
}

// add takes in one chunk, writing its text and reasoning to out.
func (st *streamed) add(c streamChunk, out *natsbus.CallStream) {
	st.empty = c.Usage == nil
	if c.Model != "" {
		st.resp.Model = c.Model
	}
	if u := c.Usage; u != nil {
		st.resp.Usage = longhaul.Usage{
			PromptTokens:     u.PromptTokens,
			CompletionTokens: u.CompletionTokens,
			TotalTokens:      u.TotalTokens,
		}
		if d := u.CompletionTokensDetails; d != nil {
			st.resp.Usage.ReasoningTokens = d.ReasoningTokens
		}
	}
	for _, ch := range c.Choices {
		if ch.FinishReason != "" {
			st.resp.FinishReason = string(ch.FinishReason)
			st.empty = false
		}
		if r := ch.Delta.reasoning(); r != "" {
			st.empty = false
			st.think.reason(r, out)
		}
		if d := ch.Delta.Content; d != "" {
			st.empty = false
			reasoning, text := st.tags.feed(d)
			st.think.reason(reasoning, out)
			st.answer(text, out)
		}
		for i, tc := range ch.Delta.ToolCalls {
			st.empty = false
			idx := i
			if tc.Index != nil {
				idx = *tc.Index
			}
			call, ok := st.calls[idx]
			if !ok {
				call = &longhaul.ToolCall{}
				st.calls[idx] = call
			}
			if tc.ID != "" {
				call.ID = tc.ID
			}
			call.Name += tc.Function.Name
			call.Arguments += string(tc.Function.Arguments)
		}
	}
}

// answer takes a piece of the answer's text.
func (st *streamed) answer(text string, out *natsbus.CallStream) {
	if text == "" {
		return
	}
	st.think.answer()
	st.content.WriteString(text)
	out.Write(text)
}

// response is the answer once the stream ended: its text, reasoning and
// tool calls in order. A stream that ended without a finish reason was cut
// off (retryable).
func (st *streamed) response(req openai.ChatCompletionRequest, out *natsbus.CallStream) (contract.ModelResponse, error) {
	if st.resp.FinishReason == "" {
		if st.empty {
			// Ollama's OpenAI route turns an error it meets mid-stream
			// into such a chunk and ends the stream: the runner's
			// {"error": ...} goes through ChatWriter.Write with the
			// 200 already sent (ollama v0.32.15 server/routes.go:2120
			// streamResponse, middleware/openai.go:176-182), which
			// decodes it as a ChatResponse and writes an empty chunk
			// (:80-125), so its words are in the server's log only.
			return contract.ModelResponse{}, temporal.NewApplicationError(
				"the model stream failed mid-answer: it ended on an empty chunk without a finish reason, as Ollama ends a stream whose generation failed (its log has the error)", longhaul.ErrTypeModelUnavailable)
		}
		return contract.ModelResponse{}, temporal.NewApplicationError("model stream ended without a finish reason", longhaul.ErrTypeModelUnavailable)
	}
	reasoning, text := st.tags.flush()
	st.think.reason(reasoning, out)
	st.answer(text, out)
	resp := st.resp
	resp.Message.Role = longhaul.RoleAssistant
	resp.Message.Content = st.content.String()
	resp.Reasoning = st.think.text.String()
	resp.Message.Reasoning = resp.Reasoning
	idxs := make([]int, 0, len(st.calls))
	for i := range st.calls {
		idxs = append(idxs, i)
	}
	sort.Ints(idxs)
	for _, i := range idxs {
		resp.Message.ToolCalls = append(resp.Message.ToolCalls, *st.calls[i])
	}
	if resp.Usage == (longhaul.Usage{}) {
		resp.Usage = estimateUsage(req, resp)
	}
	return resp, nil
}

// estimateUsage is the usage of a call whose server reported none
// (stream_options.include_usage ignored): the request's estimate, and
// the answer's, its reasoning counted, which the server spent tokens on
// all the same.
func estimateUsage(req openai.ChatCompletionRequest, resp contract.ModelResponse) longhaul.Usage {
	out := window.Text(resp.Message.Content)
	think := window.Text(resp.Reasoning)
	for _, tc := range resp.Message.ToolCalls {
		out += window.Text(tc.Name) + window.Text(tc.Arguments)
	}
	in := window.Request(req)
	return longhaul.Usage{PromptTokens: in, CompletionTokens: out + think, TotalTokens: in + out + think, ReasoningTokens: think}
}

// thinking streams a model call's reasoning, which comes before its
// answer, as the call's reasoning (natsbus.CallStream.WriteReasoning):
// never part of its text. Reasoning that comes after the answer began is
// dropped, so the reasoning a follower saw live is the call's reasoning
// as it ends, and a position in the call's output can count reasoning
// bytes and then text bytes.
type thinking struct {
	text   strings.Builder
	closed bool
}

// reason takes a piece of reasoning.
func (t *thinking) reason(d string, out *natsbus.CallStream) {
	if d == "" || t.closed {
		return
	}
	t.text.WriteString(d)
	out.WriteReasoning(d)
}

// answer notes that the answer begins: later reasoning is dropped.
func (t *thinking) answer() { t.closed = true }

// The tags of a think block a server without a reasoning parser leaves at
// the start of the content (qwen3, deepseek-r1: their templates open the
// answer with it).
const (
	thinkOpen  = "<think>"
	thinkClose = "</think>"
)

// thinkTags parts streamed content that may start with a <think> block
// into the block's text (reasoning) and the answer, piece by piece: a
// piece that may be the start of a tag is held until the next shows what
// it is. The newlines templates write inside the tags ("<think>\n",
// "\n</think>\n\n") are not the reasoning's.
type thinkTags struct {
	state int
	held  string
	// fresh is set until the block's first text came.
	fresh bool
}

const (
	tagsStart = iota
	tagsThink
	tagsAfter // the block ended; whitespace before the answer is dropped
	tagsAnswer
)

// feed takes the next piece of content.
func (tt *thinkTags) feed(t string) (reasoning, text string) {
	t, tt.held = tt.held+t, ""
	if tt.state == tagsStart {
		lead := strings.TrimLeft(t, " \t\r\n")
		switch {
		case len(lead) < len(thinkOpen) && strings.HasPrefix(thinkOpen, lead):
			tt.held = t
			return "", ""
		case strings.HasPrefix(lead, thinkOpen):
			tt.state, tt.fresh, t = tagsThink, true, lead[len(thinkOpen):]
		default:
			tt.state = tagsAnswer
		}
	}
	if tt.state == tagsThink {
		if tt.fresh && t != "" {
			t, tt.fresh = strings.TrimPrefix(t, "\n"), false
		}
		i := strings.Index(t, thinkClose)
		if i < 0 {
			k := tagStart(t, thinkClose)
			if k > 0 && t[k-1] == '\n' {
				k--
			}
			tt.held = t[k:]
			return t[:k], ""
		}
		reasoning, t, tt.state = strings.TrimSuffix(t[:i], "\n"), t[i+len(thinkClose):], tagsAfter
	}
	if tt.state == tagsAfter {
		t = strings.TrimLeft(t, " \t\r\n")
		if t == "" {
			return reasoning, ""
		}
		tt.state = tagsAnswer
	}
	return reasoning, t
}

// flush is what is held once the content ended: an unclosed block is all
// reasoning (the model ran out of tokens while thinking).
func (tt *thinkTags) flush() (reasoning, text string) {
	held := tt.held
	tt.held = ""
	switch tt.state {
	case tagsThink:
		return strings.TrimSuffix(held, "\n"), ""
	case tagsStart:
		return "", held
	}
	return "", ""
}

// tagStart is where a suffix of t that begins tag starts (len(t) when
// none does).
func tagStart(t, tag string) int {
	for k := max(0, len(t)-len(tag)+1); k < len(t); k++ {
		if strings.HasPrefix(tag, t[k:]) {
			return k
		}
	}
	return len(t)
}

// splitThink parts a whole answer's content into the <think> block at its
// start (a server without a reasoning parser leaves it there) and the
// answer after it.
func splitThink(content string) (reasoning, text string) {
	var tt thinkTags
	reasoning, text = tt.feed(content)
	r, t := tt.flush()
	return reasoning + r, text + t
}

// wholeUsage is the usage a whole (not streamed) answer to req reports,
// with its reasoning tokens; estimated, its thought counted, when the
// server reported none.
func wholeUsage(req openai.ChatCompletionRequest, resp openai.ChatCompletionResponse) longhaul.Usage {
	u := resp.Usage
	out := longhaul.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	if d := u.CompletionTokensDetails; d != nil {
		out.ReasoningTokens = d.ReasoningTokens
	}
	if out != (longhaul.Usage{}) || len(resp.Choices) == 0 {
		return out
	}
	reasoning, text := splitThink(resp.Choices[0].Message.Content)
	return estimateUsage(req, contract.ModelResponse{Message: longhaul.Message{Content: text}, Reasoning: reasoning})
}
