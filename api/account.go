package api

import (
	"github.com/longhaul-dev/longhaul/api/account"
)

// ConversationForgetter removes what else was derived from a chat when the
// chat is deleted (see Config.Forget).
type ConversationForgetter = account.ConversationForgetter

// account is the account routes' handlers (package account) over the
// server's stores.
func (s *Server) account() *account.Handlers {
	return &account.Handlers{
		Conversations: s.cfg.Blobs, Backlog: s.cfg.Blobs, Forget: s.cfg.Forget, ChatFiles: s.chat(),
		Memory: s.cfg.Memory, Credentials: s.cfg.Credentials, Docs: s.cfg.Docs, Log: s.log,
		Webhooks: s.webhooks().Store,
	}
}
