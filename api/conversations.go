package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/identity"
	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// The conversations API shows a caller the chats the conversation store
// keeps of theirs — each turn's real timeline — and deletes them. A chat's
// id is the client's own (Open WebUI's chat id, or metadata.chat_id),
// scoped to the caller as chat requests are; another caller's chat with the
// same id is another chat, and one the caller does not have is a 404.

// ConversationForgetter removes what else was derived from a chat when the
// chat is deleted: the memories extracted from it.
type ConversationForgetter interface {
	ForgetConversation(ctx context.Context, user, chatID string) error
}

// ConversationSummary is one chat in GET /v1/conversations.
type ConversationSummary struct {
	ID        string    `json:"id"`
	Object    string    `json:"object"`
	Title     string    `json:"title"`
	Turns     int       `json:"turns"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// ConversationList answers GET /v1/conversations, newest first; pass
// NextPageToken as page_token for the next page.
type ConversationList struct {
	Object        string                `json:"object"`
	Data          []ConversationSummary `json:"data"`
	NextPageToken string                `json:"next_page_token,omitempty"`
}

// ConversationDetail answers GET /v1/conversations/{id}: the chat's turns,
// oldest first.
type ConversationDetail struct {
	ConversationSummary
	Timeline []ConversationTurn `json:"timeline"`
}

// ConversationTurn is one stored turn: the run that answered it and what
// it added to the conversation.
type ConversationTurn struct {
	RunID      string                `json:"run_id"`
	Turn       int                   `json:"turn"`
	Agent      string                `json:"agent"`
	Status     string                `json:"status"`
	StartedAt  time.Time             `json:"started_at"`
	FinishedAt time.Time             `json:"finished_at"`
	Usage      wire.WireUsage        `json:"usage"`
	Messages   []ConversationMessage `json:"messages"`
}

// ConversationMessage is one message of a turn. A tool message's content
// is what the model read (an excerpt when Truncated); Ref names the whole
// output and OutputURL serves it.
type ConversationMessage struct {
	Role       string                `json:"role"`
	Content    string                `json:"content"`
	Name       string                `json:"name,omitempty"`
	ToolCalls  []wire.WireToolCall   `json:"tool_calls,omitempty"`
	ToolCallID string                `json:"tool_call_id,omitempty"`
	Truncated  bool                  `json:"truncated,omitempty"`
	Error      bool                  `json:"error,omitempty"`
	Ref        string                `json:"ref,omitempty"`
	OutputURL  string                `json:"output_url,omitempty"`
	Status     []contract.CallStatus `json:"status,omitempty"`
}

// ConversationDeleted answers DELETE /v1/conversations/{id}.
type ConversationDeleted struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Deleted bool   `json:"deleted"`
	// Runs are the runs whose stored turns and outputs were removed.
	Runs []string `json:"runs"`
}

// findConversation is the caller's chat the path names: the caller's user
// key, the store's id of the chat and the client's; or the error to answer
// with, a 404 when the caller has no such chat. doing names the request in
// the message of an internal error ("reading", "deleting").
func (s *Server) findConversation(c *fiber.Ctx, cs store.Conversations, doing string) (user, chat, id string, cv store.Conversation, err error) {
	id, err = url.PathUnescape(c.Params("id"))
	if err != nil || id == "" {
		return "", "", "", cv, errBadRequest("bad conversation id")
	}
	p := principal(c)
	user, chat = p.User.Key(), identity.ChatKey(p.Name, id)
	cv, err = cs.Conversation(c.UserContext(), user, chat)
	switch {
	case errors.Is(err, store.ErrNoConversation):
		return "", "", "", cv, errNotFound("no conversation " + id)
	case err != nil:
		s.log.Error("read conversation", "error", err)
		return "", "", "", cv, errInternal(doing + " the conversation failed")
	}
	return user, chat, id, cv, nil
}

var clientChatID = web.ClientChatID

func (s *Server) conversations() (store.Conversations, error) {
	if s.cfg.Blobs == nil {
		return nil, errNotFound("this server keeps no conversations")
	}
	return s.cfg.Blobs, nil
}

func (s *Server) listConversations(c *fiber.Ctx) error {
	cs, err := s.conversations()
	if err != nil {
		return err
	}
	limit, err := listLimit(c)
	if err != nil {
		return err
	}
	user := principal(c).User.Key()
	scope := "conversations\x00" + principal(c).Name + "\x00" + user
	var after *store.ConversationCursor
	if v := c.Query("page_token"); v != "" {
		after = openConversationToken(scope, v)
		if after == nil {
			return errBadRequest("page_token: not a token this API returned for this user")
		}
	}
	// One more than asked tells whether a next page exists.
	list, err := cs.ListConversations(c.UserContext(), user, limit+1, after)
	if err != nil {
		s.log.Error("list conversations", "error", err)
		return errInternal("listing conversations failed")
	}
	out := ConversationList{Object: "list", Data: []ConversationSummary{}}
	for i, cv := range list {
		if i == limit {
			last := list[limit-1]
			out.NextPageToken = sealConversationToken(scope, store.ConversationCursor{UpdatedAt: last.UpdatedAt, Chat: last.Chat})
			break
		}
		out.Data = append(out.Data, summaryOfConversation(c, cv))
	}
	return c.JSON(out)
}

type conversationToken struct {
	UpdatedAt int64  `json:"u"`
	Chat      string `json:"c"`
}

func sealConversationToken(scope string, cur store.ConversationCursor) string {
	b, _ := json.Marshal(conversationToken{UpdatedAt: cur.UpdatedAt.UnixMicro(), Chat: cur.Chat})
	return sealPageToken(scope, b)
}

func openConversationToken(scope, v string) *store.ConversationCursor {
	b, ok := openPageToken(scope, v)
	if !ok {
		return nil
	}
	var tok conversationToken
	if json.Unmarshal(b, &tok) != nil {
		return nil
	}
	return &store.ConversationCursor{UpdatedAt: time.UnixMicro(tok.UpdatedAt).UTC(), Chat: tok.Chat}
}

func summaryOfConversation(c *fiber.Ctx, cv store.Conversation) ConversationSummary {
	return ConversationSummary{
		ID: clientChatID(c, cv.Chat), Object: "conversation", Title: cv.Title, Turns: cv.Turns,
		CreatedAt: cv.CreatedAt, UpdatedAt: cv.UpdatedAt,
	}
}

func (s *Server) getConversation(c *fiber.Ctx) error {
	cs, err := s.conversations()
	if err != nil {
		return err
	}
	user, chat, _, cv, err := s.findConversation(c, cs, "reading")
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	turns, err := cs.Turns(ctx, user, chat, store.TurnQuery{Messages: true})
	if err != nil {
		s.log.Error("read conversation turns", "error", err)
		return errInternal("reading the conversation failed")
	}
	out := ConversationDetail{ConversationSummary: summaryOfConversation(c, cv), Timeline: []ConversationTurn{}}
	for _, t := range turns {
		ct := ConversationTurn{
			RunID: t.Run, Turn: t.Turn, Agent: t.Agent, Status: t.Status, StartedAt: t.StartedAt, FinishedAt: t.FinishedAt,
			Usage:    wire.WireUsage{PromptTokens: int(t.PromptTokens), CompletionTokens: int(t.CompletionTokens), TotalTokens: int(t.TotalTokens)},
			Messages: []ConversationMessage{},
		}
		for _, m := range t.Messages {
			var tm contract.TimelineMessage
			if err := json.Unmarshal(m.Data, &tm); err != nil {
				s.log.Error("a stored conversation message is damaged", "run", t.Run, "seq", m.Seq, "error", err)
				continue
			}
			cm := ConversationMessage{
				Role: string(tm.Role), Content: tm.Content, Name: tm.Name, ToolCallID: tm.ToolCallID,
				Truncated: tm.Truncated, Error: tm.Error, Ref: tm.Ref, Status: tm.Status,
			}
			if tm.Ref != "" {
				cm.OutputURL = "/v1/runs/" + url.PathEscape(t.Run) + "/outputs/" + url.PathEscape(tm.Ref)
			}
			for _, tc := range tm.ToolCalls {
				call := wire.WireToolCall{ID: tc.ID, Type: "function"}
				call.Function.Name, call.Function.Arguments = tc.Name, tc.Arguments
				cm.ToolCalls = append(cm.ToolCalls, call)
			}
			ct.Messages = append(ct.Messages, cm)
		}
		out.Timeline = append(out.Timeline, ct)
	}
	return c.JSON(out)
}

func (s *Server) deleteConversation(c *fiber.Ctx) error {
	cs, err := s.conversations()
	if err != nil {
		return err
	}
	user, chat, id, _, err := s.findConversation(c, cs, "deleting")
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	// What was learnt from the chat goes first: should that fail, the chat
	// is still there to delete again.
	if s.cfg.Forget != nil {
		if err := s.cfg.Forget.ForgetConversation(ctx, user, chat); err != nil {
			s.log.Error("forget what was learnt from a conversation", "error", err)
			return errInternal("forgetting what was learnt from the conversation failed; nothing was deleted, try again")
		}
	}
	// So do the files attached in the chat, and its vector store.
	if err := s.deleteChatFiles(ctx, user, chat); err != nil {
		s.log.Error("delete a conversation's files", "error", err)
		return errInternal("deleting the conversation's files failed; nothing else was deleted, try again")
	}
	runs, err := cs.DeleteConversation(ctx, user, chat)
	switch {
	case errors.Is(err, store.ErrNoConversation):
		return errNotFound("no conversation " + id)
	case err != nil:
		s.log.Error("delete conversation", "error", err)
		return errInternal("deleting the conversation failed")
	}
	return c.JSON(ConversationDeleted{ID: id, Object: "conversation.deleted", Deleted: true, Runs: runs})
}
