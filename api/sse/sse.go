// Package sse writes the API's Server-Sent Events streams: the chat stream
// (OpenAI chunks as data-only frames), the Responses stream and the runs
// API stream (typed frames with resumable ids) all go through the one
// writer here, so they share the headers, the framing, the keep-alives and
// the notion of a client that left. It knows nothing of what a stream
// follows: Wait reads any Reader (a run's feed is one), so each API's
// handler package writes its stream with it and none imports another's.
package sse

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul/api/web"
	"go.opentelemetry.io/otel/trace"
)

// KeepAlive is how often an idle stream gets an SSE comment, so that
// proxies and clients do not take a quiet run for a dead connection.
const KeepAlive = 15 * time.Second

// ErrClientGone is what a write or flush to a stream returns once it
// failed: the client has left, and the stream ends (the run goes on).
var ErrClientGone = errors.New("the client left the stream")

// Streams opens the server's event streams.
type Streams struct {
	// Log takes a stream's panic; nil is slog's default.
	Log *slog.Logger
	// Opened, when set, is told of each stream as it opens, with its kind
	// (chat, runs, responses), and returns what to call when it ends (the
	// server's metrics of open streams and their durations).
	Opened func(c *fiber.Ctx, kind string) func()
	// Stopping ends when the server shuts down, and with it every stream
	// (see Context); nil never ends.
	Stopping context.Context
}

// Context is what a stream's writer follows its source under: the
// request's context is gone once the handler returned, so a stream lives
// until its source ends, a write fails or the server shuts down.
func (s *Streams) Context() context.Context {
	if s.Stopping == nil {
		return context.Background()
	}
	return s.Stopping
}

type streamingKey struct{}

// Streaming reports whether c is answered with an event stream (Send): its
// span and duration end with the stream, not with the handler.
func Streaming(c *fiber.Ctx) bool { return c.Locals(streamingKey{}) != nil }

// Send answers c with a Server-Sent Events stream that write produces.
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
// show would leave a client of a slow model waiting for its headers until
// the first keep-alive, 15 s on. So the headers are flushed on their own,
// and the stream opens with a comment naming the run (the handler's
// web.HeaderRunID), which every SSE parser skips: openai-node's
// SSEDecoder.decode returns null for a line that starts with ':'
// (src/core/streaming.ts), and Open WebUI's stream_body_handler skips
// every line that does not start with "data:"
// (backend/open_webui/utils/middleware.py).
func (s *Streams) Send(c *fiber.Ctx, kind string, write func(sw *Writer), done func()) {
	c.Set(fiber.HeaderContentType, "text/event-stream")
	c.Set(fiber.HeaderCacheControl, "no-cache")
	c.Set(fiber.HeaderConnection, "keep-alive")
	// nginx would otherwise hold the frames back in its buffer.
	c.Set("X-Accel-Buffering", "no")
	c.Response().ImmediateHeaderFlush = true
	// Copies: fiber's strings point into buffers the next request reuses.
	method, path := strings.Clone(c.Method()), strings.Clone(c.Path())
	opening := "ok"
	if run := c.GetRespHeader(web.HeaderRunID); run != "" {
		opening = "run " + run
	}
	c.Locals(streamingKey{}, true)
	ended := func() {}
	if s.Opened != nil {
		ended = s.Opened(c, kind)
	}
	// The request's span lasts as long as the stream.
	span := trace.SpanFromContext(c.UserContext())
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		defer func() {
			if v := recover(); v != nil {
				s.log().Error("stream panicked", "method", method, "path", path, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			}
			ended()
			span.End()
			if done != nil {
				done()
			}
		}()
		sw := &Writer{w: w, keepAlive: KeepAlive}
		if sw.Comment(opening) != nil {
			return
		}
		write(sw)
	})
}

func (s *Streams) log() *slog.Logger {
	if s.Log == nil {
		return slog.Default()
	}
	return s.Log
}

// Writer writes the frames of one event stream. Frames are buffered until
// Flush; any failed write or flush is ErrClientGone.
type Writer struct {
	w         *bufio.Writer
	keepAlive time.Duration
}

// Frame writes one event: its id and type when set, and its data, a data
// line for each of its lines.
func (sw *Writer) Frame(id, event string, data []byte) error {
	return sw.write(appendFrame(nil, id, event, data))
}

// FrameJSON writes one event whose data is v as JSON.
func (sw *Writer) FrameJSON(id, event string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s frame: %w", event, err)
	}
	return sw.Frame(id, event, b)
}

// Comment writes a comment line, which clients ignore, and flushes it:
// it proves the connection alive.
func (sw *Writer) Comment(text string) error {
	if err := sw.write([]byte(": " + text + "\n\n")); err != nil {
		return err
	}
	return sw.Flush()
}

// Flush sends the frames written so far.
func (sw *Writer) Flush() error {
	if err := sw.w.Flush(); err != nil {
		return fmt.Errorf("%w: %w", ErrClientGone, err)
	}
	return nil
}

func (sw *Writer) write(b []byte) error {
	if _, err := sw.w.Write(b); err != nil {
		return fmt.Errorf("%w: %w", ErrClientGone, err)
	}
	return nil
}

// Reader reads what a stream follows, items of type T, from a position of
// type P on; a run's follower (runs.Follower) is one.
type Reader[P, T any] interface {
	Read(ctx context.Context, pos P) ([]T, bool, error)
}

// Wait reads what f has after pos, writing a keep-alive comment to sw each
// keep-alive the source stays quiet. It returns ErrClientGone when a
// keep-alive cannot reach the client.
func Wait[P, T any](ctx context.Context, sw *Writer, f Reader[P, T], pos P) ([]T, bool, error) {
	for {
		wctx, cancel := context.WithTimeout(ctx, sw.keepAlive)
		items, done, err := f.Read(wctx, pos)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			return items, done, err
		}
		if err := sw.Comment("keep-alive"); err != nil {
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
