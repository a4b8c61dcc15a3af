package api

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/skills"
)

// This file is OpenAI's Responses API: POST /v1/responses and GET, cancel,
// DELETE and input_items of a response. A response is a run, or the
// segment of a run after it stopped for the client's function calls (see
// responses_types.go); everything a response shows is rebuilt from the
// run's durable state — its first execution's input (the started event of
// its history) and its event log — so any API process answers for it.
//
// previous_response_id continues a conversation: a new run gets the
// previous run's whole conversation (its input, less its instructions, and
// the messages its result added) and the new input; function_call_output
// items that answer a run waiting for them are delivered to that run
// instead, with or without previous_response_id (a client that resends the
// whole history, as the Agents SDK does, continues the run too). A retried
// delivery attaches to the segment the first one started.
//
// These runs carry no chat id: their conversation comes whole from durable
// state, and the conversation store would restore tool calls into a
// history that already holds them. store: false deletes the run (its
// current execution, with its stored outputs) when the request ends,
// however it ends: the response complete, the client gone, the wait timed
// out, an error. A run still going is stopped then: nobody can read its
// answer any more. A mark in the blob store makes it read as gone at once,
// while Temporal finishes the deletion; the run marks itself so at its end
// too (see workflows/forget.go), should the API process die first.

// Options of reading a response.
const (
	// cancelWait bounds how long a cancel waits for the run to end, so
	// that the response it returns shows it cancelled.
	cancelWait = 10 * time.Second
	// readResultTimeout bounds the read of a completed run's result.
	readResultTimeout = 10 * time.Second
	// defaultItemsLimit and maxItemsLimit bound a page of input items.
	defaultItemsLimit = 20
	maxItemsLimit     = 100
)

// responseCall is one POST /v1/responses request on its way: what it asks,
// for which agent, and its input as messages and items.
type responseCall struct {
	req         *ResponsesRequest
	agent       *skills.Agent
	items       []InputItem
	msgs        []longhaul.Message
	opts        longhaul.ModelOptions
	clientTools []longhaul.ToolSpec
	stores      []string
}

// createResponse answers POST /v1/responses: function_call_output items
// that answer a run waiting for them continue it (continueResponse);
// otherwise a new run starts (startResponse).
func (s *Server) createResponse(c *fiber.Ctx) error {
	rc, err := s.readResponseRequest(c)
	if err != nil {
		return err
	}
	if done, err := s.continueResponse(c, rc); done || err != nil {
		return err
	}
	return s.startResponse(c, rc)
}

// readResponseRequest reads and checks a Responses request: its body, its
// agent, its input, its client tools and vector stores.
func (s *Server) readResponseRequest(c *fiber.Ctx) (*responseCall, error) {
	var req ResponsesRequest
	if err := json.Unmarshal(c.Body(), &req); err != nil {
		return nil, errBadRequest("invalid JSON body: " + jsonProblem(err))
	}
	if err := req.validate(); err != nil {
		return nil, errBadRequest(err.Error())
	}
	agent, err := s.agentFor(req.Model, principal(c).User)
	if err != nil {
		return nil, err
	}
	items, err := inputItems(req.Input)
	if err != nil {
		return nil, errBadRequest(err.Error())
	}
	newMsgs, err := itemsToMessages(items)
	if err != nil {
		return nil, errBadRequest(err.Error())
	}
	if err := s.cfg.Images.checkInputImages(items); err != nil {
		return nil, err
	}
	opts, clientTools := req.options(), req.clientTools()
	if err := s.checkClientTools(agent, principal(c).User, clientTools, opts.ToolChoice, "tools[%d]"); err != nil {
		return nil, err
	}
	stores := req.vectorStores()
	if err := s.checkVectorStores(c.UserContext(), principal(c).Name, stores); err != nil {
		return nil, err
	}
	return &responseCall{req: &req, agent: agent, items: items, msgs: newMsgs, opts: opts, clientTools: clientTools, stores: stores}, nil
}

