package wire

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"unicode/utf8"

	"github.com/longhaul-dev/longhaul"
)

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

// A streamed response is derived from its run's log, so that a client that
// lost the stream resumes it exactly (GET /v1/responses/{id}?stream=true&
// starting_after=N): the renderer here turns the segment's durable events,
// and the live text of its running model calls, into stream events
// numbered one by one, and the numbering depends on the durable log alone.
// A model call's text is cut into deltas at boundaries that depend only on
// the text (see nextCut): live text is sent a delta at a time as each
// boundary is reached, the rest when the call's durable content event
// arrives; a follower that saw the live text and one that reads the log
// after the call get the same deltas under the same numbers. A resumed
// stream replays the derivation from the segment's start and sends what
// comes after N.
//
// Two limits: a model call whose attempt failed after its text started to
// stream is retried, and its live deltas already sent may differ from the
// text the retry produced (output_text.done and the response carry the
// durable text); and a durable event that shows as an output item (a tool
// call) while a model call streams would come before that call's message
// in a stream read from the log — a chat run calls tools only after the
// model call that asked for them ended, so neither happens in its ordinary
// course.
//
// Reasoning a model streamed is shown as a reasoning item before the
// message, its text a reasoning_text content part (openai-node 7.57.0
// responses.d.ts ResponseReasoningItem.Content), streamed as
// response.reasoning_text.delta events cut as the text's are, and closed
// (reasoning_text.done, content_part.done, output_item.done) once the
// answer begins or the call's durable content event comes.

// Cut sizes of text deltas: a delta ends after whitespace once it is
// minCut bytes long, or at the first character boundary past maxCut.
const (
	minCut = 16
	maxCut = 64
)

// nextCut is where the text delta starting at from ends, or -1 when text
// (so far; final says it is whole) does not decide it yet.
func nextCut(text string, from int, final bool) int {
	for q := from + minCut; q <= len(text); q++ {
		if c := text[q-1]; c == ' ' || c == '\n' || c == '\t' {
			return q
		}
		if q >= from+maxCut && q < len(text) && utf8.RuneStart(text[q]) {
			return q
		}
	}
	if final && from < len(text) {
		return len(text)
	}
	return -1
}

// respCall is what the renderer shows of one model call.
type respCall struct {
	rs       int  // output index of its reasoning item, -1 before it opened
	rsSent   int  // bytes of its reasoning sent as deltas
	reasoned bool // its reasoning is over: its item was closed (or never opened)
	msg      int  // output index of its message, -1 before it opened
	sent     int  // bytes of its text sent as deltas
	attempt  int
	frozen   bool // a retry voided the live text: wait for the durable text
}

// ResponseRenderer turns the events of one response's segment into stream
// events and keeps the response object up to date. It is pure.
type ResponseRenderer struct {
	resp  Response
	key   string
	seq   int64
	calls map[string]*respCall
	tools map[string]int // tool call id → output index of its mcp_call
	// usageFrom is the run's usage when the segment began.
	usageFrom longhaul.Usage
	ended     bool
}

// NewResponseRenderer starts the rendering of resp (its echo fields set, its
// output empty); usageFrom is the run's usage before the segment.
func NewResponseRenderer(resp Response, usageFrom longhaul.Usage) *ResponseRenderer {
	sum := sha256.Sum256([]byte(resp.ID))
	resp.Output = []OutputItem{}
	return &ResponseRenderer{resp: resp, key: hex.EncodeToString(sum[:6]), calls: map[string]*respCall{}, tools: map[string]int{}, usageFrom: usageFrom}
}

// event numbers one stream event.
func (r *ResponseRenderer) event(e StreamEvent) StreamEvent {
	e.SequenceNumber = r.seq
	r.seq++
	return e
}

// Snapshot is a copy of the response as it stands.
func (r *ResponseRenderer) Snapshot() *Response {
	c := r.resp
	c.Output = append([]OutputItem{}, r.resp.Output...)
	return &c
}

// SetUsageFrom sets the run's usage before the segment, which the
// segment's usage events count from.
func (r *ResponseRenderer) SetUsageFrom(u longhaul.Usage) { r.usageFrom = u }

// Ended reports whether the segment's final event has been rendered.
func (r *ResponseRenderer) Ended() bool { return r.ended }

// Unfinished marks the response failed: its run closed without finishing
// its log (it was terminated outside Longhaul).
func (r *ResponseRenderer) Unfinished() {
	r.resp.Status, r.resp.Error = ResponseFailed, &ResponseError{Code: "server_error", Message: "the run ended without finishing"}
}

// ErrorEvent is the numbered error event that ends a stream the server
// could not carry on.
func (r *ResponseRenderer) ErrorEvent(code, message string) StreamEvent {
	return r.event(StreamEvent{Type: "error", Code: code, Message: message})
}

