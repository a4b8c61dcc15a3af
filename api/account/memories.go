package account

import (
	"errors"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/internal/identity"
	"github.com/longhaul-dev/longhaul/internal/memory"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

const maxMemoryQuery = 2000

// ListMemories lists the caller's memories, newest first and paged
// (limit, page_token), or with q the ones closest to q, most similar
// first (limit, default LONGHAUL_MEMORY_K).
func (h *Handlers) ListMemories(c *fiber.Ctx) error {
	svc, err := h.memory()
	if err != nil {
		return err
	}
	user := web.Principal(c).User.Key()
	limit := 0
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return web.BadRequest("limit: must be a number from 1 to 100")
		}
		limit = n
	}
	out := wire.MemoryList{Object: "list", Data: []wire.MemoryObject{}}
	if q := strings.TrimSpace(c.Query("q")); q != "" {
		if len(q) > maxMemoryQuery {
			return web.BadRequest("q: at most 2000 bytes")
		}
		if c.Query("page_token") != "" {
			return web.BadRequest("page_token: a search (q) has one page")
		}
		found, err := svc.Search(c.UserContext(), user, q, limit)
		if err != nil {
			return h.memoryError(err)
		}
		for _, m := range found {
			o := h.memoryObject(c, m)
			score := m.Score
			o.Score = &score
			out.Data = append(out.Data, o)
		}
		return c.JSON(out)
	}
	list, next, err := svc.Store.List(c.UserContext(), user, memory.Page{Limit: limit, Token: c.Query("page_token")})
	if errors.Is(err, memory.ErrBadToken) {
		return web.BadRequest("page_token: not a token this API returned")
	}
	if err != nil {
		return h.memoryError(err)
	}
	for _, m := range list {
		out.Data = append(out.Data, h.memoryObject(c, m))
	}
	out.NextPageToken = next
	return c.JSON(out)
}

// DeleteMemory deletes one of the caller's memories; another user's is
// not found, as an unknown one is.
func (h *Handlers) DeleteMemory(c *fiber.Ctx) error {
	svc, err := h.memory()
	if err != nil {
		return err
	}
	id := c.Params("id")
	err = svc.Store.Delete(c.UserContext(), web.Principal(c).User.Key(), id)
	if errors.Is(err, memory.ErrNotFound) {
		return web.NotFound("no memory " + strconv.Quote(id))
	}
	if err != nil {
		return h.memoryError(err)
	}
	return c.JSON(wire.MemoryDeleted{ID: id, Object: "memory.deleted", Deleted: true})
}

func (h *Handlers) memory() (*memory.Service, error) {
	if h.Memory == nil {
		return nil, web.NotFound("long-term memory is off on this server (LONGHAUL_EMBED_MODEL is not set)")
	}
	return h.Memory, nil
}

// memoryError translates a memory failure: the caller's bad input is a
// 400, the embedder failing a 502, the rest a 500 (logged).
func (h *Handlers) memoryError(err error) error {
	if memory.IsInvalid(err) {
		return web.BadRequest(err.Error())
	}
	if errors.Is(err, memory.ErrEmbed) {
		return web.Upstream("the embedding endpoint failed: " + err.Error())
	}
	h.log().Error("memory store failed", "error", err)
	return web.Internal("the memory store failed")
}

// memoryObject is m as the API shows it: its chat id without the
// principal's scope prefix, which only repeats who is asking.
func (h *Handlers) memoryObject(c *fiber.Ctx, m memory.Memory) wire.MemoryObject {
	return wire.MemoryObject{
		ID: m.ID, Object: "memory", Text: m.Text,
		ChatID:    identity.ClientChatID(web.Principal(c).Name, m.ChatID),
		CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt,
	}
}
