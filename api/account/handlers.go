// Package account serves the routes of what the server keeps for each
// user: their conversations (/v1/conversations), long-term memories
// (/v1/memories), own credentials (/v1/connections, /v1/secrets and the
// OAuth connect pages and callback), backlog (/v1/backlog), and DELETE
// /v1/me, which takes all of it. These routes read and delete stores; they
// start no run. The package is apart from the chat engine so that they are
// read and tested with the stores alone: what they need of the rest of the
// server (a chat's files, what was learnt from a chat) comes through small
// interfaces, and the package imports no Temporal client. The server
// (package api) builds a Handlers and registers its methods in its routes
// table.
package account

import (
	"context"
	"log/slog"

	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/docstore"
	"github.com/longhaul-dev/longhaul/internal/memory"
	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/internal/usercreds"
)

// ChatFiles deletes the files attached in a chat, and its vector store,
// when the chat is deleted.
type ChatFiles interface {
	DeleteChatFiles(ctx context.Context, owner, chat string) error
}

// RunInput hands a run its input; runs.Service is one.
type RunInput interface {
	Input(ctx context.Context, id, updateID string, in contract.InputRequest) (contract.InputResult, error)
}

// Handlers serves the account routes. A nil store or service answers its
// routes 404 (the server keeps none of it), and DELETE /v1/me skips it.
type Handlers struct {
	// Conversations keeps users' chats, turn by turn.
	Conversations store.Conversations
	// Backlog keeps the backlog_manager skill's items.
	Backlog store.Backlog
	// Forget, when set, is told of every deleted conversation, so that
	// what was derived from it (memories) goes too.
	Forget ConversationForgetter
	// ChatFiles, when set, deletes a deleted conversation's files.
	ChatFiles ChatFiles
	// Memory is users' long-term memory.
	Memory *memory.Service
	// Credentials keeps users' own MCP OAuth tokens and HTTP-tool secrets.
	Credentials *usercreds.Service
	// Runs tells a run that waits for an account connection that its
	// user connected it (the OAuth callback); nil tells none.
	Runs RunInput
	// Docs keeps users' files and vector stores, which DELETE /v1/me
	// deletes.
	Docs docstore.Store
	// Webhooks keeps users' webhooks, which DELETE /v1/me deletes.
	Webhooks store.Webhooks
	// Schedules deletes a principal's schedules of runs, for DELETE
	// /v1/me; nil keeps none.
	Schedules ScheduleDeleter
	// Log takes what the handlers log; nil is slog's default.
	Log *slog.Logger
}

// ScheduleDeleter deletes every schedule of an owner and says how many.
type ScheduleDeleter interface {
	DeleteOwnerSchedules(ctx context.Context, owner string) (int, error)
}

func (h *Handlers) deleteChatFiles(ctx context.Context, owner, chat string) error {
	if h.ChatFiles == nil {
		return nil
	}
	return h.ChatFiles.DeleteChatFiles(ctx, owner, chat)
}

// log is h.Log, or slog's default when none is set.
func (h *Handlers) log() *slog.Logger {
	if h.Log == nil {
		return slog.Default()
	}
	return h.Log
}