// continueResponse delivers the request's trailing function_call_output
// items to the run that waits for them and answers with the segment they
// start (done); a run that did not take them is not done.
func (s *Server) continueResponse(c *fiber.Ctx, rc *responseCall) (done bool, err error) {
	run, results, ok := functionOutputs(rc.items)
	if !ok {
		return false, nil
	}
	ctx := c.UserContext()
	start, took, err := s.continueRun(ctx, principal(c).User, run, results)
	if err != nil || !took {
		return false, err
	}
	in, _, err := s.startInput(ctx, run)
	if err != nil {
		return true, err
	}
	log, err := s.readLog(ctx, run)
	if err != nil {
		return true, err
	}
	base := responseBase(responseID(run, start), in, segmentTime(log, start), previousSegment(run, log, start))
	return true, s.answerResponse(c, rc.req, run, start, base)
}

// startResponse starts a new run for the request, its conversation the
// previous response's (if any) and its input, and answers with it.
func (s *Server) startResponse(c *fiber.Ctx, rc *responseCall) error {
	ctx, req := c.UserContext(), rc.req
	msgs, err := s.conversationBefore(ctx, principal(c).Name, req.PreviousResponseID)
	if err != nil {
		return err
	}
	state := &contract.ResponseState{
		PreviousResponseID: req.PreviousResponseID, Store: req.stored(), Background: req.Background,
		CreatedAt: time.Now().Unix(), SearchResults: slices.Contains(req.Include, includeSearchResults),
	}
	if req.Instructions != "" {
		msgs = append([]longhaul.Message{{Role: longhaul.RoleSystem, Content: req.Instructions}}, msgs...)
		state.Instructions = true
	}
	state.InputFrom = len(msgs)
	msgs = append(msgs, rc.msgs...)
	in := contract.AgentInput{
		Agent:           rc.agent.ID,
		Messages:        msgs,
		User:            principal(c).User,
		Options:         rc.opts,
		ClientTools:     rc.clientTools,
		ModelTimeout:    s.cfg.ModelTimeout,
		HistoryLimit:    s.cfg.HistoryLimit,
		ApprovalTimeout: s.cfg.ApprovalTimeout,
		NotStreamed:     !req.Stream && !req.Background,
		Metadata:        req.Metadata,
		Response:        state,
		Forget:          !req.stored(),
		VectorStores:    rc.stores,
	}
	run := "run-" + uuid.NewString()
	err = s.start(ctx, run, in, summarize(msgs, 60))
	if err != nil {
		return err
	}
	base := responseBase(responseID(run, 0), in, 0, nil)
	return s.answerResponse(c, req, run, 0, base)
}

// answerResponse answers a request whose response is the segment of run
// after start: at once (background), as a stream, or whole once the
// segment ends (up to the request timeout).
func (s *Server) answerResponse(c *fiber.Ctx, req *ResponsesRequest, run string, start int64, base Response) error {
	c.Set(HeaderRunID, run)
	store := req.stored()
	switch {
	case req.Stream:
		release, err := s.acquireStream(principal(c).Name)
		if err != nil {
			if !store {
				s.forget(c.UserContext(), run)
			}
			return err
		}
		s.sendSSE(c, "responses", func(sw *sseWriter) { s.streamSegment(sw, run, start, base, req.Background, -1, store) }, release)
		return nil
	case req.Background:
		resp := base
		resp.Status = respQueued
		return c.JSON(resp)
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), s.cfg.RequestTimeout)
	defer cancel()
	f := s.runs.Follow(run)
	defer f.Release()
	r := newRespRenderer(base, longhaul.Usage{})
	r.begin(false)
	if !store {
		// Not to be kept, however the request ends: answered, timed out
		// (the run is then stopped) or failed.
		defer s.forget(c.UserContext(), run)
	}
	if err := followSegment(ctx, f, start, r, false, f.Read, func([]StreamEvent) error { return nil }); err != nil {
		switch {
		case ctx.Err() != nil && !store:
			return errTimeout(fmt.Sprintf("the response was not complete after %s; as it is not to be stored (store: false), it was stopped and deleted", s.cfg.RequestTimeout))
		case ctx.Err() != nil:
			return errTimeout(fmt.Sprintf("the response is still in progress after %s; it goes on: GET /v1/responses/%s", s.cfg.RequestTimeout, base.ID))
		}
		return errInternal("lost the run's event log: " + err.Error())
	}
	return c.JSON(r.snapshot())
}

