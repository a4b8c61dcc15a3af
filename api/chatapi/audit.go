package chatapi

import (
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// HeaderAudit asks for the audit trail: any value but "", "0", "false",
// "no" or "off" does (Open WebUI sends it as a connection header).
const HeaderAudit = "X-Longhaul-Audit"

// auditKey is the fiber local that marks a chat request asking for the
// audit trail.
type auditKey struct{}

// wantsAudit reports whether a chat request asks for the audit trail: the
// body's "longhaul": {"audit": true}, or the X-Longhaul-Audit header.
func wantsAudit(c *fiber.Ctx, req *wire.ChatRequest) bool {
	if req.Longhaul != nil && req.Longhaul.Audit {
		return true
	}
	return headerOn(c.Get(HeaderAudit))
}

// headerOn reads a switch header: set and not a word for off.
func headerOn(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "0", "false", "no", "off":
		return false
	}
	return true
}

// asked reports whether the request being answered asked for the audit
// trail (see Completions).
func asked(c *fiber.Ctx) bool {
	v, _ := c.Locals(auditKey{}).(bool)
	return v
}