// Begin is the stream's first events: created (queued for a background
// response) and in_progress.
func (r *ResponseRenderer) Begin(background bool) []StreamEvent {
	r.resp.Status = ResponseInProgress
	created := r.Snapshot()
	if background {
		created.Status = ResponseQueued
	}
	out := []StreamEvent{r.event(StreamEvent{Type: "response.created", Response: created})}
	return append(out, r.event(StreamEvent{Type: "response.in_progress", Response: r.Snapshot()}))
}

// itemID is the id of the output item at index of this response.
func (r *ResponseRenderer) itemID(kind string, index int) string {
	return kind + "_" + r.key + "_" + strconv.Itoa(index)
}

// add appends an output item and returns its added event.
func (r *ResponseRenderer) add(it OutputItem) (int, StreamEvent) {
	i := len(r.resp.Output)
	r.resp.Output = append(r.resp.Output, it)
	c := it
	return i, r.event(StreamEvent{Type: "response.output_item.added", OutputIndex: &i, Item: &c})
}

// doneItem is the output_item.done event of the item at index i.
func (r *ResponseRenderer) doneItem(i int) StreamEvent {
	c := r.resp.Output[i]
	return r.event(StreamEvent{Type: "response.output_item.done", OutputIndex: &i, Item: &c})
}

func (r *ResponseRenderer) call(name string) *respCall {
	c := r.calls[name]
	if c == nil {
		c = &respCall{msg: -1, rs: -1}
		r.calls[name] = c
	}
	return c
}

// Live takes the live reasoning and text of a model call's attempt so far
// and returns the events they complete.
func (r *ResponseRenderer) Live(name string, attempt int, reasoning, text string) []StreamEvent {
	c := r.call(name)
	if attempt > c.attempt && c.attempt != 0 {
		c.frozen = true
	}
	c.attempt = max(c.attempt, attempt)
	if c.frozen || r.ended {
		return nil
	}
	out := r.reasoning(c, reasoning, text != "")
	return append(out, r.text(c, text, false)...)
}

// Reset takes a model call's retry: the text sent so far may not come
// again, so the rest waits for the call's durable text.
func (r *ResponseRenderer) Reset(name string) {
	c := r.call(name)
	if c.msg >= 0 || c.rs >= 0 {
		c.frozen = true
	}
}

// reasoning sends what of a call's reasoning is due: the reasoning item's
// opening, the deltas up to the last cut the reasoning decides, and, once
// it is over (final: the answer began, or the call ended), the rest and
// the item's end.
func (r *ResponseRenderer) reasoning(c *respCall, reasoning string, final bool) []StreamEvent {
	if c.reasoned || reasoning == "" && c.rs < 0 {
		c.reasoned = c.reasoned || final
		return nil
	}
	var out []StreamEvent
	zero := 0
	if c.rs < 0 {
		var added StreamEvent
		c.rs, added = r.add(OutputItem{Type: "reasoning", ID: r.itemID("rs", len(r.resp.Output)), Status: ResponseInProgress, Summary: &[]SummaryPart{}, Content: &[]ContentPart{}})
		part := ContentPart{Type: "reasoning_text"}
		out = append(out, added, r.event(StreamEvent{Type: "response.content_part.added", ItemID: r.resp.Output[c.rs].ID, OutputIndex: &c.rs, ContentIndex: &zero, Part: &part}))
	}
	i, id := c.rs, r.resp.Output[c.rs].ID
	for {
		cut := nextCut(reasoning, c.rsSent, final)
		if cut < 0 {
			break
		}
		delta := reasoning[c.rsSent:cut]
		c.rsSent = cut
		out = append(out, r.event(StreamEvent{Type: "response.reasoning_text.delta", ItemID: id, OutputIndex: &i, ContentIndex: &zero, Delta: &delta}))
	}
	if !final {
		return out
	}
	c.reasoned = true
	text := reasoning
	part := ContentPart{Type: "reasoning_text", Text: text}
	r.resp.Output[i].Status = ResponseCompleted
	r.resp.Output[i].Content = &[]ContentPart{part}
	return append(out,
		r.event(StreamEvent{Type: "response.reasoning_text.done", ItemID: id, OutputIndex: &i, ContentIndex: &zero, Text: &text}),
		r.event(StreamEvent{Type: "response.content_part.done", ItemID: id, OutputIndex: &i, ContentIndex: &zero, Part: &part}),
		r.doneItem(i))
}

