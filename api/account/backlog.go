package account

import (
	"errors"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// The backlog API lets a caller read the backlog the backlog_manager
// skill keeps for them (GET /v1/backlog); the agent's tools change it. It
// reads only the caller's own items.

// ListBacklog answers GET /v1/backlog?status=&q=&limit=: the caller's
// items, active ones (the default status) by priority, closed ones most
// recently closed first.
func (h *Handlers) ListBacklog(c *fiber.Ctx) error {
	if h.Backlog == nil {
		return web.NotFound("this server keeps no backlog")
	}
	limit := 50
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > store.MaxBacklogList {
			return web.BadRequest("limit: must be a number from 1 to " + strconv.Itoa(store.MaxBacklogList))
		}
		limit = n
	}
	q := c.Query("q")
	if len(q) > 4*store.MaxBacklogTitle {
		return web.BadRequest("q: at most " + strconv.Itoa(4*store.MaxBacklogTitle) + " bytes")
	}
	items, total, err := h.Backlog.BacklogItems(c.UserContext(), web.Principal(c).User.Key(),
		store.BacklogQuery{Status: c.Query("status"), Text: q, Limit: limit})
	switch {
	case errors.Is(err, store.ErrInvalidBacklogItem):
		return web.BadRequest("status: must be active, closed, all, open, in_progress, done or wont_do")
	case err != nil:
		h.log().Error("list backlog", "error", err)
		return web.Internal("reading the backlog failed")
	}
	out := wire.BacklogList{Object: "list", Data: make([]wire.BacklogObject, 0, len(items)), Total: total}
	for _, it := range items {
		o := wire.BacklogObject{ID: it.ID, Object: "backlog.item", Title: it.Title, Notes: it.Notes, Priority: it.Priority,
			Status: it.Status, CreatedAt: it.CreatedAt, UpdatedAt: it.UpdatedAt}
		if it.Chat != "" {
			o.ChatID = web.ClientChatID(c, it.Chat)
		}
		if !it.ClosedAt.IsZero() {
			closed := it.ClosedAt
			o.ClosedAt = &closed
		}
		out.Data = append(out.Data, o)
	}
	return c.JSON(out)
}
