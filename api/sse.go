package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"go.opentelemetry.io/otel/trace"
)

// Both event streams — the chat stream (OpenAI chunks as data-only frames)
// and the runs API stream (typed frames with resumable ids) — go through
// the one writer here: the same headers, frames, keep-alives and the same
// notion of a client that left.

// keepAlive is how often an idle stream gets an SSE comment, so that
// proxies and clients do not take a quiet run for a dead connection.
const keepAlive = 15 * time.Second

// errClientGone is what a write or flush to a stream returns once it
// failed: the client has left, and the stream ends (the run goes on).
var errClientGone = errors.New("the client left the stream")

// sendSSE answers c with a Server-Sent Events stream that write produces.
// write runs after the handler has returned, on a goroutine of its own, so
// fiber's recover middleware no longer covers it: a panic there is logged
// with its stack and ends this stream only, not the process. done, if not
// nil, runs when the stream ends, however it ends. kind names the stream
// in the metrics (chat, runs, responses).
//
// The response headers and a first frame leave at once, whatever the
// model's latency. fiber's Ctx.Context() is fasthttp's RequestCtx, whose
// SetBodyStreamWriter (fasthttp v1.51.0 server.go:1489) pipes the writer's
// flushes to the connection (stream.go:29-51, NewStreamReader). Its
// writeBodyStream writes the headers into the connection's buffer and,
// unless ImmediateHeaderFlush, sends them only with the first chunk
// (http.go:1980-1987; writeBodyChunked blocks reading the pipe,
// http.go:2075, and writeChunk flushes, http.go:2153): whatever the writer
// first flushes. A chat stream flushed only once the run had something to
// show, or at the first keep-alive 15 s on, so a client of a slow model
// waited that long for its headers. Now the headers are flushed on their
// own, and the stream opens with a comment naming the run, which every SSE
// parser skips: openai-node's SSEDecoder.decode
// returns null for a line that starts with ':' (src/core/streaming.ts),
// and Open WebUI's stream_body_handler skips every line that does not
// start with "data:" (backend/open_webui/utils/middleware.py).
func (s *Server) sendSSE(c *fiber.Ctx, kind string, write func(sw *sseWriter), done func()) {
	c.Set(fiber.HeaderContentType, "text/event-stream")
	c.Set(fiber.HeaderCacheControl, "no-cache")
	c.Set(fiber.HeaderConnection, "keep-alive")
	// nginx would otherwise hold the frames back in its buffer.
	c.Set("X-Accel-Buffering", "no")
	c.Response().ImmediateHeaderFlush = true
	// Copies: fiber's strings point into buffers the next request reuses.
	method, path := strings.Clone(c.Method()), strings.Clone(c.Path())
	opening := "ok"
	if run := c.GetRespHeader(HeaderRunID); run != "" {
		opening = "run " + run
	}
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
		sw := &sseWriter{w: w, keepAlive: keepAlive}
		if sw.comment(opening) != nil {
			return
		}
		write(sw)
	})
}

// sseWriter writes the frames of one event stream. Frames are buffered
// until flush; any failed write or flush is errClientGone.
type sseWriter struct {
	w         *bufio.Writer
	keepAlive time.Duration
}

// frame writes one event: its id and type when set, and its data, a data
// line for each of its lines.
func (sw *sseWriter) frame(id, event string, data []byte) error {
	return sw.write(appendFrame(nil, id, event, data))
}

// frameJSON writes one event whose data is v as JSON.
func (sw *sseWriter) frameJSON(id, event string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s frame: %w", event, err)
	}
	return sw.frame(id, event, b)
}

// comment writes a comment line, which clients ignore, and flushes it:
// it proves the connection alive.
func (sw *sseWriter) comment(text string) error {
	if err := sw.write([]byte(": " + text + "\n\n")); err != nil {
		return err
	}
	return sw.flush()
}

// flush sends the frames written so far.
func (sw *sseWriter) flush() error {
	if err := sw.w.Flush(); err != nil {
		return fmt.Errorf("%w: %w", errClientGone, err)
	}
	return nil
}

func (sw *sseWriter) write(b []byte) error {
	if _, err := sw.w.Write(b); err != nil {
		return fmt.Errorf("%w: %w", errClientGone, err)
	}
	return nil
}

// feedReader reads a run's feed from a cursor on; runs.Follower is one.
type feedReader interface {
	Read(ctx context.Context, pos runs.Cursor) ([]runs.Item, bool, error)
}

var _ feedReader = runs.Follower(nil)

// wait reads what f has after pos (see runs.Feed.Read), writing a
// keep-alive comment each keepAlive the run stays quiet. It returns
// errClientGone when a keep-alive cannot reach the client.
func (sw *sseWriter) wait(ctx context.Context, f feedReader, pos runs.Cursor) ([]runs.Item, bool, error) {
	for {
		wctx, cancel := context.WithTimeout(ctx, sw.keepAlive)
		items, done, err := f.Read(wctx, pos)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			return items, done, err
		}
		if err := sw.comment("keep-alive"); err != nil {
			return nil, false, err
		}
	}
}

// appendFrame appends the bytes of one event to dst. Data is split at
// every line end an SSE client knows (\n, \r and \r\n), so a payload can
// neither end the frame nor start another; id and event are single lines
// (the stream's own names).
func appendFrame(dst []byte, id, event string, data []byte) []byte {
	if id != "" {
		dst = appendField(dst, "id", []byte(id))
	}
	if event != "" {
		dst = appendField(dst, "event", []byte(event))
	}
	for {
		i := bytes.IndexAny(data, "\r\n")
		if i < 0 {
			break
		}
		dst = appendField(dst, "data", data[:i])
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
	}
	return append(appendField(dst, "data", data), '\n')
}

func appendField(dst []byte, name string, value []byte) []byte {
	dst = append(append(dst, name...), ": "...)
	return append(append(dst, value...), '\n')
}
