package responsesapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/api/runweb"
	"github.com/longhaul-dev/longhaul/api/sse"
	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/longhaul-dev/longhaul/internal/tools"
	"github.com/longhaul-dev/longhaul/internal/wire"
	"github.com/longhaul-dev/longhaul/skills"
)

// This file is OpenAI's Responses API: POST /v1/responses and GET of a
// response (read.go rebuilds, cancels and deletes one, stream.go streams
// it, input.go lists its input items). A response is a run, or the segment of a run after it stopped
// for the client's function calls (see internal/wire/responses.go, which
// holds its wire types); everything a response shows is rebuilt from the
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
	req         *wire.ResponsesRequest
	agent       *skills.Agent
	items       []wire.InputItem
	msgs        []longhaul.Message
	opts        longhaul.ModelOptions
	clientTools []longhaul.ToolSpec
	stores      []string
}

// Create answers POST /v1/responses: function_call_output items
// that answer a run waiting for them continue it (continueResponse);
// otherwise a new run starts (startResponse).
func (h *Handlers) Create(c *fiber.Ctx) error {
	rc, err := h.readResponseRequest(c)
	if err != nil {
		return err
	}
	if done, err := h.continueResponse(c, rc); done || err != nil {
		return err
	}
	return h.startResponse(c, rc)
}

// readResponseRequest reads and checks a Responses request: its body, its
// agent, its input, its client tools and vector stores.
func (h *Handlers) readResponseRequest(c *fiber.Ctx) (*responseCall, error) {
	var req wire.ResponsesRequest
	if err := json.Unmarshal(c.Body(), &req); err != nil {
		return nil, web.BadRequest("invalid JSON body: " + web.JSONProblem(err))
	}
	if err := req.Validate(tools.CheckSchema, h.Ranking); err != nil {
		return nil, web.BadRequest(err.Error())
	}
	agent, err := h.Agents.AgentFor(req.Model, web.Principal(c).User)
	if err != nil {
		return nil, err
	}
	items, err := wire.InputItems(req.Input)
	if err != nil {
		return nil, web.BadRequest(err.Error())
	}
	newMsgs, err := wire.ItemsToMessages(items)
	if err != nil {
		return nil, web.BadRequest(err.Error())
	}
	if err := h.Images.CheckInputImages(items); err != nil {
		return nil, err
	}
	opts, clientTools := req.Options(), req.ClientTools()
	if err := h.Agents.CheckClientTools(agent, web.Principal(c).User, clientTools, opts.ToolChoice, "tools[%d]"); err != nil {
		return nil, err
	}
	stores := req.VectorStores()
	if err := h.VectorStores.CheckVectorStores(c.UserContext(), web.Principal(c).Name, stores); err != nil {
		return nil, err
	}
	return &responseCall{req: &req, agent: agent, items: items, msgs: newMsgs, opts: opts, clientTools: clientTools, stores: stores}, nil
}

// continueResponse delivers the request's trailing function_call_output
// items to the run that waits for them and answers with the segment they
// start (done); a run that did not take them is not done.
func (h *Handlers) continueResponse(c *fiber.Ctx, rc *responseCall) (done bool, err error) {
	run, results, ok := wire.FunctionOutputs(rc.items)
	if !ok {
		return false, nil
	}
	ctx := c.UserContext()
	start, took, err := h.continueRun(ctx, web.Principal(c).User, run, results)
	if err != nil || !took {
		return false, err
	}
	base, _, err := h.segmentBase(ctx, run, start)
	if err != nil {
		return true, err
	}
	return true, h.answerResponse(c, rc.req, run, start, base)
}