// streamSegment writes the segment of run after start as a Responses
// event stream, from the event after sequence number after (-1: from the
// start). A response that is not stored goes with its stream however the
// stream ends: complete, the client gone, an error or the server shutting
// down (see forget).
func (s *Server) streamSegment(sw *sseWriter, run string, start int64, base Response, background bool, after int64, store bool) {
	f := s.runs.Follow(run)
	defer f.Release()
	ctx, cancel := context.WithCancel(s.stopping)
	defer cancel()
	if !store {
		defer s.forget(ctx, run)
	}
	r := newRespRenderer(base, longhaul.Usage{})
	emit := func(evs []StreamEvent) error {
		for _, e := range evs {
			if e.SequenceNumber <= after {
				continue
			}
			if err := sw.frameJSON("", e.Type, e); err != nil {
				return err
			}
		}
		return sw.flush()
	}
	if emit(r.begin(background)) != nil {
		return
	}
	read := func(ctx context.Context, pos runs.Cursor) ([]runs.Item, bool, error) { return sw.wait(ctx, f, pos) }
	err := followSegment(ctx, f, start, r, true, read, emit)
	switch {
	case errors.Is(err, errClientGone):
		return
	case err != nil:
		msg := "lost the run's event stream: " + err.Error()
		switch {
		case ctx.Err() != nil && !store:
			msg = "the server is shutting down; the response is not to be stored (store: false), so it ends here"
		case ctx.Err() != nil:
			msg = "the server is shutting down; the response goes on: GET /v1/responses/" + base.ID + "?stream=true&starting_after=N resumes it"
		default:
			s.log.Warn("stream response", "run", run, "error", err)
		}
		_ = sw.frameJSON("", "error", r.event(StreamEvent{Type: "error", Code: "stream_error", Message: msg}))
		_ = sw.flush()
	}
}

// liveText is the streamed text of a model call's attempt so far.
type liveText struct {
	attempt int
	text    string
}

// followSegment feeds r the segment of the run f follows that starts
// after offset start — its durable events, and with live the live text of
// its model calls — until the event that ends it. emit gets each event's
// stream events.
func followSegment(ctx context.Context, f runs.Follower, start int64, r *respRenderer, live bool, read func(context.Context, runs.Cursor) ([]runs.Item, bool, error), emit func([]StreamEvent) error) error {
	pos := f.Join(runs.Cursor{})
	texts := map[string]*liveText{}
	for {
		items, done, err := read(ctx, pos)
		if err != nil {
			return err
		}
		for k, it := range items {
			pos = it.Pos
			var evs []StreamEvent
			end := false
			switch {
			case it.Offset > 0 && it.Offset <= start:
				var u longhaul.Usage
				if it.Type == longhaul.EventUsage && it.Decode(&u) == nil {
					r.usageFrom = u
				}
				continue
			case it.Offset > 0:
				evs, end = r.durable(it.Event)
			case !live:
				continue
			case it.Type == longhaul.EventContentDelta:
				var d longhaul.Delta
				if it.Decode(&d) != nil || d.After < start || contentFollows(items, k, d.Call) {
					continue
				}
				t := texts[d.Call]
				if t == nil || t.attempt != d.Attempt || d.From == 0 || d.From > len(t.text) {
					t = &liveText{attempt: d.Attempt}
					texts[d.Call] = t
					if d.From > 0 {
						continue // a gap: the durable text will bring it
					}
				}
				t.text = t.text[:d.From] + d.Text
				evs = r.live(d.Call, d.Attempt, t.text)
			case it.Type == longhaul.EventContentReset:
				var d longhaul.ContentResetData
				if it.Decode(&d) == nil {
					r.reset(d.Call)
					delete(texts, d.Call)
				}
			}
			if err := emit(evs); err != nil {
				return err
			}
			if end {
				return nil
			}
		}
		if done {
			return errors.New("the run's log ended before the response did")
		}
	}
}

