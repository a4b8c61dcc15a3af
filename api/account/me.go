package account

import (
	"context"
	"errors"
	"fmt"

	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/internal/docstore"
	"github.com/longhaul-dev/longhaul/internal/wire"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul/internal/memory"
	"github.com/longhaul-dev/longhaul/internal/store"
)

// DeleteMe deletes everything this server keeps of the caller: its
// schedules of runs first (so none brings data back), then every
// conversation (with what was learnt from it and its runs' turns), the
// memories left, the backlog, the files and vector stores, and the user's own credentials — connections
// revoked at their authorization servers first (best effort), then every
// sealed token, secret and pending authorization. Each part is idempotent,
// so a call that fails half-way is repeated; a second call deletes nothing.
// Workflow histories of the user's runs stay in Temporal until its
// retention ends them; they hold no credentials.
func (h *Handlers) DeleteMe(c *fiber.Ctx) error {
	ctx := c.UserContext()
	user := web.Principal(c).User.Key()
	out := wire.UserDeleted{Object: "user.deleted", Deleted: true}
	var err error
	if h.Schedules != nil {
		if out.Schedules, err = h.Schedules.DeleteOwnerSchedules(ctx, user); err != nil {
			h.log().Error("delete the user's schedules", "error", err)
			return web.Internal("deleting your schedules failed; nothing else was deleted, try again")
		}
	}
	if h.Credentials != nil {
		if out.Connections, out.Credentials, err = h.deleteCredentials(ctx, user); err != nil {
			h.log().Error("delete the user's credentials", "error", err)
			return web.Internal("deleting your credentials failed; nothing else was deleted, try again")
		}
	}
	if h.Conversations != nil {
		if out.Conversations, err = h.deleteConversations(ctx, user); err != nil {
			h.log().Error("delete the user's conversations", "error", err)
			return web.Internal("deleting your conversations failed part-way; try again")
		}
	}
	if h.Backlog != nil {
		if out.BacklogItems, err = h.Backlog.DeleteUserBacklog(ctx, user); err != nil {
			h.log().Error("delete the user's backlog", "error", err)
			return web.Internal("deleting your backlog failed; try again")
		}
	}
	if h.Memory != nil {
		if out.Memories, err = deleteMemories(ctx, h.Memory.Store, user); err != nil {
			h.log().Error("delete the user's memories", "error", err)
			return web.Internal("deleting your memories failed part-way; try again")
		}
	}
	if h.Docs != nil {
		if out.Documents, err = deleteDocuments(ctx, h.Docs, user); err != nil {
			h.log().Error("delete the user's documents", "error", err)
			return web.Internal("deleting your files and vector stores failed; try again")
		}
	}
	if h.Webhooks != nil {
		if out.Webhooks, err = h.Webhooks.DeleteUserWebhooks(ctx, user); err != nil {
			h.log().Error("delete the user's webhooks", "error", err)
			return web.Internal("deleting your webhooks failed; try again")
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
func (h *Handlers) deleteCredentials(ctx context.Context, user string) (int, int64, error) {
	svc := h.Credentials
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
			h.log().Warn("revoke a connection", "mcp_server", cn.Server, "error", err)
		} else if ok {
			n++
		}
	}
	rest, err := svc.Forget(ctx, user)
	return n, rest, err
}

// deleteConversations deletes every conversation of the user, each the way
// DELETE /v1/conversations/{id} does.
func (h *Handlers) deleteConversations(ctx context.Context, user string) (int, error) {
	n, seen := 0, map[string]bool{}
	for {
		page, err := h.Conversations.ListConversations(ctx, user, 100, nil)
		if err != nil || len(page) == 0 {
			return n, err
		}
		for _, cv := range page {
			if seen[cv.Chat] {
				return n, fmt.Errorf("conversation %q listed again after its deletion", cv.Chat)
			}
			seen[cv.Chat] = true
			if h.Forget != nil {
				if err := h.Forget.ForgetConversation(ctx, user, cv.Chat); err != nil {
					return n, err
				}
			}
			if _, err := h.Conversations.DeleteConversation(ctx, user, cv.Chat); err != nil && !errors.Is(err, store.ErrNoConversation) {
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
