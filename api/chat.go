package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/workflows"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
)

// Headers Longhaul reads and writes.
const (
	HeaderRunID         = "X-Longhaul-Run-Id"
	headerOWUIPrefix    = "X-Openwebui-"
	headerOWUIChatID    = "X-OpenWebUI-Chat-Id"
	headerOWUIMessageID = "X-OpenWebUI-Message-Id"
	headerOWUIUserID    = "X-OpenWebUI-User-Id"
	headerOWUIUserEmail = "X-OpenWebUI-User-Email"
	headerOWUIUserName  = "X-OpenWebUI-User-Name"
	headerOWUIUserRole  = "X-OpenWebUI-User-Role"
	// keepAlive is how often an idle stream gets an SSE comment.
	keepAlive = 15 * time.Second
)

func (s *Server) chatCompletions(c *fiber.Ctx) error {
	var req ChatRequest
	if err := json.Unmarshal(c.Body(), &req); err != nil {
		return errBadRequest("invalid JSON body: " + jsonProblem(err))
	}
	if err := req.validate(); err != nil {
		return errBadRequest(err.Error())
	}
	agent, ok := s.catalog.Agent(req.Model)
	if !ok {
		return errModelNotFound(fmt.Sprintf("the model %q does not exist; GET /v1/models lists the agents", req.Model))
	}
	user := userFromHeaders(c)
	if user.ID == "" && req.User != "" {
		user.ID = req.User
	}
	msgs := domainMessages(req.Messages)
	in := workflows.AgentInput{
		Agent:        agent.ID,
		Messages:     msgs,
		User:         user,
		ChatID:       chatID(c, &req, user),
		Options:      req.options(),
		ModelTimeout: s.cfg.ModelTimeout,
		Quiet:        !req.Stream,
		Background:   req.isBackgroundTask(),
	}
	runID := "run-" + uuid.NewString()
	// A background task carries the chat's headers too; it must never take
	// (or attach to) the chat turn's run, so it always gets its own.
	if in.ChatID != "" && !in.Background {
		in.Turn = req.turn()
		in.MessageID = c.Get(headerOWUIMessageID)
		runID = workflows.ChatRunID(in.ChatID, in.Turn, in.MessageID)
	}
	ctx := c.UserContext()
	run, err := s.start(ctx, runID, in, summarize(msgs, 60))
	if err != nil {
		return err
	}
	c.Set(HeaderRunID, runID)
	openWebUI := isOpenWebUI(c)
	if !req.Stream {
		return s.respond(c, run, agent.ID, openWebUI)
	}
	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	r := newRenderer("chatcmpl-"+runID, agent.ID, time.Now().Unix(), openWebUI)
	c.Set(fiber.HeaderContentType, "text/event-stream")
	c.Set(fiber.HeaderCacheControl, "no-cache")
	c.Set(fiber.HeaderConnection, "keep-alive")
	c.Set("X-Accel-Buffering", "no")
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		s.stream(w, runID, r, includeUsage)
	})
	return nil
}

// start starts the run, or attaches to the one a previous identical request
// started: running, it is followed; finished, its result is returned.
func (s *Server) start(ctx context.Context, id string, in workflows.AgentInput, question string) (client.WorkflowRun, error) {
	summary := strings.TrimSpace(in.Agent + ": " + question)
	opts := client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                s.cfg.TaskQueue,
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		StaticSummary:            summary,
		// The memo repeats the summary for run listings (GET /v1/runs),
		// which do not carry the static summary.
		Memo:             map[string]any{memoSummary: summary},
		EnableEagerStart: s.cfg.EagerStart,
	}
	run, err := s.temporal.ExecuteWorkflow(ctx, opts, workflows.AgentWorkflowName, in)
	if err != nil {
		if temporal.IsWorkflowExecutionAlreadyStartedError(err) {
			return s.temporal.GetWorkflow(ctx, id, ""), nil
		}
		s.log.Error("start run", "run", id, "error", err)
		return nil, errUnavailable("could not start the run: " + err.Error())
	}
	return run, nil
}

// respond waits for the run's result, up to the request timeout.
func (s *Server) respond(c *fiber.Ctx, run client.WorkflowRun, model string, openWebUI bool) error {
	ctx, cancel := context.WithTimeout(c.UserContext(), s.cfg.RequestTimeout)
	defer cancel()
	var res workflows.AgentResult
	if err := run.Get(ctx, &res); err != nil {
		var deadline *serviceerror.DeadlineExceeded
		if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || errors.As(err, &deadline) {
			return errTimeout(fmt.Sprintf("the run is still going after %s; it goes on: follow run %s", s.cfg.RequestTimeout, run.GetID()))
		}
		return runError(err)
	}
	content := res.Content
	if openWebUI {
		content = cardsFor(res.Messages) + content
	}
	reason := res.FinishReason
	if reason == "" {
		reason = "stop"
	}
	return c.JSON(ChatCompletion{
		ID: "chatcmpl-" + run.GetID(), Object: "chat.completion", Created: time.Now().Unix(), Model: model,
		Choices: []CompletionItem{{Index: 0, Message: ResponseEntry{Role: "assistant", Content: content}, FinishReason: reason}},
		Usage:   wireUsage(res.Usage),
	})
}