// contentFollows reports whether the item after k is call's durable text:
// the delta at k is the part of it the follower had not seen, which the
// durable event brings anyway.
func contentFollows(items []runs.Item, k int, call string) bool {
	if k+1 >= len(items) || items[k+1].Type != longhaul.EventContent {
		return false
	}
	var d longhaul.ContentData
	return items[k+1].Decode(&d) == nil && d.Call == call
}

// continueRun delivers function outputs to run, which waits for them (see
// continueClient: a retried request's delivery is the same update, and
// attaches). took reports that the run took them, and start is then the
// offset of the client_tool_calls event the new segment follows. A run
// that is gone (deleted, or never the caller's), or that ended without the
// results, took nothing: the request then starts a new run.
func (s *Server) continueRun(ctx context.Context, user longhaul.User, run string, results []contract.ToolResult) (start int64, took bool, err error) {
	_, err = s.responseState(ctx, run, user.Key())
	var ae *apiError
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	at, err := s.continueClient(ctx, contract.AgentInput{User: user}, run, results)
	if err != nil || at == nil {
		return 0, false, err
	}
	return at.after, true, nil
}

// afterCalls reads the log after a client_tool_calls event: moved, the
// run took results and went on; ended, it ended without them.
func afterCalls(rest []longhaul.Event) (moved, ended bool) {
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

// conversationBefore is the conversation up to the end of response id
// (none when id is empty): the input of its run, less its instructions,
// and what the run added. Only a run's latest response can be continued
// this way, once it has ended.
func (s *Server) conversationBefore(ctx context.Context, owner, id string) ([]longhaul.Message, error) {
	if id == "" {
		return nil, nil
	}
	run, start, ok := parseResponseID(id)
	if !ok {
		return nil, errNotFound("previous_response_id: no response " + id)
	}
	st, err := s.responseState(ctx, run, owner)
	if err != nil {
		return nil, relabel(err, "previous_response_id: no response "+id)
	}
	log, err := s.readLog(ctx, run)
	if err != nil {
		return nil, err
	}
	if start > 0 && !segmentStart(log, start) {
		return nil, errNotFound("previous_response_id: no response " + id)
	}
	for i, e := range log {
		if e.Offset > start && e.Type == longhaul.EventClientToolCalls {
			var d longhaul.ClientToolCallsData
			_ = e.Decode(&d)
			if moved, _ := afterCalls(log[i+1:]); moved {
				return nil, errBadRequest("previous_response_id: response " + id + " was continued by a later response; continue from that one")
			}
			if !finished(st.Status) {
				return nil, errBadRequest("No tool output found for function call " + callIDs(d.Calls) + ".")
			}
		}
	}
	switch st.Status {
	case contract.StatusCompleted:
	case contract.StatusFailed, contract.StatusCancelled:
		return nil, errBadRequest("previous_response_id: response " + id + " is " + st.Status + "; it cannot be continued")
	default:
		return nil, errBadRequest("previous_response_id: response " + id + " is still in progress")
	}
	in, _, err := s.startInput(ctx, run)
	if err != nil {
		return nil, err
	}
	// The run has completed: its result is there to read at once.
	rctx, cancel := context.WithTimeout(ctx, readResultTimeout)
	defer cancel()
	res, err := s.runs.Result(rctx, run)
	if err != nil {
		return nil, errUnavailable("cannot read the result of response " + id + ": " + err.Error())
	}
	msgs := append(withoutInstructions(in), res.Messages...)
	if len(res.ToolCalls) > 0 && !endsWithCalls(msgs, res.ToolCalls) {
		msgs = append(msgs, longhaul.Message{Role: longhaul.RoleAssistant, ToolCalls: res.ToolCalls})
	}
	return msgs, nil
}

// relabel replaces the message of a not-found error.
func relabel(err error, msg string) error {
	var ae *apiError
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		return errNotFound(msg)
	}
	return err
}

