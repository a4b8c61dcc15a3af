package api

import (
	"bytes"
	"io"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul/api/web"
)

// Request bodies are read as streams (fiber.Config.StreamRequestBody), so
// that POST /v1/files can take a file up to LONGHAUL_MAX_FILE_BYTES
// without holding it in memory, while every other route keeps the
// LONGHAUL_MAX_BODY_BYTES limit, enforced here rather than by fasthttp.
//
// What fasthttp v1.51.0 (fiber v2.52.15's) does with a streamed body, and
// why this middleware exists:
//   - fiber passes StreamRequestBody and DisablePreParseMultipartForm to
//     the fasthttp server (fiber app.go:1025-1026);
//   - with StreamRequestBody, Request.ContinueReadBodyStream (fasthttp
//     http.go:1323-1378) reads at most 8 KiB up front and hands the rest
//     to the handler as RequestBodyStream; a body over
//     MaxRequestBodySize is NOT refused (ErrBodyTooLarge only turns into a
//     stream, http.go:1359-1364), so the limit must be kept by us;
//   - unless DisablePreParseMultipartForm, a multipart body of known
//     length is parsed whole first, its files spilled to temporary files
//     (http.go:1326-1339, readMultipartForm http.go:1063-1078) with no
//     size limit at all: so pre-parsing is off;
//   - after the handler, a stream not read to its end is released
//     (server.go:2459-2464) but its unread bytes are left on the
//     connection, where the next request would be parsed from them: a
//     response that leaves a body unread must close the connection.
//
// bodyLimit, first in the chain, reads the body of every request but POST
// /v1/files into memory up to MaxBodyBytes (413 past it, the connection
// closed), so handlers see c.Body() as before. For POST /v1/files it lets
// the handler stream, and closes the connection after the response unless
// the handler read the body to its end (web.Drain).
func (s *Server) bodyLimit(c *fiber.Ctx) error {
	stream := c.Context().RequestBodyStream()
	if stream == nil {
		return c.Next()
	}
	if c.Method() == fiber.MethodPost && strings.EqualFold(strings.TrimSuffix(c.Path(), "/"), "/v1/files") {
		err := c.Next()
		if !web.Drained(c) {
			c.Context().SetConnectionClose()
		}
		return err
	}
	limit := s.cfg.MaxBodyBytes
	if n := c.Request().Header.ContentLength(); n > 0 && int64(n) > limit {
		// A little over is read and dropped, as net/http does, so the
		// client reads the 413 rather than a reset connection.
		if int64(n) <= limit+lingerBytes {
			discard(stream, lingerBytes)
		}
		c.Context().SetConnectionClose()
		return errBodyTooLarge()
	}
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(stream, limit+1))
	if n > limit {
		discard(stream, lingerBytes)
		c.Context().SetConnectionClose()
		return errBodyTooLarge()
	}
	if err != nil {
		c.Context().SetConnectionClose()
		return errBadRequest("could not read the request body: " + err.Error())
	}
	// The body is handed to fasthttp as it was read, not copied again:
	// SetBodyRaw (fasthttp http.go:664-667) resets the body, which releases
	// the stream (ResetBody http.go:806-818, closeBodyStream
	// http.go:2001-2014), and keeps buf's bytes as bodyRaw, which Body
	// returns (http.go:760-762) until the request is reset. SetBody
	// (http.go:792-796) would copy them into a pooled buffer; nothing
	// writes to buf after this.
	c.Request().SetBodyRaw(buf.Bytes())
	return c.Next()
}

// errBodyTooLarge is the 413 of a body over LONGHAUL_MAX_BODY_BYTES, as
// handleError words fasthttp's own.
func errBodyTooLarge() error {
	return errPayloadTooLarge("request body is larger than the limit (LONGHAUL_MAX_BODY_BYTES)")
}

// lingerBytes is how much of a refused body is read and dropped before
// the connection closes (net/http's server reads up to 256 KiB too).
const lingerBytes = 256 << 10

// discard reads and drops up to n bytes of r, reporting whether r ended.
var discard = web.Discard