// text sends what of a call's text is due: the message item's opening, and
// the deltas up to the last cut the text decides (final: all of it).
func (r *ResponseRenderer) text(c *respCall, text string, final bool) []StreamEvent {
	if text == "" {
		return nil
	}
	var out []StreamEvent
	if c.msg < 0 {
		var added StreamEvent
		c.msg, added = r.add(OutputItem{Type: "message", ID: r.itemID("msg", len(r.resp.Output)), Status: ResponseInProgress, Role: "assistant", Content: &[]ContentPart{}})
		zero, part := 0, outputTextPart("")
		out = append(out, added, r.event(StreamEvent{Type: "response.content_part.added", ItemID: r.resp.Output[c.msg].ID, OutputIndex: &c.msg, ContentIndex: &zero, Part: &part}))
	}
	for {
		cut := nextCut(text, c.sent, final)
		if cut < 0 {
			return out
		}
		delta, zero, msg := text[c.sent:cut], 0, c.msg
		c.sent = cut
		out = append(out, r.event(StreamEvent{Type: "response.output_text.delta", ItemID: r.resp.Output[msg].ID, OutputIndex: &msg, ContentIndex: &zero, Delta: &delta, Logprobs: &[]any{}}))
	}
}

// Durable takes one durable event of the segment and returns its stream
// events; after the event that ends the segment (client_tool_calls or
// done) it returns the final event, and end reports true.
func (r *ResponseRenderer) Durable(e longhaul.Event) (out []StreamEvent, end bool) {
	if r.ended {
		return nil, true
	}
	switch e.Type {
	case longhaul.EventContent:
		out = rendered(e, r.content)
	case longhaul.EventToolStart:
		out = rendered(e, r.toolStart)
	case longhaul.EventToolOutput:
		out = rendered(e, r.toolOutput)
	case longhaul.EventClientToolCalls:
		out = rendered(e, func(d longhaul.ClientToolCallsData) []StreamEvent { return r.functionCalls(d.Calls) })
		r.resp.Status = ResponseCompleted
		return append(out, r.finish()), true
	case longhaul.EventUsage:
		var u longhaul.Usage
		if e.Decode(&u) == nil {
			r.resp.Usage = responseUsage(longhaul.Usage{
				PromptTokens:     u.PromptTokens - r.usageFrom.PromptTokens,
				CompletionTokens: u.CompletionTokens - r.usageFrom.CompletionTokens,
				TotalTokens:      u.TotalTokens - r.usageFrom.TotalTokens,
				ReasoningTokens:  u.ReasoningTokens - r.usageFrom.ReasoningTokens,
			})
		}
	case longhaul.EventError:
		var d longhaul.ErrorData
		if e.Decode(&d) == nil {
			code := d.Code
			if code == "" {
				code = "server_error"
			}
			r.resp.Error = &ResponseError{Code: code, Message: d.Message}
		}
	case longhaul.EventDone:
		var d longhaul.DoneData
		_ = e.Decode(&d)
		r.resp.Status = r.doneStatus(d)
		return append(out, r.finish()), true
	}
	return out, false
}

// rendered is the stream events render gives e's data, decoded as D; none
// when the data does not decode.
func rendered[D any](e longhaul.Event, render func(D) []StreamEvent) []StreamEvent {
	var d D
	if e.Decode(&d) != nil {
		return nil
	}
	return render(d)
}

// doneStatus is the response status of a run that ended as d says.
func (r *ResponseRenderer) doneStatus(d longhaul.DoneData) string {
	switch {
	case d.Status == "cancelled":
		return ResponseCancelled
	case d.Status == "failed" || r.resp.Error != nil:
		if r.resp.Error == nil {
			r.resp.Error = &ResponseError{Code: "server_error", Message: "the run failed"}
		}
		return ResponseFailed
	case d.FinishReason == "length":
		r.resp.IncompleteDetails = &IncompleteDetails{Reason: "max_output_tokens"}
		return ResponseIncomplete
	}
	return ResponseCompleted
}

// finish is the final event: response.completed, .incomplete, or .failed
// (a cancelled response too: the API has no event of its own for it).
func (r *ResponseRenderer) finish() StreamEvent {
	r.ended = true
	if r.resp.Usage == nil {
		r.resp.Usage = responseUsage(longhaul.Usage{})
	}
	typ := "response.completed"
	switch r.resp.Status {
	case ResponseIncomplete:
		typ = "response.incomplete"
	case ResponseFailed, ResponseCancelled:
		typ = "response.failed"
	}
	return r.event(StreamEvent{Type: typ, Response: r.Snapshot()})
}

