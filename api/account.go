package api

import (
	"context"

	"github.com/longhaul-dev/longhaul/api/account"
	"github.com/longhaul-dev/longhaul/internal/runs"
)

// ConversationForgetter removes what else was derived from a chat when the
// chat is deleted (see Config.Forget).
type ConversationForgetter = account.ConversationForgetter

// account is the account routes' handlers (package account) over the
// server's stores.
func (s *Server) account() *account.Handlers {
	h := &account.Handlers{
		Conversations: s.cfg.Blobs, Backlog: s.cfg.Blobs, Forget: s.cfg.Forget, ChatFiles: s.chat(),
		Memory: s.cfg.Memory, Credentials: s.cfg.Credentials, Docs: s.cfg.Docs, Log: s.log,
		Webhooks: s.webhooks().Store, Runs: s.runs,
	}
	if s.cfg.Schedules != nil {
		h.Schedules = ownerSchedules{s.cfg.Schedules}
	}
	return h
}

// ownerSchedules deletes a principal's schedules (account.ScheduleDeleter).
type ownerSchedules struct{ s runs.Schedules }

func (o ownerSchedules) DeleteOwnerSchedules(ctx context.Context, owner string) (int, error) {
	return runs.DeleteOwnerSchedules(ctx, o.s, owner)
}
