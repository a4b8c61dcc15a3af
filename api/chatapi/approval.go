package chatapi

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/longhaul-dev/longhaul/internal/wire"
	"github.com/longhaul-dev/longhaul/skills"
)

// This file is tool approval in a chat. A chat user has no button to
// approve a tool call with, so a chat response that reaches a pending
// approval shows it (which tool, on what, with which arguments) and ends
// there, while the run goes on waiting in Temporal; the chat's next message
// is then the person's answer: it is delivered to the waiting run as its
// input, and that response picks the run's events up where the previous one
// stopped.

const (
	// waitingLookupBudget is how long a chat message that answers an
	// approval prompt waits for visibility to show the run that asked: the
	// run's status reaches visibility a little after its events.
	waitingLookupBudget = 3 * time.Second
	// waitingLookupPage bounds the waiting runs of one chat looked at.
	waitingLookupPage = 10
)

// chatAnswer is a chat message delivered to a run that waited for it.
type chatAnswer struct {
	runID string
	// before is the last offset of the run's log just before the input
	// reached it; the response starts after the last approval_required up
	// to it.
	inputAt int64
}

// ofTurn reports whether run id answers turn of chat (whatever message it
// was asked for).
func ofTurn(id, chat string, turn int) bool {
	p := contract.ChatRunID(chat, turn, "")
	return id == p || strings.HasPrefix(id, p+"-")
}

// answers reports whether a chat message of turn (the count of user
// messages) answers run id of the chat, which waits as st. The run must
// wait for the message's user. When the message replies to an approval
// prompt, the run must wait for the tool the prompt names and be of an
// earlier turn: a run may have stopped at several prompts since its own
// turn. Otherwise only a run of the turn just before qualifies: its
// response was cut off before it showed the prompt, and the message is
// the person's next word to it, as text that decides nothing
// (answerInput). Never a run of the message's own turn (a
// retried or regenerated request), nor a stale run an earlier
// Regenerate left waiting.
func answers(id string, st contract.RunState, chat, user string, turn int, prompt string) bool {
	if st.Waiting == nil || st.User != user {
		return false
	}
	if prompt == "" {
		return ofTurn(id, chat, turn-1)
	}
	if !strings.Contains(prompt, "call "+codeSpan(st.Waiting.Tool)) {
		return false
	}
	for k := turn - 1; k >= 1; k-- {
		if ofTurn(id, chat, k) {
			return true
		}
	}
	return false
}

// answerInput is what a chat message delivers to the run it answers. A
// message that replies to an approval prompt this API showed may decide
// (chatInput: "ok" approves, "no" denies). One that replies to no prompt
// (the previous response was cut off, by Stop or a dropped connection,
// before it showed one) is the person's words, never a decision: nobody
// was shown what "ok" would approve, so the waiting call is refused and
// the words go to the model.
func answerInput(text string, prompted bool) contract.InputRequest {
	if prompted {
		return chatInput(text)
	}
	return contract.InputRequest{Text: strings.TrimSpace(text), Unprompted: true}
}

// asksApproval reports whether agent may stop a run for a person's
// approval: one of its tools is an HTTP tool marked approval: required or
// an MCP tool whose server configuration requires approval, or an agent
// it asks (agents:, at any depth) may: a child's wait shows in its parent.
func (h *Handlers) asksApproval(agent *skills.Agent) bool {
	return h.mayAskApproval(agent, contract.MaxAskDepth)
}

// mayAskApproval is asksApproval for an agent that asks agents depth
// levels further down at most (the catalog refuses cycles; the depth
// bounds the walk whatever the catalog).
func (h *Handlers) mayAskApproval(agent *skills.Agent, depth int) bool {
	if agent == nil {
		return false
	}
	tools := h.Agents.Catalog.AgentTools(agent)
	for _, t := range h.Agents.Catalog.HTTPTools() {
		if t.RequiresApproval && slices.Contains(tools, t.Name) {
			return true
		}
	}
	if h.MCPApproval != nil && slices.ContainsFunc(tools, h.MCPApproval) {
		return true
	}
	if depth <= 0 {
		return false
	}
	for _, id := range agent.Agents {
		if a, ok := h.Agents.Catalog.Agent(id); ok && h.mayAskApproval(a, depth-1) {
			return true
		}
	}
	return false
}

