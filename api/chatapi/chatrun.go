package chatapi

import (
	"encoding/json"
	"strings"

	"github.com/gofiber/fiber/v2"
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
// after the run finished therefore runs again. The runs package picks the
// run (runs.ChatTurn.Retake).

// messageID is the answer a chat request asks for: the message id header,
// else a plain client's metadata.message_id. Blank is none: Open WebUI
// sends the header empty for its background tasks when the connection's
// custom header names {{MESSAGE_ID}}.
func (h *Handlers) messageID(c *fiber.Ctx, req *wire.ChatRequest) string {
	if id := strings.TrimSpace(c.Get(h.Headers.MessageID)); id != "" {
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
