package api

import (
	"context"
	"errors"
	"fmt"

	"github.com/longhaul-dev/longhaul/internal/docstore"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul/internal/memory"
	"github.com/longhaul-dev/longhaul/internal/store"
)

// UserDeleted answers DELETE /v1/me: what went of the caller's data.
type UserDeleted struct {
	Object        string `json:"object"`
	Deleted       bool   `json:"deleted"`
	Conversations int    `json:"conversations"`
	Memories      int    `json:"memories"`
	BacklogItems  int64  `json:"backlog_items"`
	Connections   int    `json:"connections"`
	Credentials   int64  `json:"credentials"`
	// Documents reports that the caller had files or vector stores, now
	// deleted with their chunks (false when there were none, or the
	// server keeps no documents).
	Documents bool `json:"documents"`
}

// deleteMe deletes everything this server keeps of the caller: every
// conversation (with what was learnt from it and its runs' turns), the
// memories left, the backlog, the files and vector stores, and the user's own credentials — connections
// revoked at their authorization servers first (best effort), then every
// sealed token, secret and pending authorization. Each part is idempotent,
// so a call that fails half-way is repeated; a second call deletes nothing.
// Workflow histories of the user's runs stay in Temporal until its
// retention ends them; they hold no credentials.
func (s *Server) deleteMe(c *fiber.Ctx) error {
	ctx := c.UserContext()
	user := principal(c).User.Key()
	out := UserDeleted{Object: "user.deleted", Deleted: true}
	var err error
	if s.cfg.Credentials != nil {
		if out.Connections, out.Credentials, err = s.deleteCredentials(ctx, user); err != nil {
			s.log.Error("delete the user's credentials", "error", err)
			return errInternal("deleting your credentials failed; nothing else was deleted, try again")
		}
	}
	if s.cfg.Blobs != nil {
		if out.Conversations, err = s.deleteConversations(ctx, user); err != nil {
			s.log.Error("delete the user's conversations", "error", err)
			return errInternal("deleting your conversations failed part-way; try again")
		}
		if out.BacklogItems, err = s.cfg.Blobs.DeleteUserBacklog(ctx, user); err != nil {
			s.log.Error("delete the user's backlog", "error", err)
			return errInternal("deleting your backlog failed; try again")
		}
	}
	if s.cfg.Memory != nil {
		if out.Memories, err = deleteMemories(ctx, s.cfg.Memory.Store, user); err != nil {
			s.log.Error("delete the user's memories", "error", err)
			return errInternal("deleting your memories failed part-way; try again")
		}
	}
	if s.cfg.Docs != nil {
		if out.Documents, err = deleteDocuments(ctx, s.cfg.Docs, user); err != nil {
			s.log.Error("delete the user's documents", "error", err)
			return errInternal("deleting your files and vector stores failed; try again")
		}
	}
	return c.JSON(out)
}

// deleteDocuments deletes the owner's files and vector stores with their
// chunks, and reports whether there were any.
func deleteDocuments(ctx context.Context, docs docstore.Store, owner string) (bool, error) {
	files, _, err := docs.ListFiles(ctx, owner, "", docstore.Page{Limit: 1})
	if err != nil {
		return false, err
	}
	stores, _, err := docs.ListVectorStores(ctx, owner, docstore.Page{Limit: 1})
	if err != nil {
		return false, err
	}
	return len(files)+len(stores) > 0, docs.DeleteOwner(ctx, owner)
}

// deleteCredentials disconnects every connected MCP server (revoking its
// tokens where the server allows) and deletes the rest of the user's
// sealed credentials.
func (s *Server) deleteCredentials(ctx context.Context, user string) (int, int64, error) {
	svc := s.cfg.Credentials
	conns, err := svc.Connections(ctx, user)
	if err != nil {
		return 0, 0, err
	}
	n := 0
	for _, cn := range conns {
		if !cn.Connected {
			continue
		}
		// A revocation the server refuses must not keep the user's data:
		// Forget below deletes the tokens whatever Disconnect managed.
		if ok, err := svc.Disconnect(ctx, user, cn.Server); err != nil {
			s.log.Warn("revoke a connection", "mcp_server", cn.Server, "error", err)
		} else if ok {
			n++
		}
	}
	rest, err := svc.Forget(ctx, user)
	return n, rest, err
}

// deleteConversations deletes every conversation of the user, each the way
// DELETE /v1/conversations/{id} does.
func (s *Server) deleteConversations(ctx context.Context, user string) (int, error) {
	n, seen := 0, map[string]bool{}
	for {
		page, err := s.cfg.Blobs.ListConversations(ctx, user, 100, nil)
		if err != nil || len(page) == 0 {
			return n, err
		}
		for _, cv := range page {
			if seen[cv.Chat] {
				return n, fmt.Errorf("conversation %q listed again after its deletion", cv.Chat)
			}
			seen[cv.Chat] = true
			if s.cfg.Forget != nil {
				if err := s.cfg.Forget.ForgetConversation(ctx, user, cv.Chat); err != nil {
					return n, err
				}
			}
			if _, err := s.cfg.Blobs.DeleteConversation(ctx, user, cv.Chat); err != nil && !errors.Is(err, store.ErrNoConversation) {
				return n, err
			}
			n++
		}
	}
}

// deleteMemories deletes every memory left to the user.
func deleteMemories(ctx context.Context, ms memory.Store, user string) (int, error) {
	n, seen := 0, map[string]bool{}
	for {
		page, _, err := ms.List(ctx, user, memory.Page{Limit: 100})
		if err != nil || len(page) == 0 {
			return n, err
		}
		for _, m := range page {
			if seen[m.ID] {
				return n, fmt.Errorf("memory %q listed again after its deletion", m.ID)
			}
			seen[m.ID] = true
			if err := ms.Delete(ctx, user, m.ID); err != nil && !errors.Is(err, memory.ErrNotFound) {
				return n, err
			}
			n++
		}
	}
}
