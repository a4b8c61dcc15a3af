package api

import (
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul/api/sse"
	"github.com/longhaul-dev/longhaul/internal/tracing"
	"github.com/longhaul-dev/longhaul/internal/usercreds"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// observe is the outermost middleware: a span per request (continuing a
// caller's traceparent), carried in the request's context into the
// workflow the request starts, and the request's metrics. It answers a
// handler's error itself (through the error handler), so the status it
// records is the one sent. A stream's span ends with the stream.
func (s *Server) observe(c *fiber.Ctx) error {
	start := time.Now()
	// Copies: fiber's strings point into buffers the next request reuses.
	method := strings.Clone(c.Method())
	ctx := tracing.Propagator.Extract(c.UserContext(), headerCarrier{c})
	ctx, span := tracing.Tracer().Start(ctx, method, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(semconv.HTTPRequestMethodKey.String(method), semconv.URLPath(tracedPath(c.Path()))))
	c.SetUserContext(ctx)
	err := c.Next()
	if err != nil {
		if herr := c.App().ErrorHandler(c, err); herr != nil {
			_ = c.SendStatus(fiber.StatusInternalServerError)
		}
	}
	route, code := routeOf(c), c.Response().StatusCode()
	span.SetName(method + " " + route)
	span.SetAttributes(semconv.HTTPRoute(route), semconv.HTTPResponseStatusCode(code))
	if run := c.GetRespHeader(HeaderRunID); run != "" {
		span.SetAttributes(attribute.String("longhaul.run_id", run))
	}
	if code >= 500 {
		span.SetStatus(codes.Error, "")
	}
	stream := sse.Streaming(c) // its span and duration end with it (sse.Streams.Send)
	s.metrics.request(route, method, code, time.Since(start), stream)
	if !stream {
		span.End()
	}
	return nil
}

// tracedPath is the path a span records: a connect link's id, which
// starts a user's OAuth flow, is left out.
func tracedPath(path string) string {
	if strings.HasPrefix(path, usercreds.ConnectPath) {
		return usercreds.ConnectPath + ":id"
	}
	return strings.Clone(path)
}

// routeOf is the request's route pattern, or "unmatched" for the catch-all
// 404: no path of the client's becomes a label.
func routeOf(c *fiber.Ctx) string {
	if c.Locals(unmatchedKey{}) != nil {
		return "unmatched"
	}
	return c.Route().Path
}

// unmatchedKey marks a request no route took.
type unmatchedKey struct{}

// headerCarrier reads and writes a request's headers for a propagator.
type headerCarrier struct{ c *fiber.Ctx }

func (h headerCarrier) Get(key string) string { return h.c.Get(key) }
func (h headerCarrier) Set(key, value string) { h.c.Request().Header.Set(key, value) }
func (h headerCarrier) Keys() []string {
	var keys []string
	h.c.Request().Header.VisitAll(func(k, _ []byte) { keys = append(keys, string(k)) })
	return keys
}