// startResponse starts a new run for the request, its conversation the
// previous response's (if any) and its input, and answers with it.
func (h *Handlers) startResponse(c *fiber.Ctx, rc *responseCall) error {
	ctx, req := c.UserContext(), rc.req
	msgs, err := h.conversationBefore(ctx, web.Principal(c).Name, req.PreviousResponseID)
	if err != nil {
		return err
	}
	state := &contract.ResponseState{
		PreviousResponseID: req.PreviousResponseID, Store: req.Stored(), Background: req.Background,
		CreatedAt: time.Now().Unix(), SearchResults: slices.Contains(req.Include, wire.IncludeSearchResults),
	}
	if req.Instructions != "" {
		msgs = append([]longhaul.Message{{Role: longhaul.RoleSystem, Content: req.Instructions}}, msgs...)
		state.Instructions = true
	}
	state.InputFrom = len(msgs)
	msgs = append(msgs, rc.msgs...)
	r := runs.Request{
		ID:           runs.NewRunID(),
		Agent:        rc.agent.ID,
		Messages:     msgs,
		User:         web.Principal(c).User,
		Options:      rc.opts,
		ClientTools:  rc.clientTools,
		Quiet:        !req.Stream && !req.Background,
		Metadata:     req.Metadata,
		Response:     state,
		Forget:       !req.Stored(),
		VectorStores: rc.stores,
		Door:         runs.DoorResponses,
	}
	run := r.ID
	hook, err := h.backgroundWebhook(c, &r, req.Webhook)
	if err != nil {
		return err
	}
	if err := runweb.StartWithWebhook(ctx, h.Gate, h.Webhooks, hook, r); err != nil {
		return err
	}
	// The response as it began is the run's input's, as the gate built it.
	in, err := h.Gate.Input(r)
	if err != nil {
		return runweb.Refused(err)
	}
	base := wire.ResponseBase(wire.ResponseID(run, 0), in, 0, nil)
	base.Webhook = hook
	return h.answerResponse(c, req, run, 0, base)
}

// answerResponse answers a request whose response is the segment of run
// after start: at once (background), as a stream, or whole once the
// segment ends (up to the request timeout).
func (h *Handlers) answerResponse(c *fiber.Ctx, req *wire.ResponsesRequest, run string, start int64, base wire.Response) error {
	c.Set(web.HeaderRunID, run)
	store := req.Stored()
	switch {
	case req.Stream:
		release, err := runweb.Stream(h.Gate, web.Principal(c).Name)
		if err != nil {
			if !store {
				h.forget(c.UserContext(), run)
			}
			return err
		}
		h.Streams.Send(c, "responses", func(sw *sse.Writer) { h.streamSegment(sw, run, start, base, req.Background, -1, store) }, release)
		return nil
	case req.Background:
		resp := base
		resp.Status = wire.ResponseQueued
		return c.JSON(resp)
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), h.RequestTimeout)
	defer cancel()
	f := h.Runs.Service.Follow(run)
	defer f.Release()
	r := wire.NewResponseRenderer(base, longhaul.Usage{})
	r.Begin(false)
	if !store {
		// Not to be kept, however the request ends: answered, timed out
		// (the run is then stopped) or failed.
		defer h.forget(c.UserContext(), run)
	}
	if err := followSegment(ctx, f, start, r, false, f.Read, func([]wire.StreamEvent) error { return nil }); err != nil {
		switch {
		case ctx.Err() != nil && !store:
			return web.Timeout(fmt.Sprintf("the response was not complete after %s; as it is not to be stored (store: false), it was stopped and deleted", h.RequestTimeout))
		case ctx.Err() != nil:
			return web.Timeout(fmt.Sprintf("the response is still in progress after %s; it goes on: GET /v1/responses/%s", h.RequestTimeout, base.ID))
		}
		return web.Internal("lost the run's event log: " + err.Error())
	}
	return c.JSON(r.Snapshot())
}

