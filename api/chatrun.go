package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// Which run answers a chat request. A chat turn's run is named by
// contract.ChatRunID: the chat, the turn (the count of user messages) and
// the answer asked for.
//
// With a message id (Open WebUI's X-OpenWebUI-Message-Id, or a plain
// client's metadata.message_id) the request names its answer: the same id
// is the same answer, so a retried request attaches to its run, running or
// finished, and the model is not called again; Regenerate, or a message
// edited into a new branch, asks for a new message id and gets a new run.
//
// Without one, a retried request and a Regenerate look the same: the same
// chat, turn and history. Handing a finished run back would answer every
// Regenerate with the old answer, so a request without a message id
// attaches only to a run of its turn that is still going and answers the
// same conversation (a retry while the answer is being written, or two
// identical requests at once); otherwise it starts a new run. A retry
// after the run finished therefore runs again. See unfinishedRun.

// memoAsked is the memo field of a chat run holding askedKey of the
// conversation it answers.
const memoAsked = runs.MemoAsked

// maxRetakes bounds the runs of one chat turn looked at for a request
// without a message id; past them it gets a run of its own.
const maxRetakes = 32

// messageID is the answer a chat request asks for: the message id header,
// else a plain client's metadata.message_id. Blank is none: Open WebUI
// sends the header empty for its background tasks when the connection's
// custom header names {{MESSAGE_ID}}.
func (s *Server) messageID(c *fiber.Ctx, req *wire.ChatRequest) string {
	if id := strings.TrimSpace(c.Get(s.cfg.Headers.MessageID)); id != "" {
		return id
	}
	if len(req.Metadata) == 0 {
		return ""
	}
	var md map[string]any
	if json.Unmarshal(req.Metadata, &md) != nil {
		return ""
	}
	id, _ := md["message_id"].(string)
	return strings.TrimSpace(id)
}

// askedKey is a hash of the conversation msgs: roles, names, text, tool
// calls and their results. Image parts count by position, not by URL, so
// the key is the same before and after their data moves to the blob store.
func askedKey(msgs []longhaul.Message) string {
	h := sha256.New()
	for _, m := range msgs {
		parts := make([]string, 0, len(m.Parts))
		for _, p := range m.Parts {
			parts = append(parts, p.Type+":"+p.Text)
		}
		calls := make([]string, 0, len(m.ToolCalls))
		for _, tc := range m.ToolCalls {
			calls = append(calls, tc.ID+":"+tc.Name+":"+tc.Arguments)
		}
		b, _ := json.Marshal([]any{m.Role, m.Name, m.ToolCallID, m.Content, parts, calls})
		h.Write(b)
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// unfinishedRun returns the id of the run that answers in, a chat request
// without a message id whose turn's run is named base: the first of base,
// base-r2, base-r3, … that no run has taken yet, or whose run is still
// going and answers the same conversation (askedKey). A finished run is
// never handed back (see the comment at the top of this file).
func (s *Server) unfinishedRun(ctx context.Context, base string, in contract.AgentInput) (string, error) {
	key, owner := askedKey(in.Messages), in.User.Key()
	for k := 1; k <= maxRetakes; k++ {
		id := base
		if k > 1 {
			id = contract.ChatRetakeID(base, k)
		}
		info, err := s.runs.Describe(ctx, id)
		switch {
		case errors.Is(err, runs.ErrNotFound):
			return id, nil
		case err != nil:
			return "", errUnavailable("could not read run " + id + ": " + err.Error())
		}
		if info.Memo[memoOwner] != owner {
			// Not the caller's: start refuses it as unknown.
			return id, nil
		}
		if info.Status == runs.ExecRunning && info.Memo[memoAsked] == key {
			return id, nil
		}
	}
	return contract.ChatSpareID(base, uuid.NewString()), nil
}
