package chatapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/api/runweb"
	"github.com/longhaul-dev/longhaul/api/sse"
	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/identity"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/longhaul-dev/longhaul/internal/tools"
	"github.com/longhaul-dev/longhaul/internal/wire"
	"github.com/longhaul-dev/longhaul/skills"
)

// headerOWUIPrefix starts the names of the headers Open WebUI sends.
const headerOWUIPrefix = "X-Openwebui-"

// chatCall is one chat completions request on its way: what it asks, for
// which agent, the run's input, and the principal's stream and admission
// it holds.
type chatCall struct {
	c     *fiber.Ctx
	req   *wire.ChatRequest
	agent *skills.Agent
	// run is the run the request starts, in the runs gate's words.
	run       runs.Request
	openWebUI bool
	stream    *streamSlot
	admitted  func()
}

// chat is the chat turn cc's run answers; nil when the request names no
// chat.
func (cc *chatCall) chat() *runs.ChatTurn { return cc.run.Chat }

// streamSlot is one of a principal's open streams, taken before the run
// starts so that a stream over the limit starts nothing. The path that
// answers with a stream hands it to the stream writer (hand), which frees
// it when the stream ends; otherwise it is freed when the handler returns
// (drop).
type streamSlot struct{ release func() }

// hand gives the slot's release to the stream writer; the slot no longer
// frees it.
func (sl *streamSlot) hand() func() {
	r := sl.release
	sl.release = nil
	return r
}

// drop frees the slot unless it was handed on.
func (sl *streamSlot) drop() {
	if sl.release != nil {
		sl.release()
		sl.release = nil
	}
}

// Completions answers POST /v1/chat/completions by one of three paths:
// the results of the client's tool calls continue the run that waits for
// them (continueChat); a chat's message answers its run that waits for the
// person, or picks a chat turn's run (chatTurn); otherwise a new run starts
// (startChat).
func (h *Handlers) Completions(c *fiber.Ctx) error {
	cc, err := h.readChat(c)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	// A stream is refused before its run starts.
	cc.stream = &streamSlot{}
	if cc.req.Stream {
		r, err := h.takeStream(web.Principal(c).Name)
		if err != nil {
			return err
		}
		cc.stream.release = r
		defer cc.stream.drop()
	}
	// What follows asks Temporal, and may start a run: it waits its turn
	// in the admission queue, and lets the next go once the run started.
	admitted, err := h.admit(ctx)
	if err != nil {
		return err
	}
	defer admitted()
	cc.admitted = admitted
	if done, err := h.continueChat(cc); done || err != nil {
		return err
	}
	runID := runs.NewRunID()
	// A background task carries the chat's headers too; it must never take
	// (or attach to) the chat turn's run, so it always gets its own.
	if cc.chat() != nil && !cc.run.Background {
		id, done, err := h.chatTurn(cc)
		if done || err != nil {
			return err
		}
		runID = id
	}
	return h.startChat(cc, runID)
}

// readChat reads and checks a chat completions request and builds its
// run's input: its client tools checked, its file parts stored.
func (h *Handlers) readChat(c *fiber.Ctx) (*chatCall, error) {
	var req wire.ChatRequest
	if err := json.Unmarshal(c.Body(), &req); err != nil {
		return nil, web.BadRequest("invalid JSON body: " + web.JSONProblem(err))
	}
	if err := req.Validate(tools.CheckSchema); err != nil {
		return nil, web.BadRequest(err.Error())
	}
	if err := h.Images.CheckChatImages(req.Messages); err != nil {
		return nil, err
	}
	agent, err := h.Agents.AgentFor(req.Model, web.Principal(c).User)
	if err != nil {
		return nil, err
	}
	// A background task (a title, tags) answers Open WebUI itself, which
	// sends its connection's headers with it: it gets no audit trail.
	c.Locals(auditKey{}, wantsAudit(c, &req) && !req.IsBackgroundTask())
	clientTools := req.ClientTools()
	if err := h.Agents.CheckClientTools(agent, web.Principal(c).User, clientTools, req.ToolChoice, "tools[%d].function"); err != nil {
		return nil, err
	}
	// The body's user field is the client's label for its end user, never
	// an identity: who asks comes from the credential.
	user := web.Principal(c).User
	chatID := h.chatID(c, &req)
	// File parts are stored, ingested into the chat's vector store and
	// replaced by a note before the run starts; the run searches them.
	filesStore, err := h.chatFiles(c.UserContext(), user.Key(), chatID, req.Messages, req.IsBackgroundTask())
	if err != nil {
		return nil, err
	}
	r := runs.Request{
		Agent:        agent.ID,
		Messages:     wire.DomainMessages(req.Messages),
		User:         user,
		Options:      req.Options(),
		Quiet:        !req.Stream,
		Background:   req.IsBackgroundTask(),
		ClientTools:  clientTools,
		VectorStores: req.Longhaul.StoreIDs(),
		Door:         runs.DoorChat,
	}
	if chatID != "" {
		r.Chat = &runs.ChatTurn{ID: chatID}
	}
	if filesStore != "" {
		r.VectorStores = append(slices.Clone(r.VectorStores), filesStore)
	}
	return &chatCall{c: c, req: &req, agent: agent, run: r, openWebUI: h.isOpenWebUI(c)}, nil
}