// continueRun delivers function outputs to run, which waits for them (see
// runweb.Runs.ContinueClient: a retried request's delivery is the same
// update, and attaches). took reports that the run took them, and start is
// then the offset of the client_tool_calls event the new segment follows.
// A run that is gone (deleted, or never the caller's), or that ended
// without the results, took nothing: the request then starts a new run.
func (h *Handlers) continueRun(ctx context.Context, user longhaul.User, run string, results []contract.ToolResult) (start int64, took bool, err error) {
	_, err = h.responseState(ctx, run, user.Key())
	if web.HasStatus(err, http.StatusNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return h.Runs.ContinueClient(ctx, user, run, results)
}

// conversationBefore is the conversation up to the end of response id
// (none when id is empty): the input of its run, less its instructions,
// and what the run added. Only a run's latest response can be continued
// this way, once it has ended.
func (h *Handlers) conversationBefore(ctx context.Context, owner, id string) ([]longhaul.Message, error) {
	if id == "" {
		return nil, nil
	}
	run, start, ok := wire.ParseResponseID(id)
	if !ok {
		return nil, web.NotFound("previous_response_id: no response " + id)
	}
	st, err := h.responseState(ctx, run, owner)
	if err != nil {
		return nil, relabel(err, "previous_response_id: no response "+id)
	}
	log, err := h.Runs.ReadLog(ctx, run)
	if err != nil {
		return nil, err
	}
	if start > 0 && !wire.SegmentStart(log, start) {
		return nil, web.NotFound("previous_response_id: no response " + id)
	}
	for i, e := range log {
		if e.Offset > start && e.Type == longhaul.EventClientToolCalls {
			var d longhaul.ClientToolCallsData
			_ = e.Decode(&d)
			if moved, _ := wire.AfterCalls(log[i+1:]); moved {
				return nil, web.BadRequest("previous_response_id: response " + id + " was continued by a later response; continue from that one")
			}
			if !runweb.Finished(st.Status) {
				return nil, web.BadRequest("No tool output found for function call " + wire.CallIDs(d.Calls) + ".")
			}
		}
	}
	switch st.Status {
	case contract.StatusCompleted:
	case contract.StatusFailed, contract.StatusCancelled:
		return nil, web.BadRequest("previous_response_id: response " + id + " is " + st.Status + "; it cannot be continued")
	default:
		return nil, web.BadRequest("previous_response_id: response " + id + " is still in progress")
	}
	in, err := h.startInput(ctx, run)
	if err != nil {
		return nil, err
	}
	// The run has completed: its result is there to read at once.
	rctx, cancel := context.WithTimeout(ctx, readResultTimeout)
	defer cancel()
	res, err := h.Runs.Service.Result(rctx, run)
	if err != nil {
		return nil, web.Unavailable("cannot read the result of response " + id + ": " + err.Error())
	}
	msgs := append(wire.WithoutInstructions(in.AgentInput), res.Messages...)
	if len(res.ToolCalls) > 0 && !wire.EndsWithCalls(msgs, res.ToolCalls) {
		msgs = append(msgs, longhaul.Message{Role: longhaul.RoleAssistant, ToolCalls: res.ToolCalls})
	}
	return msgs, nil
}

// relabel replaces the message of a not-found error.
func relabel(err error, msg string) error {
	if web.HasStatus(err, http.StatusNotFound) {
		return web.NotFound(msg)
	}
	return err
}

// Get answers GET /v1/responses/{id}: the response as it stands,
// or with stream=true its event stream, from the event after
// starting_after when given.
func (h *Handlers) Get(c *fiber.Ctx) error {
	run, start, st, err := h.findResponse(c)
	if err != nil {
		return err
	}
	c.Set(web.HeaderRunID, run)
	if c.Query("stream") != "true" {
		resp, err := h.currentResponse(c.UserContext(), run, start, st)
		if err != nil {
			return err
		}
		return c.JSON(resp)
	}
	after := int64(-1)
	if v := c.Query("starting_after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return web.BadRequest("starting_after: must be a sequence number (a whole number, 0 or more)")
		}
		after = n
	}
	in, err := h.startInput(c.UserContext(), run)
	if err != nil {
		return err
	}
	created := in.At.Unix()
	var previous *string
	if start > 0 {
		log, err := h.Runs.ReadLog(c.UserContext(), run)
		if err != nil {
			return err
		}
		if !wire.SegmentStart(log, start) {
			return web.NotFound("no response " + wire.ResponseID(run, start))
		}
		created, previous = wire.SegmentTime(log, start), wire.PreviousSegment(run, log, start)
	}
	base := wire.ResponseBase(wire.ResponseID(run, start), in.AgentInput, created, previous)
	release, err := runweb.Stream(h.Gate, web.Principal(c).Name)
	if err != nil {
		return err
	}
	h.Streams.Send(c, "responses", func(sw *sse.Writer) {
		h.streamSegment(sw, run, start, base, base.Background && start == 0, after, true)
	}, release)
	return nil
}

// backgroundWebhook names a background response's events after OpenAI's
// (response.completed, …, naming the response) for every webhook that
// gets them, and makes the request's own webhook, if it names one, whose
// secret the answer shows.
func (h *Handlers) backgroundWebhook(c *fiber.Ctx, r *runs.Request, url string) (*wire.RunWebhook, error) {
	if rs := r.Response; rs == nil || !rs.Background {
		return nil, nil
	}
	own, hook, err := runweb.RunWebhook(c.UserContext(), h.Webhooks, r.User.Key(), r.ID, url)
	if err != nil {
		return nil, err
	}
	if own == nil {
		own = &contract.RunWebhook{}
	}
	own.Response = wire.ResponseID(r.ID, 0)
	r.Webhook = own
	return hook, nil
}