// callIDs lists the ids of calls.
func callIDs(calls []longhaul.ToolCall) string {
	var ids []string
	for _, c := range calls {
		ids = append(ids, c.ID)
	}
	return strings.Join(ids, ", ")
}

// endsWithCalls reports whether the last message of msgs asks for calls.
func endsWithCalls(msgs []longhaul.Message, calls []longhaul.ToolCall) bool {
	if len(msgs) == 0 {
		return false
	}
	last := msgs[len(msgs)-1]
	return last.Role == longhaul.RoleAssistant && len(last.ToolCalls) == len(calls) && last.ToolCalls[0].ID == calls[0].ID
}

// withoutInstructions is a run's input conversation less the system
// message its request's instructions became: instructions do not carry
// over to the next response.
func withoutInstructions(in contract.AgentInput) []longhaul.Message {
	msgs := in.Messages
	if responseState(in).Instructions && len(msgs) > 0 {
		msgs = msgs[1:]
	}
	return slices.Clone(msgs)
}

// responseBase is the response object of the segment id of a run started
// with in, before any of its output: what the request asked for. created
// is when the segment began; a run's first response was created when its
// request came.
func responseBase(id string, in contract.AgentInput, created int64, previous *string) Response {
	o, state := in.Options, responseState(in)
	if _, start, _ := parseResponseID(id); start == 0 && state.CreatedAt != 0 {
		created = state.CreatedAt
	}
	r := Response{
		ID: id, Object: "response", CreatedAt: created, Status: respInProgress,
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

// segmentStart reports whether a response of the run whose log this is
// starts after offset start: its client_tool_calls event is there.
func segmentStart(log []longhaul.Event, start int64) bool {
	return slices.ContainsFunc(log, func(e longhaul.Event) bool {
		return e.Offset == start && e.Type == longhaul.EventClientToolCalls
	})
}

// segmentTime is when the segment after start began: the time of the
// event at start.
func segmentTime(log []longhaul.Event, start int64) int64 {
	for _, e := range log {
		if e.Offset == start {
			return e.Time.Unix()
		}
	}
	return time.Now().Unix()
}

// previousSegment is the id of the response before the segment of run
// after start: the one that ended with the client_tool_calls event at
// start.
func previousSegment(run string, log []longhaul.Event, start int64) *string {
	prev := int64(0)
	for _, e := range log {
		if e.Offset >= start {
			break
		}
		if e.Type == longhaul.EventClientToolCalls {
			prev = e.Offset
		}
	}
	id := responseID(run, prev)
	return &id
}

// startInput is the input run was started with — its first execution's,
// the one the client's request made — and when it started.
func (s *Server) startInput(ctx context.Context, run string) (contract.AgentInput, int64, error) {
	in, started, err := s.runs.FirstInput(ctx, run)
	switch {
	case errors.Is(err, runs.ErrNotFound):
		return in, 0, errNotFound("no response of run " + run)
	case errors.Is(err, runs.ErrCorrupt):
		return in, 0, errInternal(err.Error())
	case err != nil:
		return in, 0, errUnavailable("cannot read run " + run + ": " + err.Error())
	}
	return in, started.Unix(), nil
}

// readLog reads run's whole event log as it stands, archives included.
func (s *Server) readLog(ctx context.Context, run string) ([]longhaul.Event, error) {
	var out []longhaul.Event
	var after int64
	for {
		page, err := s.runs.Events(ctx, run, after)
		if err != nil {
			return nil, errUnavailable("cannot read the events of run " + run + ": " + err.Error())
		}
		if len(page.Archives) > 0 {
			events, err := s.runs.Archived(ctx, run, page.Archives, after)
			if err != nil {
				return nil, errUnavailable(err.Error())
			}
			out = append(out, events...)
			after = max(after, page.Archives[len(page.Archives)-1].To)
			if len(events) > 0 {
				after = max(after, events[len(events)-1].Offset)
			}
			continue
		}
		out = append(out, page.Events...)
		if len(page.Events) > 0 {
			after = page.Events[len(page.Events)-1].Offset
		}
		if len(page.Events) == 0 || after >= page.Last {
			return out, nil
		}
	}
}

// findResponse resolves the response named in the path for the caller:
// its run, segment start and run state; another principal's is unknown.
func (s *Server) findResponse(c *fiber.Ctx) (run string, start int64, st contract.RunState, err error) {
	id, err := url.PathUnescape(c.Params("id"))
	if err != nil {
		return "", 0, st, errNotFound("no response " + c.Params("id"))
	}
	run, start, ok := parseResponseID(id)
	if !ok {
		return "", 0, st, errNotFound("no response " + id)
	}
	st, err = s.responseState(c.UserContext(), run, principal(c).Name)
	if err != nil {
		return "", 0, st, relabel(err, "no response "+id)
	}
	return strings.Clone(run), start, st, nil
}

// currentResponse rebuilds a response from its run's durable state as it
// stands.
func (s *Server) currentResponse(ctx context.Context, run string, start int64, st contract.RunState) (*Response, error) {
	in, created, err := s.startInput(ctx, run)
	if err != nil {
		return nil, err
	}
	log, err := s.readLog(ctx, run)
	if err != nil {
		return nil, err
	}
	var previous *string
	if start > 0 {
		if !segmentStart(log, start) {
			return nil, errNotFound("no response " + responseID(run, start))
		}
		created = segmentTime(log, start)
		previous = previousSegment(run, log, start)
	}
	r := newRespRenderer(responseBase(responseID(run, start), in, created, previous), longhaul.Usage{})
	r.begin(false)
	for _, e := range log {
		var u longhaul.Usage
		switch {
		case e.Offset <= start:
			if e.Type == longhaul.EventUsage && e.Decode(&u) == nil {
				r.usageFrom = u
			}
		case !r.ended:
			r.durable(e)
		}
	}
	if !r.ended && finished(st.Status) {
		// Closed without finishing its log (terminated outside Longhaul).
		r.resp.Status, r.resp.Error = respFailed, &ResponseError{Code: "server_error", Message: "the run ended without finishing"}
	}
	return r.snapshot(), nil
}

// getResponse answers GET /v1/responses/{id}: the response as it stands,
// or with stream=true its event stream, from the event after
// starting_after when given.
func (s *Server) getResponse(c *fiber.Ctx) error {
	run, start, st, err := s.findResponse(c)
	if err != nil {
		return err
	}
	c.Set(HeaderRunID, run)
	if c.Query("stream") != "true" {
		resp, err := s.currentResponse(c.UserContext(), run, start, st)
		if err != nil {
			return err
		}
		return c.JSON(resp)
	}
	after := int64(-1)
	if v := c.Query("starting_after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return errBadRequest("starting_after: must be a sequence number (a whole number, 0 or more)")
		}
		after = n
	}
	in, created, err := s.startInput(c.UserContext(), run)
	if err != nil {
		return err
	}
	var previous *string
	if start > 0 {
		log, err := s.readLog(c.UserContext(), run)
		if err != nil {
			return err
		}
		if !segmentStart(log, start) {
			return errNotFound("no response " + responseID(run, start))
		}
		created, previous = segmentTime(log, start), previousSegment(run, log, start)
	}
	base := responseBase(responseID(run, start), in, created, previous)
	release, err := s.acquireStream(principal(c).Name)
	if err != nil {
		return err
	}
	s.sendSSE(c, "responses", func(sw *sseWriter) { s.streamSegment(sw, run, start, base, base.Background && start == 0, after, true) }, release)
	return nil
}

// cancelResponse answers POST /v1/responses/{id}/cancel: the run is
// cancelled and the response returned once it shows it (or after
// cancelWait, as it stands). A response that has ended is a 409.
func (s *Server) cancelResponse(c *fiber.Ctx) error {
	run, start, st, err := s.findResponse(c)
	if err != nil {
		return err
	}
	resp, err := s.currentResponse(c.UserContext(), run, start, st)
	if err != nil {
		return err
	}
	if resp.Status != respInProgress {
		return errConflict(fmt.Sprintf("response %s has already ended (%s)", resp.ID, resp.Status))
	}
	if err := s.runs.Cancel(c.UserContext(), run); err != nil {
		if !errors.Is(err, runs.ErrNotFound) {
			return errUnavailable("cannot cancel the run of response " + resp.ID + ": " + err.Error())
		}
	}
	wctx, wcancel := context.WithTimeout(c.UserContext(), cancelWait)
	defer wcancel()
	f := s.runs.Follow(run)
	defer f.Release()
	r := newRespRenderer(*resp, longhaul.Usage{})
	r.begin(false)
	if followSegment(wctx, f, start, r, false, f.Read, func([]StreamEvent) error { return nil }) == nil {
		resp = r.snapshot()
	}
	return c.JSON(resp)
}

// deleteResponse answers DELETE /v1/responses/{id}: the run goes, with
// every response it made and its stored outputs.
func (s *Server) deleteResponse(c *fiber.Ctx) error {
	run, start, _, err := s.findResponse(c)
	if err != nil {
		return err
	}
	if err := s.deleteRun(c.UserContext(), run); err != nil {
		return err
	}
	return c.JSON(ResponseDeleted{ID: responseID(run, start), Object: "response.deleted", Deleted: true})
}

// deleteRun deletes run's outputs from the blob store, marks it deleted
// there, and deletes the run, which is terminated first if it is still
// running (see runs.Temporal.Delete). The mark comes first, so that the run
// reads as gone by the time it ends.
func (s *Server) deleteRun(ctx context.Context, run string) error {
	if s.cfg.Blobs != nil {
		if err := s.cfg.Blobs.DeleteRun(ctx, run); err != nil {
			return errUnavailable("cannot delete the outputs of run " + run + ": " + err.Error())
		}
		if _, err := s.cfg.Blobs.Put(ctx, store.Blob{Run: run, Kind: deletedKind, Name: "run", Data: []byte("deleted")}); err != nil {
			return errUnavailable("cannot mark run " + run + " deleted: " + err.Error())
		}
	}
	if err := s.runs.Delete(ctx, run); err != nil && !errors.Is(err, runs.ErrNotFound) {
		return errUnavailable("cannot delete run " + run + ": " + err.Error())
	}
	return nil
}

// deletedKind is the blob kind that marks a run deleted (see
// contract.DeletedRunKind): Temporal deletes a run a while after it is
// asked to (once its close has reached visibility), and until then the run
// must read as gone.
const deletedKind = contract.DeletedRunKind

// responseState is readState for a run that the Responses API may have
// deleted: a deleted one is unknown.
func (s *Server) responseState(ctx context.Context, run, owner string) (contract.RunState, error) {
	if s.cfg.Blobs != nil {
		blobs, err := s.cfg.Blobs.List(ctx, run)
		if err != nil {
			return contract.RunState{}, errUnavailable("cannot read the outputs of run " + run + ": " + err.Error())
		}
		if slices.ContainsFunc(blobs, func(b store.Blob) bool { return b.Kind == deletedKind }) {
			return contract.RunState{}, errNotFound("no run " + run)
		}
	}
	return s.readState(ctx, run, owner)
}

// forget deletes the run of a response that is not to be stored, logging
// a failure: the client has its answer already.
func (s *Server) forget(ctx context.Context, run string) {
	if err := s.deleteRun(context.WithoutCancel(ctx), run); err != nil {
		s.log.Error("delete the run of a response that is not stored", "run", run, "error", err)
	}
}

// responseInputItems answers GET /v1/responses/{id}/input_items: the
// items the response's request added, newest first unless order=asc,
// paged with limit and after (an item id).
func (s *Server) responseInputItems(c *fiber.Ctx) error {
	run, start, _, err := s.findResponse(c)
	if err != nil {
		return err
	}
	limit := defaultItemsLimit
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxItemsLimit {
			return errBadRequest(fmt.Sprintf("limit: must be a number from 1 to %d", maxItemsLimit))
		}
		limit = n
	}
	order := c.Query("order", "desc")
	if order != "asc" && order != "desc" {
		return errBadRequest(`order: must be "asc" or "desc"`)
	}
	items, err := s.inputOf(c.UserContext(), run, start)
	if err != nil {
		return err
	}
	if order == "desc" {
		slices.Reverse(items)
	}
	if after := c.Query("after"); after != "" {
		i := slices.IndexFunc(items, func(it InputItem) bool { return it.ID == after })
		if i < 0 {
			return errBadRequest("after: no input item " + after + " in this response")
		}
		items = items[i+1:]
	}
	list := InputItemList{Object: "list", Data: []InputItem{}}
	if len(items) > limit {
		items, list.HasMore = items[:limit], true
	}
	list.Data = append(list.Data, items...)
	if len(items) > 0 {
		list.FirstID, list.LastID = &items[0].ID, &items[len(items)-1].ID
	}
	return c.JSON(list)
}