// runError translates a failed run into an API error.
func runError(err error) error {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		switch appErr.Type() {
		case activities.ErrTypeModelRejected, activities.ErrTypeModelUnavailable:
			return errUpstream(appErr.Message())
		case activities.ErrTypeUnknownAgent:
			return errModelNotFound(appErr.Message())
		case workflows.ErrTypeBadInput:
			return errBadRequest(appErr.Message())
		}
		return errInternal(appErr.Message())
	}
	if temporal.IsCanceledError(err) {
		return errInternal("the run was cancelled")
	}
	return errInternal(err.Error())
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
// done or the client leaves (a failed flush); the run goes on either way.
func (s *Server) stream(w *bufio.Writer, runID string, r *renderer, includeUsage bool) {
	f := s.hub.subscribe(runID)
	defer f.release()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var after int64
	for {
		wctx, wcancel := context.WithTimeout(ctx, keepAlive)
		events, done, err := f.next(wctx, after)
		wcancel()
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			if writeComment(w, "keep-alive") != nil {
				return
			}
			continue
		case err != nil:
			s.log.Warn("stream run", "run", runID, "error", err)
			_ = writeFrame(w, ErrorBody{Error: ErrorDetail{Message: "lost the run's event stream: " + err.Error(), Type: "server_error", Code: "stream_error"}})
			_ = writeDone(w)
			return
		}
		for _, e := range events {
			after = e.Offset
			for _, fr := range r.render(e) {
				if err := writeFrame(w, fr); err != nil {
					return
				}
			}
		}
		if err := w.Flush(); err != nil {
			return
		}
		if done {
			for _, fr := range r.finishFrames(includeUsage) {
				if writeFrame(w, fr) != nil {
					return
				}
			}
			_ = writeDone(w)
			return
		}
	}
}

func writeFrame(w *bufio.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if _, err := w.WriteString("data: "); err != nil {
		return err
	}
	if _, err := w.Write(b); err != nil {
		return err
	}
	_, err = w.WriteString("\n\n")
	return err
}

func writeComment(w *bufio.Writer, text string) error {
	if _, err := w.WriteString(": " + text + "\n\n"); err != nil {
		return err
	}
	return w.Flush()
}

func writeDone(w *bufio.Writer) error {
	if _, err := w.WriteString("data: [DONE]\n\n"); err != nil {
		return err
	}
	return w.Flush()
}

// isOpenWebUI reports whether the caller is Open WebUI (it sends its
// X-OpenWebUI-* headers).
func isOpenWebUI(c *fiber.Ctx) bool {
	found := false
	c.Request().Header.VisitAll(func(k, _ []byte) {
		if len(k) >= len(headerOWUIPrefix) && strings.EqualFold(string(k[:len(headerOWUIPrefix)]), headerOWUIPrefix) {
			found = true
		}
	})
	return found
}

func userFromHeaders(c *fiber.Ctx) longhaul.User {
	return longhaul.User{
		ID:    c.Get(headerOWUIUserID),
		Email: c.Get(headerOWUIUserEmail),
		Name:  c.Get(headerOWUIUserName),
		Role:  c.Get(headerOWUIUserRole),
	}
}

// chatID is Open WebUI's chat id, or a conversation id an OpenAI client
// passes in metadata (chat_id or conversation_id), scoped to its user so two
// callers' conversation ids never meet.
func chatID(c *fiber.Ctx, req *ChatRequest, user longhaul.User) string {
	if id := c.Get(headerOWUIChatID); id != "" {
		return id
	}
	if len(req.Metadata) == 0 {
		return ""
	}
	var md map[string]any
	if json.Unmarshal(req.Metadata, &md) != nil {
		return ""
	}
	for _, k := range []string{"chat_id", "conversation_id"} {
		if s, ok := md[k].(string); ok && s != "" {
			return user.Key() + "/" + s
		}
	}
	return ""
}

// jsonProblem describes a decoding error without Go type names.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("syntax error at byte %d", se.Offset)
	case errors.As(err, &te):
		return fmt.Sprintf("field %q has the wrong type (%s)", te.Field, te.Value)
	}
	return err.Error()
}
