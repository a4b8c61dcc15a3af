package api

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/longhaul-dev/longhaul/internal/identity"
	"github.com/longhaul-dev/longhaul/internal/memory"
)

// MemoryObject is one memory in the answers of /v1/memories.
type MemoryObject struct {
	ID     string `json:"id"`
	Object string `json:"object"`
	Text   string `json:"text"`
	// ChatID is the chat the memory was learned in, as the client named it.
	ChatID string `json:"chat_id,omitempty"`
	// Score is the similarity to q (1 = the same meaning), in a search.
	Score     *float64  `json:"score,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// MemoryList answers GET /v1/memories.
type MemoryList struct {
	Object        string         `json:"object"`
	Data          []MemoryObject `json:"data"`
	NextPageToken string         `json:"next_page_token,omitempty"`
}

// MemoryDeleted answers DELETE /v1/memories/{id}.
type MemoryDeleted struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Deleted bool   `json:"deleted"`
}

const maxMemoryQuery = 2000

// listMemories lists the caller's memories, newest first and paged
// (limit, page_token), or with q the ones closest to q, most similar
// first (limit, default LONGHAUL_MEMORY_K).
func (s *Server) listMemories(c *fiber.Ctx) error {
	svc, err := s.memory()
	if err != nil {
		return err
	}
	user := principal(c).User.Key()
	limit := 0
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return errBadRequest("limit: must be a number from 1 to 100")
		}
		limit = n
	}
	out := MemoryList{Object: "list", Data: []MemoryObject{}}
	if q := strings.TrimSpace(c.Query("q")); q != "" {
		if len(q) > maxMemoryQuery {
			return errBadRequest("q: at most 2000 bytes")
		}
		if c.Query("page_token") != "" {
			return errBadRequest("page_token: a search (q) has one page")
		}
		found, err := svc.Search(c.UserContext(), user, q, limit)
		if err != nil {
			return s.memoryError(err)
		}
		for _, m := range found {
			o := s.memoryObject(c, m)
			score := m.Score
			o.Score = &score
			out.Data = append(out.Data, o)
		}
		return c.JSON(out)
	}
	list, next, err := svc.Store.List(c.UserContext(), user, memory.Page{Limit: limit, Token: c.Query("page_token")})
	if errors.Is(err, memory.ErrBadToken) {
		return errBadRequest("page_token: not a token this API returned")
	}
	if err != nil {
		return s.memoryError(err)
	}
	for _, m := range list {
		out.Data = append(out.Data, s.memoryObject(c, m))
	}
	out.NextPageToken = next
	return c.JSON(out)
}

// deleteMemory deletes one of the caller's memories; another user's is
// not found, as an unknown one is.
func (s *Server) deleteMemory(c *fiber.Ctx) error {
	svc, err := s.memory()
	if err != nil {
		return err
	}
	id := c.Params("id")
	err = svc.Store.Delete(c.UserContext(), principal(c).User.Key(), id)
	if errors.Is(err, memory.ErrNotFound) {
		return errNotFound("no memory " + strconv.Quote(id))
	}
	if err != nil {
		return s.memoryError(err)
	}
	return c.JSON(MemoryDeleted{ID: id, Object: "memory.deleted", Deleted: true})
}

func (s *Server) memory() (*memory.Service, error) {
	if s.cfg.Memory == nil {
		return nil, errNotFound("long-term memory is off on this server (LONGHAUL_EMBED_MODEL is not set)")
	}
	return s.cfg.Memory, nil
}

// memoryError translates a memory failure: the caller's bad input is a
// 400, the embedder failing a 502, the rest a 500 (logged).
func (s *Server) memoryError(err error) error {
	if memory.IsInvalid(err) {
		return errBadRequest(err.Error())
	}
	if errors.Is(err, memory.ErrEmbed) {
		return errUpstream("the embedding endpoint failed: " + err.Error())
	}
	s.log.Error("memory store failed", "error", err)
	return errInternal("the memory store failed")
}

// memoryObject is m as the API shows it: its chat id without the
// principal's scope prefix, which only repeats who is asking.
func (s *Server) memoryObject(c *fiber.Ctx, m memory.Memory) MemoryObject {
	return MemoryObject{
		ID: m.ID, Object: "memory", Text: m.Text,
		ChatID:    identity.ClientChatID(principal(c).Name, m.ChatID),
		CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt,
	}
}