// continueChat is the path of the results of the client's tool calls:
// they continue the run that waits for them, whose answer this request
// gets (done). A run that stopped waiting is not done: the conversation
// starts a new one.
func (h *Handlers) continueChat(cc *chatCall) (done bool, err error) {
	run, results, ok := clientResults(cc.req.Messages)
	if !ok || cc.run.Background {
		return false, nil
	}
	ctx := cc.c.UserContext()
	after, took, err := h.Runs.ContinueClient(ctx, cc.run.User, run, results)
	if err != nil || !took {
		return false, err
	}
	cont := resumeAt{after: after}
	cc.admitted()
	cc.c.Set(web.HeaderRunID, run)
	if !cc.req.Stream {
		return true, h.respondWatching(cc.c, run, cc.agent.ID, cc.openWebUI, cont)
	}
	h.streamResponse(cc.c, cc.req, run, cc.agent.ID, cc.openWebUI, cont, cc.stream)
	return true, nil
}

// chatTurn is the path of a chat's message: it numbers the turn and
// returns the id of its run; a run of the chat that waits for the person
// takes the message as its answer instead of a new turn starting (done).
func (h *Handlers) chatTurn(cc *chatCall) (runID string, done bool, err error) {
	ctx := cc.c.UserContext()
	turn := cc.chat()
	turn.Turn = cc.req.Turn()
	turn.MessageID = h.messageID(cc.c, cc.req)
	runID = contract.ChatRunID(turn.ID, turn.Turn, turn.MessageID)
	answer, err := h.answerWaiting(ctx, cc.run)
	if err != nil {
		return "", false, err
	}
	if answer != nil {
		cc.admitted()
		return "", true, h.resume(cc.c, cc.req, cc.agent.ID, cc.openWebUI, answer, cc.stream)
	}
	// A run of an earlier message still going: the chat's multitask
	// strategy says what becomes of the new one (multitask.go).
	if done, err := h.multitask(cc, runID); done || err != nil {
		return "", done, err
	}
	// Without a message id, a finished run is never handed back: the
	// request may be a Regenerate (see chatrun.go).
	turn.Retake = turn.MessageID == ""
	return runID, false, nil
}

// startChat starts (or attaches to) run runID and answers with it: whole,
// or as a stream.
func (h *Handlers) startChat(cc *chatCall, runID string) error {
	c, r := cc.c, cc.run
	r.ID, r.Admitted = runID, cc.admitted
	runID, err := runweb.Start(c.UserContext(), h.Gate, r)
	if err != nil {
		return err
	}
	c.Set(web.HeaderRunID, runID)
	if !cc.req.Stream {
		if !r.Background && (h.asksApproval(cc.agent) || len(r.ClientTools) > 0) {
			return h.respondWatching(c, runID, cc.agent.ID, cc.openWebUI, resumeAt{})
		}
		return h.respond(c, runID, cc.agent.ID, cc.openWebUI)
	}
	h.streamResponse(c, cc.req, runID, cc.agent.ID, cc.openWebUI, resumeAt{}, cc.stream)
	return nil
}

// resumeAt is where a response picks a run's log up: at its start; where
// the chat's previous response stopped at an approval, when a person's
// input reached the run at offset inputAt (see pickUp); or after offset
// after, the client tool calls whose results the request brought.
type resumeAt struct {
	inputAt int64
	after   int64
}

// suffix tells a resumed response's id from the run's first one.
func (p resumeAt) suffix() string {
	switch {
	case p.inputAt > 0:
		return "-" + strconv.FormatInt(p.inputAt, 10)
	case p.after > 0:
		return "-" + strconv.FormatInt(p.after, 10)
	}
	return ""
}

// resume answers the chat message that a waiting run took as its input:
// with the run's events from where the chat's previous response stopped.
func (h *Handlers) resume(c *fiber.Ctx, req *wire.ChatRequest, model string, openWebUI bool, a *chatAnswer, stream *streamSlot) error {
	c.Set(web.HeaderRunID, a.runID)
	at := resumeAt{inputAt: a.inputAt}
	if !req.Stream {
		return h.respondWatching(c, a.runID, model, openWebUI, at)
	}
	h.streamResponse(c, req, a.runID, model, openWebUI, at, stream)
	return nil
}

