package wire

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
)

// The metadata keys under which runs started before
// contract.AgentInput.Response existed keep their Responses state (see
// ResponseStateOf); they are never echoed in a response's metadata.
const (
	metaPrefix        = "longhaul.responses."
	metaInstructions  = metaPrefix + "instructions"
	metaPrevious      = metaPrefix + "previous_response_id"
	metaStore         = metaPrefix + "store"
	metaBackground    = metaPrefix + "background"
	metaInputFrom     = metaPrefix + "input_from"
	metaCreated       = metaPrefix + "created_at"
	metaSearchResults = metaPrefix + "file_search_results"
)

// ResponseStateOf is what the Responses API kept of the request that
// started a run with in: its typed state, or for a run started before
// there was one, what its metadata keys say.
func ResponseStateOf(in contract.AgentInput) contract.ResponseState {
	if in.Response != nil {
		return *in.Response
	}
	m := in.Metadata
	from, _ := strconv.Atoi(m[metaInputFrom])
	created, _ := strconv.ParseInt(m[metaCreated], 10, 64)
	return contract.ResponseState{
		Instructions:       m[metaInstructions] == "1",
		PreviousResponseID: m[metaPrevious],
		Store:              m[metaStore] != "false",
		Background:         m[metaBackground] == "true",
		InputFrom:          from,
		CreatedAt:          created,
		SearchResults:      m[metaSearchResults] == "1",
	}
}

// callerMetadata is the metadata the client gave the run: without the
// Responses state an older run keeps there.
func callerMetadata(in contract.AgentInput) map[string]string {
	out := map[string]string{}
	for k, v := range in.Metadata {
		if !strings.HasPrefix(k, metaPrefix) {
			out[k] = v
		}
	}
	return out
}

// ResponseBase is the response object of the segment id of a run started
// with in, before any of its output: what the request asked for. created
// is when the segment began; a run's first response was created when its
// request came.
func ResponseBase(id string, in contract.AgentInput, created int64, previous *string) Response {
	o, state := in.Options, ResponseStateOf(in)
	if _, start, _ := ParseResponseID(id); start == 0 && state.CreatedAt != 0 {
		created = state.CreatedAt
	}
	r := Response{
		ID: id, Object: "response", CreatedAt: created, Status: ResponseInProgress,
		Background: state.Background, Model: in.Agent,
		Output: []OutputItem{}, ParallelToolCalls: o.ParallelToolCalls == nil || *o.ParallelToolCalls,
		Store: state.Store, Temperature: o.Temperature, TopP: o.TopP,
		Text: ResponseText{Format: &ResponseTextFormat{Type: longhaul.FormatText}}, ToolChoice: responsesToolChoice(o.ToolChoice),
		Tools: []ResponseTool{}, Truncation: cmp.Or(o.Truncation, longhaul.TruncationDisabled), Metadata: callerMetadata(in),
		SearchResults: state.SearchResults,
	}
	if state.Instructions && len(in.Messages) > 0 {
		r.Instructions = &in.Messages[0].Content
	}
	if o.MaxCompletionTokens > 0 {
		r.MaxOutputTokens = &o.MaxCompletionTokens
	}
	if previous != nil {
		r.PreviousResponseID = previous
	} else if p := state.PreviousResponseID; p != "" {
		r.PreviousResponseID = &p
	}
	if o.ReasoningEffort != "" {
		r.Reasoning.Effort = &o.ReasoningEffort
	}
	if f := o.ResponseFormat; f != nil {
		strict := f.Strict
		r.Text.Format = &ResponseTextFormat{Type: f.Type, Name: f.Name, Schema: f.Schema, Strict: &strict}
	}
	for _, t := range in.ClientTools {
		strict := t.Strict
		r.Tools = append(r.Tools, ResponseTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: t.Parameters, Strict: &strict})
	}
	return r
}

// WithoutInstructions is a run's input conversation less the system
// message its request's instructions became: instructions do not carry
// over to the next response.
func WithoutInstructions(in contract.AgentInput) []longhaul.Message {
	msgs := in.Messages
	if ResponseStateOf(in).Instructions && len(msgs) > 0 {
		msgs = msgs[1:]
	}
	return slices.Clone(msgs)
}

// SegmentStart reports whether a response of the run whose log this is
// starts after offset start: its client_tool_calls event is there.
func SegmentStart(log []longhaul.Event, start int64) bool {
	return slices.ContainsFunc(log, func(e longhaul.Event) bool {
		return e.Offset == start && e.Type == longhaul.EventClientToolCalls
	})
}

// SegmentTime is when the segment after start began: the time of the
// event at start.
func SegmentTime(log []longhaul.Event, start int64) int64 {
	for _, e := range log {
		if e.Offset == start {
			return e.Time.Unix()
		}
	}
	return time.Now().Unix()
}

// PreviousSegment is the id of the response before the segment of run
// after start: the one that ended with the client_tool_calls event at
// start.
func PreviousSegment(run string, log []longhaul.Event, start int64) *string {
	prev := int64(0)
	for _, e := range log {
		if e.Offset >= start {
			break
		}
		if e.Type == longhaul.EventClientToolCalls {
			prev = e.Offset
		}
	}
	id := ResponseID(run, prev)
	return &id
}

// AfterCalls reads the log after a client_tool_calls event: moved, the
// run took results and went on; ended, it ended without them.
func AfterCalls(rest []longhaul.Event) (moved, ended bool) {
	for _, e := range rest {
		var d longhaul.DoneData
		switch {
		case e.Type == longhaul.EventDone && e.Decode(&d) == nil && d.FinishReason == "tool_calls":
			return false, true
		case e.Type != longhaul.EventUsage:
			moved = true
		}
	}
	return moved, false
}

// CallIDs lists the ids of calls.
func CallIDs(calls []longhaul.ToolCall) string {
	var ids []string
	for _, c := range calls {
		ids = append(ids, c.ID)
	}
	return strings.Join(ids, ", ")
}

// EndsWithCalls reports whether the last message of msgs asks for calls.
func EndsWithCalls(msgs []longhaul.Message, calls []longhaul.ToolCall) bool {
	if len(msgs) == 0 {
		return false
	}
	last := msgs[len(msgs)-1]
	return last.Role == longhaul.RoleAssistant && len(last.ToolCalls) == len(calls) && last.ToolCalls[0].ID == calls[0].ID
}