// content takes a model call's whole text: its reasoning item and message,
// what the live text did not send of them, and the message's end.
func (r *ResponseRenderer) content(d longhaul.ContentData) []StreamEvent {
	c := r.call(d.Call)
	delete(r.calls, d.Call)
	out := r.reasoning(c, d.Reasoning, true)
	out = append(out, r.text(c, d.Text, true)...)
	if c.msg < 0 {
		return out
	}
	i, zero, text := c.msg, 0, d.Text
	id := r.resp.Output[i].ID
	part := outputTextPart(d.Text)
	status := ResponseCompleted
	if d.Cancelled {
		status = ResponseIncomplete
	}
	r.resp.Output[i].Status = status
	r.resp.Output[i].Content = &[]ContentPart{part}
	out = append(out,
		r.event(StreamEvent{Type: "response.output_text.done", ItemID: id, OutputIndex: &i, ContentIndex: &zero, Text: &text, Logprobs: &[]any{}}),
		r.event(StreamEvent{Type: "response.content_part.done", ItemID: id, OutputIndex: &i, ContentIndex: &zero, Part: &part}),
		r.doneItem(i))
	return out
}

// toolStart opens the mcp_call item of one of the agent's tool calls, or
// for document_search a file_search_call item (in_progress, then
// searching, as OpenAI streams one: openai-node responses.d.ts
// ResponseFileSearchCall{InProgress,Searching,Completed}Event).
func (r *ResponseRenderer) toolStart(d longhaul.ToolStartData) []StreamEvent {
	if _, ok := r.tools[d.ToolCallID]; ok {
		return nil
	}
	if d.Name == documentSearchTool {
		queries := searchQuery(d.Arguments)
		i, added := r.add(OutputItem{Type: "file_search_call", ID: r.itemID("fs", len(r.resp.Output)), Status: ResponseInProgress, Queries: &queries})
		r.tools[d.ToolCallID] = i
		id := r.resp.Output[i].ID
		r.resp.Output[i].Status = "searching"
		return []StreamEvent{added,
			r.event(StreamEvent{Type: "response.file_search_call.in_progress", ItemID: id, OutputIndex: &i}),
			r.event(StreamEvent{Type: "response.file_search_call.searching", ItemID: id, OutputIndex: &i})}
	}
	args := d.Arguments
	i, added := r.add(OutputItem{Type: "mcp_call", ID: r.itemID("mcp", len(r.resp.Output)), Status: ResponseInProgress, Name: d.Name, Arguments: &args, ServerLabel: mcpServerLabel})
	r.tools[d.ToolCallID] = i
	id := r.resp.Output[i].ID
	return []StreamEvent{added, r.event(StreamEvent{Type: "response.mcp_call.in_progress", ItemID: id, OutputIndex: &i})}
}

// toolOutput closes the mcp_call item of a tool call with its output or
// error.
func (r *ResponseRenderer) toolOutput(d longhaul.ToolOutputData) []StreamEvent {
	var out []StreamEvent
	i, ok := r.tools[d.ToolCallID]
	if !ok {
		out = r.toolStart(longhaul.ToolStartData{ToolCallID: d.ToolCallID, Name: d.Name})
		i = r.tools[d.ToolCallID]
	}
	it := &r.resp.Output[i]
	if it.Type == "file_search_call" {
		// OpenAI's stream has no failed event for a file search: a failed
		// one completes with status failed.
		it.Status = ResponseCompleted
		if d.Error {
			it.Status = ResponseFailed
		} else if r.resp.SearchResults {
			it.Results = searchResults(d.Output)
		}
		return append(out, r.event(StreamEvent{Type: "response.file_search_call.completed", ItemID: it.ID, OutputIndex: &i}), r.doneItem(i))
	}
	typ := "response.mcp_call.completed"
	text := d.Output
	if d.Error {
		it.Status, it.Error = ResponseFailed, &text
		typ = "response.mcp_call.failed"
	} else {
		it.Status, it.Output = ResponseCompleted, &text
	}
	return append(out, r.event(StreamEvent{Type: typ, ItemID: it.ID, OutputIndex: &i}), r.doneItem(i))
}

// functionCalls shows the client's tool calls the model made as
// function_call items: added, their arguments, done.
func (r *ResponseRenderer) functionCalls(calls []longhaul.ToolCall) []StreamEvent {
	var out []StreamEvent
	for _, tc := range calls {
		empty := ""
		i, added := r.add(OutputItem{Type: "function_call", ID: r.itemID("fc", len(r.resp.Output)), Status: ResponseInProgress, CallID: tc.ID, Name: tc.Name, Arguments: &empty})
		id, args := r.resp.Output[i].ID, tc.Arguments
		r.resp.Output[i].Arguments, r.resp.Output[i].Status = &args, ResponseCompleted
		out = append(out, added,
			r.event(StreamEvent{Type: "response.function_call_arguments.delta", ItemID: id, OutputIndex: &i, Delta: &args}),
			r.event(StreamEvent{Type: "response.function_call_arguments.done", ItemID: id, OutputIndex: &i, Arguments: &args, Name: tc.Name}),
			r.doneItem(i))
	}
	return out
}