// streamResponse answers with run's events as an OpenAI chat stream, from
// the start of its log or (inputAt > 0) from where the chat's previous
// response stopped (see resumeAt). The stream's writer frees the
// principal's stream slot when the stream ends.
func (h *Handlers) streamResponse(c *fiber.Ctx, req *wire.ChatRequest, runID, model string, openWebUI bool, at resumeAt, stream *streamSlot) {
	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	r := newRenderer("chatcmpl-"+runID+at.suffix(), model, time.Now().Unix(), openWebUI)
	r.run = runID
	if asked(c) {
		// fiber's strings are reused once the handler returns; the
		// stream outlives it.
		r.auditOwner = strings.Clone(web.Principal(c).Name)
	}
	r.start = c.Context().Time()
	h.Streams.Send(c, "chat", func(sw *sse.Writer) { h.stream(sw, runID, r, includeUsage, at) }, stream.hand())
}

// respond waits for the run's result, up to the request timeout.
func (h *Handlers) respond(c *fiber.Ctx, run string, model string, openWebUI bool) error {
	ctx, cancel := context.WithTimeout(c.UserContext(), h.RequestTimeout)
	defer cancel()
	res, err := h.Runs.Service.Result(ctx, run)
	if err != nil {
		return resultError(ctx, err, h.RequestTimeout, run)
	}
	content := res.Content
	if openWebUI {
		content = cardsFor(res.Messages) + content
	}
	return h.completion(c, run, resumeAt{}, model, wire.ResponseEntry{Content: content, ReasoningContent: res.Reasoning, ToolCalls: wireCalls(res.ToolCalls, false)}, res.FinishReason, res.Usage)
}

// completion writes a non-streamed answer of run; at says which of its
// responses it is.
func (h *Handlers) completion(c *fiber.Ctx, runID string, at resumeAt, model string, msg wire.ResponseEntry, reason string, usage longhaul.Usage) error {
	if reason == "" {
		reason = "stop"
	}
	msg.Role = "assistant"
	cc := wire.ChatCompletion{
		ID: "chatcmpl-" + runID + at.suffix(), Object: "chat.completion", Created: time.Now().Unix(), Model: model,
		Choices: []wire.CompletionItem{{Index: 0, Message: msg, FinishReason: reason}},
		Usage:   wire.UsageOf(usage),
	}
	if asked(c) {
		cc.Longhaul = h.Runs.Audit(c.UserContext(), runID, web.Principal(c).Name)
	}
	return c.JSON(cc)
}

// resultError translates a failed wait for a run's result: the request's
// time ran out (the run goes on), or the run failed.
func resultError(ctx context.Context, err error, timeout time.Duration, runID string) error {
	if ctx.Err() != nil || errors.Is(err, runs.ErrTimeout) {
		return web.Timeout(stillGoing(timeout, runID))
	}
	return runweb.RunError(err)
}

func stillGoing(timeout time.Duration, runID string) string {
	return fmt.Sprintf("the run is still going after %s; it goes on: follow run %s", timeout, runID)
}

// cardsFor renders the tool calls of a finished run as Open WebUI cards.
func cardsFor(msgs []longhaul.Message) string {
	args := map[string]string{}
	var b strings.Builder
	for _, m := range msgs {
		for _, tc := range m.ToolCalls {
			args[tc.ID] = tc.Arguments
		}
		if m.Role == longhaul.RoleTool {
			b.WriteString(toolCard(longhaul.ToolOutputData{ToolCallID: m.ToolCallID, Name: m.Name, Output: m.Content}, args[m.ToolCallID]))
		}
	}
	return b.String()
}

