package account

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

// findConversation is the caller's chat the path names: the caller's user
// key, the store's id of the chat and the client's; or the error to answer
// with, a 404 when the caller has no such chat. doing names the request in
// the message of an internal error ("reading", "deleting").
func (h *Handlers) findConversation(c *fiber.Ctx, cs store.Conversations, doing string) (user, chat, id string, cv store.Conversation, err error) {
	id, err = url.PathUnescape(c.Params("id"))
	if err != nil || id == "" {
		return "", "", "", cv, web.BadRequest("bad conversation id")
	}
	p := web.Principal(c)
	user, chat = p.User.Key(), identity.ChatKey(p.Name, id)
	cv, err = cs.Conversation(c.UserContext(), user, chat)
	switch {
	case errors.Is(err, store.ErrNoConversation):
		return "", "", "", cv, web.NotFound("no conversation " + id)
	case err != nil:
		h.log().Error("read conversation", "error", err)
		return "", "", "", cv, web.Internal(doing + " the conversation failed")
	}
	return user, chat, id, cv, nil
}

func (h *Handlers) conversations() (store.Conversations, error) {
	if h.Conversations == nil {
		return nil, web.NotFound("this server keeps no conversations")
	}
	return h.Conversations, nil
}

// ListConversations is GET /v1/conversations: the caller's chats, most
// recently updated first, paged (limit, page_token).
func (h *Handlers) ListConversations(c *fiber.Ctx) error {
	cs, err := h.conversations()
	if err != nil {
		return err
	}
	limit, err := web.ListLimit(c)
	if err != nil {
		return err
	}
	user := web.Principal(c).User.Key()
	scope := "conversations\x00" + web.Principal(c).Name + "\x00" + user
	var after *store.ConversationCursor
	if v := c.Query("page_token"); v != "" {
		after = openConversationToken(scope, v)
		if after == nil {
			return web.BadRequest("page_token: not a token this API returned for this user")
		}
	}
	// One more than asked tells whether a next page exists.
	list, err := cs.ListConversations(c.UserContext(), user, limit+1, after)
	if err != nil {
		h.log().Error("list conversations", "error", err)
		return web.Internal("listing conversations failed")
	}
	out := wire.ConversationList{Object: "list", Data: []wire.ConversationSummary{}}
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
	return web.SealPageToken(scope, b)
}

func openConversationToken(scope, v string) *store.ConversationCursor {
	b, ok := web.OpenPageToken(scope, v)
	if !ok {
		return nil
	}
	var tok conversationToken
	if json.Unmarshal(b, &tok) != nil {
		return nil
	}
	return &store.ConversationCursor{UpdatedAt: time.UnixMicro(tok.UpdatedAt).UTC(), Chat: tok.Chat}
}

func summaryOfConversation(c *fiber.Ctx, cv store.Conversation) wire.ConversationSummary {
	return wire.ConversationSummary{
		ID: web.ClientChatID(c, cv.Chat), Object: "conversation", Title: cv.Title, Turns: cv.Turns,
		CreatedAt: cv.CreatedAt, UpdatedAt: cv.UpdatedAt,
	}
}

// GetConversation is GET /v1/conversations/{id}: the chat's stored turns,
// oldest first.
func (h *Handlers) GetConversation(c *fiber.Ctx) error {
	cs, err := h.conversations()
	if err != nil {
		return err
	}
	user, chat, _, cv, err := h.findConversation(c, cs, "reading")
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	turns, err := cs.Turns(ctx, user, chat, store.TurnQuery{Messages: true})
	if err != nil {
		h.log().Error("read conversation turns", "error", err)
		return web.Internal("reading the conversation failed")
	}
	out := wire.ConversationDetail{ConversationSummary: summaryOfConversation(c, cv), Timeline: []wire.ConversationTurn{}}
	for _, t := range turns {
		ct := wire.ConversationTurn{
			RunID: t.Run, Turn: t.Turn, Agent: t.Agent, Status: t.Status, StartedAt: t.StartedAt, FinishedAt: t.FinishedAt,
			Usage:    wire.WireUsage{PromptTokens: int(t.PromptTokens), CompletionTokens: int(t.CompletionTokens), TotalTokens: int(t.TotalTokens)},
			Messages: []wire.ConversationMessage{},
		}
		for _, m := range t.Messages {
			var tm contract.TimelineMessage
			if err := json.Unmarshal(m.Data, &tm); err != nil {
				h.log().Error("a stored conversation message is damaged", "run", t.Run, "seq", m.Seq, "error", err)
				continue
			}
			cm := wire.ConversationMessage{
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

// DeleteConversation is DELETE /v1/conversations/{id}: what was learnt
// from the chat, its files, and its runs' stored turns and outputs.
func (h *Handlers) DeleteConversation(c *fiber.Ctx) error {
	cs, err := h.conversations()
	if err != nil {
		return err
	}
	user, chat, id, _, err := h.findConversation(c, cs, "deleting")
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	// What was learnt from the chat goes first: should that fail, the chat
	// is still there to delete again.
	if h.Forget != nil {
		if err := h.Forget.ForgetConversation(ctx, user, chat); err != nil {
			h.log().Error("forget what was learnt from a conversation", "error", err)
			return web.Internal("forgetting what was learnt from the conversation failed; nothing was deleted, try again")
		}
	}
	// So do the files attached in the chat, and its vector store.
	if err := h.deleteChatFiles(ctx, user, chat); err != nil {
		h.log().Error("delete a conversation's files", "error", err)
		return web.Internal("deleting the conversation's files failed; nothing else was deleted, try again")
	}
	runs, err := cs.DeleteConversation(ctx, user, chat)
	switch {
	case errors.Is(err, store.ErrNoConversation):
		return web.NotFound("no conversation " + id)
	case err != nil:
		h.log().Error("delete conversation", "error", err)
		return web.Internal("deleting the conversation failed")
	}
	return c.JSON(wire.ConversationDeleted{ID: id, Object: "conversation.deleted", Deleted: true, Runs: runs})
}