// answerWaiting delivers the chat message of r to a run of the same chat
// and user that waits for a person, if there is one (see answers), and
// returns it; nil means the message is a new turn. A run found waiting
// through visibility is checked with its state query first, and one that
// stopped waiting meanwhile (another answer came first) leaves the message
// to a new turn too.
func (h *Handlers) answerWaiting(ctx context.Context, r runs.Request) (*chatAnswer, error) {
	last := lastUser(r.Messages)
	prev := replyTo(r.Messages)
	if last < 0 || prev == nil {
		// The chat's first message: nothing of it can be waiting.
		return nil, nil
	}
	chat, user := r.Chat.ID, r.User.Key()
	if !runs.LiteralOK(chat) || !runs.LiteralOK(user) {
		// Visibility cannot match such values exactly (see runs.LiteralOK).
		return nil, nil
	}
	var prompt string
	if askedForApproval(r.Messages) {
		prompt = prev.Content
	}
	fits := func(id string, st contract.RunState) bool { return answers(id, st, chat, user, r.Chat.Turn, prompt) }
	// A message that answers a prompt this API showed knows its run waits:
	// if visibility does not show it yet, it will in a moment. Other
	// messages look once, not to slow every chat turn down.
	id, err := h.findWaiting(ctx, chat, user, fits, prompt != "")
	if err != nil || id == "" {
		return nil, err
	}
	inputAt, err := h.Runs.Service.LastOffset(ctx, id)
	if err != nil {
		return nil, web.Unavailable("cannot read run " + id + ": " + err.Error())
	}
	input := answerInput(r.Messages[last].Content, prompt != "")
	res, err := h.Runs.Deliver(ctx, id, input)
	var ae *web.Error
	if errors.As(err, &ae) && ae.Status == http.StatusConflict {
		h.Runs.Logger().Info("the waiting run took no input; the message starts a new turn", "run", id, "chat", chat, "reason", ae.Message)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	h.Runs.Logger().Info("chat message answered a waiting run", "run", id, "chat", chat, "decision", res.Decision)
	return &chatAnswer{runID: id, inputAt: inputAt}, nil
}

// findWaiting looks a run of chat up through visibility that waits for
// user and fits, double-checked with its state query. Patient, it looks
// again for a while when visibility shows none (yet).
func (h *Handlers) findWaiting(ctx context.Context, chat, user string, fits func(string, contract.RunState) bool, patient bool) (string, error) {
	deadline := time.Now().Add(waitingLookupBudget)
	delay := 20 * time.Millisecond
	for {
		id, err := h.lookupWaiting(ctx, chat, user, fits)
		if err != nil && runs.Unreachable(err) {
			// Nor would the new turn start.
			return "", web.Unavailable("Temporal did not answer: " + err.Error())
		}
		if err != nil {
			// Without visibility the chat still works: the message is a
			// new turn.
			h.Runs.Logger().Warn("look up a waiting run of the chat", "chat", chat, "error", err)
			return "", nil
		}
		if id != "" || !patient || time.Now().Add(delay).After(deadline) {
			return id, nil
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(delay):
		}
		delay = min(delay*2, 400*time.Millisecond)
	}
}

// lookupWaiting is one look of findWaiting. Visibility lists open runs
// newest first, so of two that fit (a Regenerate left one behind), the
// person's latest is taken.
func (h *Handlers) lookupWaiting(ctx context.Context, chat, user string, fits func(string, contract.RunState) bool) (string, error) {
	page, err := h.Runs.Service.List(ctx, runs.Filter{Owner: user, Chat: chat, Status: contract.StatusWaiting}, waitingLookupPage, nil)
	if err != nil {
		return "", err
	}
	for _, e := range page.Runs {
		id := e.ID
		st, err := h.Runs.ReadState(ctx, id, user)
		if err != nil {
			h.Runs.Logger().Warn("read a waiting run of the chat", "run", id, "error", err)
			continue
		}
		if fits(id, st) {
			return id, nil
		}
	}
	return "", nil
}

// pickUp reads run's log through f up to offset inputAt, the log's end when
// a person's input reached the run, and returns the offset after which the
// response goes on: that of the last approval_required up to inputAt, where
// the chat's previous response stopped. The events up to it go to shown.
func pickUp(ctx context.Context, f runs.Follower, inputAt int64, shown func(longhaul.Event)) (int64, error) {
	var held []longhaul.Event
	var after int64
	for after < inputAt {
		events, done, err := f.Next(ctx, after)
		if err != nil {
			return 0, err
		}
		held = append(held, events...)
		if len(events) > 0 {
			after = events[len(events)-1].Offset
		}
		if done {
			break
		}
	}
	cut := resumeCut(held, inputAt)
	if cut == 0 {
		// No approval was asked for: nothing this API showed before
		// was cut short, so nothing is shown again.
		return inputAt, nil
	}
	for _, e := range held[:cut] {
		shown(e)
	}
	return held[cut-1].Offset, nil
}

// watched is what a non-streamed response saw of a run: the tools that
// finished (as Open WebUI cards) and the approval or the client tool calls
// it stopped at, if any.
type watched struct {
	pending *longhaul.ApprovalRequiredData
	// client are the client tool calls it stopped at, and text the model's
	// text of the answer that made them.
	client *longhaul.ClientToolCallsData
	text   string
	cards  strings.Builder
	// shown are the tool calls whose cards this response holds.
	shown map[string]bool
}

// watch follows run id's log from where at says until the run is done,
// waits for an approval nobody gave yet, or hands tool calls to the client.
func (h *Handlers) watch(ctx context.Context, id string, at resumeAt) (*watched, error) {
	f := h.Runs.Service.Follow(id)
	defer f.Release()
	w := &watched{shown: map[string]bool{}}
	args := map[string]string{}
	// said is the text of each model call, by name.
	said := map[string]string{}
	keepArgs := func(e longhaul.Event) {
		var d longhaul.ToolStartData
		if e.Type == longhaul.EventToolStart && e.Decode(&d) == nil {
			args[d.ToolCallID] = d.Arguments
		}
	}
	after := at.after
	if at.inputAt > 0 {
		var err error
		if after, err = pickUp(ctx, f, at.inputAt, keepArgs); err != nil {
			return nil, err
		}
	}
	for {
		events, done, err := f.Next(ctx, after)
		if err != nil {
			return nil, err
		}
		for i, e := range events {
			after = e.Offset
			keepArgs(e)
			var d longhaul.ToolOutputData
			if e.Type == longhaul.EventToolOutput && e.Decode(&d) == nil {
				w.cards.WriteString(toolCard(d, args[d.ToolCallID]))
				w.shown[d.ToolCallID] = true
			}
			if p, ok := pendingApproval(events, i); ok {
				w.pending = &p
				return w, nil
			}
			var content longhaul.ContentData
			var client longhaul.ClientToolCallsData
			switch {
			case e.Type == longhaul.EventContent && e.Decode(&content) == nil:
				said[content.Call] = content.Text
			case e.Type == longhaul.EventClientToolCalls && e.Decode(&client) == nil:
				w.client, w.text = &client, said[client.Call]
				return w, nil
			}
		}
		if done {
			return w, nil
		}
	}
}

// respondWatching answers a non-streamed request whose run may stop for a
// person's approval: with the run's answer once it is done, or, when it
// stops at a pending approval first, with the approval prompt (the run goes
// on waiting, and the chat's next message answers it). before, when set,
// resumes where the chat's previous response stopped.
func (h *Handlers) respondWatching(c *fiber.Ctx, run string, model string, openWebUI bool, at resumeAt) error {
	ctx, cancel := context.WithTimeout(c.UserContext(), h.RequestTimeout)
	defer cancel()
	w, err := h.watch(ctx, run, at)
	switch {
	case ctx.Err() != nil:
		return web.Timeout(stillGoing(h.RequestTimeout, run))
	case err != nil:
		return web.Unavailable("lost the event log of run " + run + ": " + err.Error())
	case w.pending != nil:
		content := approvalPrompt(*w.pending, run)
		if openWebUI {
			content = w.cards.String() + content
		}
		return h.completion(c, run, at, model, wire.ResponseEntry{Content: content}, "stop", longhaul.Usage{})
	case w.client != nil:
		msg := wire.ResponseEntry{Content: w.text, ToolCalls: wireCalls(w.client.Calls, false)}
		return h.completion(c, run, at, model, msg, "tool_calls", longhaul.Usage{})
	}
	res, err := h.Runs.Service.Result(ctx, run)
	if err != nil {
		return resultError(ctx, err, h.RequestTimeout, run)
	}
	content := res.Content
	if openWebUI {
		var msgs []longhaul.Message
		for _, m := range res.Messages {
			if m.Role != longhaul.RoleTool || w.shown[m.ToolCallID] {
				msgs = append(msgs, m)
			}
		}
		content = cardsFor(msgs) + content
	}
	return h.completion(c, run, at, model, wire.ResponseEntry{Content: content, ReasoningContent: res.Reasoning, ToolCalls: wireCalls(res.ToolCalls, false)}, res.FinishReason, res.Usage)
}