// stream writes the run's events as an OpenAI chat stream until the run is
// done, it stops at an approval nobody gave yet (the prompt ends the
// response; the run goes on waiting), the client leaves (a failed flush) or
// the server shuts down; the run goes on either way. It stops, too, at the
// client tool calls the model made: the client runs them. at says where the
// log is picked up (see resumeAt).
func (h *Handlers) stream(sw *sse.Writer, runID string, r *renderer, includeUsage bool, at resumeAt) {
	f := h.Runs.Service.Follow(runID)
	defer f.Release()
	ctx, cancel := context.WithCancel(h.Streams.Context())
	defer cancel()
	lost := func(err error) {
		msg := "lost the run's event stream: " + err.Error()
		if ctx.Err() != nil {
			msg = "the server is shutting down; the run goes on: follow run " + runID
		} else {
			h.Runs.Logger().Warn("stream run", "run", runID, "error", err)
		}
		_ = sw.FrameJSON("", "", wire.ErrorBody{Error: wire.ErrorDetail{Message: msg, Type: "server_error", Code: "stream_error"}})
		_ = writeDone(sw)
	}
	after := at.after
	if at.inputAt > 0 {
		pctx, pcancel := context.WithTimeout(ctx, runweb.PickUpTimeout)
		var err error
		after, err = pickUp(pctx, f, at.inputAt, r.replayShown)
		pcancel()
		if err != nil {
			lost(err)
			return
		}
	}
	wait := func(ctx context.Context, pos runs.Cursor) ([]runs.Item, bool, error) {
		return sse.Wait(ctx, sw, f, pos)
	}
	for b, err := range runs.Batches(ctx, f, runs.After(after), wait) {
		switch {
		case errors.Is(err, sse.ErrClientGone):
			return
		case err != nil:
			lost(err)
			return
		}
		durable := durableEvents(b.Items)
		paused := false
		for _, it := range b.Items {
			frames := r.render(it.Event)
			if it.Type == longhaul.EventClientToolCalls {
				paused = true
			}
			if it.Offset > 0 {
				if d, ok := pendingApproval(durable, indexOf(durable, it.Offset)); ok {
					frames, paused = append(frames, r.pause(d)...), true
				}
			}
			for _, fr := range frames {
				if err := sw.FrameJSON("", "", fr); err != nil {
					return
				}
			}
			if paused {
				break
			}
		}
		if err := sw.Flush(); err != nil {
			return
		}
		if !r.start.IsZero() && r.roleSent {
			h.firstText(r.model, r.start)
			r.start = time.Time{}
		}
		if b.Done || paused {
			frames := r.finishFrames(includeUsage)
			if r.auditOwner != "" && r.failed == nil {
				frames = append(frames, r.auditChunk(h.Runs.Audit(ctx, runID, r.auditOwner)))
			}
			for _, fr := range frames {
				if sw.FrameJSON("", "", fr) != nil {
					return
				}
			}
			_ = writeDone(sw)
			return
		}
	}
}

// durableEvents are the durable events among items, in order.
func durableEvents(items []runs.Item) []longhaul.Event {
	var out []longhaul.Event
	for _, it := range items {
		if it.Offset > 0 {
			out = append(out, it.Event)
		}
	}
	return out
}

// indexOf is the index of the event with offset in events.
func indexOf(events []longhaul.Event, offset int64) int {
	for i, e := range events {
		if e.Offset == offset {
			return i
		}
	}
	return -1
}

// writeDone ends a chat stream as OpenAI's do: a [DONE] frame.
func writeDone(sw *sse.Writer) error {
	if err := sw.Frame("", "", []byte("[DONE]")); err != nil {
		return err
	}
	return sw.Flush()
}

// isOpenWebUI reports whether the caller is Open WebUI: it sends its
// X-OpenWebUI-* headers, or the ones the operator renamed them to.
func (h *Handlers) isOpenWebUI(c *fiber.Ctx) bool {
	hd := h.Headers
	for _, name := range []string{hd.ChatID, hd.MessageID, hd.UserID, hd.UserEmail, hd.UserJWT} {
		if name != "" && c.Get(name) != "" {
			return true
		}
	}
	found := false
	c.Request().Header.VisitAll(func(k, _ []byte) {
		if len(k) >= len(headerOWUIPrefix) && strings.EqualFold(string(k[:len(headerOWUIPrefix)]), headerOWUIPrefix) {
			found = true
		}
	})
	return found
}

// chatID is Open WebUI's chat id, or a conversation id an OpenAI client
// passes in metadata (chat_id or conversation_id), scoped to the caller's
// principal so two callers' conversation ids never meet. A long or unusual
// id is hashed (see identity.Part).
func (h *Handlers) chatID(c *fiber.Ctx, req *wire.ChatRequest) string {
	id := c.Get(h.Headers.ChatID)
	if id == "" && len(req.Metadata) > 0 {
		var md map[string]any
		if json.Unmarshal(req.Metadata, &md) == nil {
			for _, k := range []string{"chat_id", "conversation_id"} {
				if v, ok := md[k].(string); ok && v != "" {
					id = v
					break
				}
			}
		}
	}
	if id == "" {
		return ""
	}
	// Escaped and bounded, as the principal's name is: it becomes a
	// search attribute and, hashed, part of run ids (identity.ChatKey).
	return identity.ChatKey(web.Principal(c).Name, id)
}

var jsonProblem = web.JSONProblem
