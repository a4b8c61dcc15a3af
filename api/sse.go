package api

import (
	"bufio"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/gofiber/fiber/v2"
	"go.opentelemetry.io/otel/trace"
)

// sendSSE answers c with a Server-Sent Events stream that write produces.
// write runs after the handler has returned, on a goroutine of its own, so
// fiber's recover middleware no longer covers it: a panic there is logged
// with its stack and ends this stream only, not the process. done, if not
// nil, runs when the stream ends, however it ends. kind names the stream
// in the metrics (chat, runs).
func (s *Server) sendSSE(c *fiber.Ctx, kind string, write func(w *bufio.Writer), done func()) {
	c.Set(fiber.HeaderContentType, "text/event-stream")
	c.Set(fiber.HeaderCacheControl, "no-cache")
	c.Set(fiber.HeaderConnection, "keep-alive")
	c.Set("X-Accel-Buffering", "no")
	// Copies: fiber's strings point into buffers the next request reuses.
	method, path := strings.Clone(c.Method()), strings.Clone(c.Path())
	c.Locals(sseKey{}, true)
	ended := s.metrics.streamOpened(c, kind)
	// The request's span (see observe) lasts as long as the stream.
	span := trace.SpanFromContext(c.UserContext())
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		defer func() {
			if v := recover(); v != nil {
				s.log.Error("stream panicked", "method", method, "path", path, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			}
			ended()
			span.End()
			if done != nil {
				done()
			}
		}()
		write(w)
	})
}