// inputOf is the input items of the segment of run after start, in order:
// a run's first response's are its request's input; a later one's, the
// function outputs delivered to the run.
func (s *Server) inputOf(ctx context.Context, run string, start int64) ([]InputItem, error) {
	key := strings.TrimPrefix(responseID(run, start), respPrefix)
	key = strings.NewReplacer(".", "_", "-", "_").Replace(key)
	if start > 0 {
		results, err := s.deliveredResults(ctx, run, start)
		if err != nil {
			return nil, err
		}
		var msgs []longhaul.Message
		for _, r := range results {
			msgs = append(msgs, longhaul.Message{Role: longhaul.RoleTool, ToolCallID: r.ToolCallID, Content: r.Content})
		}
		return messagesToItems(msgs, key), nil
	}
	in, _, err := s.startInput(ctx, run)
	if err != nil {
		return nil, err
	}
	from := responseState(in).InputFrom
	return messagesToItems(in.Messages[min(max(from, 0), len(in.Messages)):], key), nil
}

// deliveredResults are the function outputs delivered to run that answer
// the client_tool_calls event at offset at: the input update that carried
// them, read from the run's history (of its current execution).
func (s *Server) deliveredResults(ctx context.Context, run string, at int64) ([]contract.ToolResult, error) {
	log, err := s.readLog(ctx, run)
	if err != nil {
		return nil, err
	}
	var calls []longhaul.ToolCall
	for _, e := range log {
		var d longhaul.ClientToolCallsData
		if e.Offset == at && e.Type == longhaul.EventClientToolCalls && e.Decode(&d) == nil {
			calls = d.Calls
		}
	}
	if len(calls) == 0 {
		return nil, errNotFound("no response of run " + run + " starts at " + strconv.FormatInt(at, 10))
	}
	inputs, err := s.runs.Inputs(ctx, run)
	if err != nil {
		return nil, errUnavailable("cannot read the history of run " + run + ": " + err.Error())
	}
	for _, in := range inputs {
		if len(in.ToolResults) == 0 {
			continue
		}
		if slices.ContainsFunc(calls, func(tc longhaul.ToolCall) bool { return tc.ID == in.ToolResults[0].ToolCallID }) {
			return in.ToolResults, nil
		}
	}
	return nil, nil
}
