package api

import (
	"errors"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/longhaul-dev/longhaul/internal/store"
)

// The backlog API lets a caller read the backlog the backlog_manager
// skill keeps for them (GET /v1/backlog); the agent's tools change it. It
// reads only the caller's own items.

// BacklogObject is one item in GET /v1/backlog.
type BacklogObject struct {
	// ID is the item's number in the caller's backlog (#3 is 3).
	ID       int64  `json:"id"`
	Object   string `json:"object"`
	Title    string `json:"title"`
	Notes    string `json:"notes,omitempty"`
	Priority string `json:"priority"`
	Status   string `json:"status"`
	// ChatID is the chat that added the item, as the client named it.
	ChatID    string     `json:"chat_id,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
	ClosedAt  *time.Time `json:"closed_at,omitempty"`
}

// BacklogList answers GET /v1/backlog; Total counts every matching item,
// Data holds up to limit of them.
type BacklogList struct {
	Object string          `json:"object"`
	Data   []BacklogObject `json:"data"`
	Total  int             `json:"total"`
}

// listBacklog answers GET /v1/backlog?status=&q=&limit=: the caller's
// items, active ones (the default status) by priority, closed ones most
// recently closed first.
func (s *Server) listBacklog(c *fiber.Ctx) error {
	if s.cfg.Blobs == nil {
		return errNotFound("this server keeps no backlog")
	}
	limit := 50
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > store.MaxBacklogList {
			return errBadRequest("limit: must be a number from 1 to " + strconv.Itoa(store.MaxBacklogList))
		}
		limit = n
	}
	q := c.Query("q")
	if len(q) > 4*store.MaxBacklogTitle {
		return errBadRequest("q: at most " + strconv.Itoa(4*store.MaxBacklogTitle) + " bytes")
	}
	items, total, err := s.cfg.Blobs.BacklogItems(c.UserContext(), principal(c).User.Key(),
		store.BacklogQuery{Status: c.Query("status"), Text: q, Limit: limit})
	switch {
	case errors.Is(err, store.ErrInvalidBacklogItem):
		return errBadRequest("status: must be active, closed, all, open, in_progress, done or wont_do")
	case err != nil:
		s.log.Error("list backlog", "error", err)
		return errInternal("reading the backlog failed")
	}
	out := BacklogList{Object: "list", Data: make([]BacklogObject, 0, len(items)), Total: total}
	for _, it := range items {
		o := BacklogObject{ID: it.ID, Object: "backlog.item", Title: it.Title, Notes: it.Notes, Priority: it.Priority,
			Status: it.Status, CreatedAt: it.CreatedAt, UpdatedAt: it.UpdatedAt}
		if it.Chat != "" {
			o.ChatID = clientChatID(c, it.Chat)
		}
		if !it.ClosedAt.IsZero() {
			closed := it.ClosedAt
			o.ClosedAt = &closed
		}
		out.Data = append(out.Data, o)
	}
	return c.JSON(out)
}
