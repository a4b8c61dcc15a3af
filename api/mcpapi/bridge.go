package mcpapi

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
)

// The bridge from fiber to the SDK's http.Handler. fiber's own adaptor
// (middleware/adaptor, over fasthttp v1.51.0's fasthttpadaptor) buffers
// the whole response: its ResponseWriter's Flush does nothing
// (fasthttpadaptor/adaptor.go:113) and the body leaves once the handler
// has returned, so an event stream (progress, an elicitation) would reach
// the client only with the tool's answer, and an elicitation, which waits
// for the client's reply, never. serve runs the handler on a goroutine of
// its own instead: what it writes before its first Flush (or all of it,
// when it returns without one) is the response; after a Flush, the rest
// goes through fasthttp's SetBodyStreamWriter, each Flush a flush to the
// connection (as api/sse does).
//
// A call that answers when its run ends (a plain tools/call, tasks/result)
// may say nothing for minutes: the SDK sets its event stream's headers
// and writes nothing until the first message (streamable.go:1686-1690,
// hangResponse). So after a keep-alive of silence the bridge sends the
// headers of that stream itself, and then a comment line every keep-alive
// the stream stays quiet, which SSE clients skip: a proxy does not cut the
// call for idleness, and a client that left is noticed, its request's
// context ended, and with it the call (see Handler.bind).

// streamWriter is the http.ResponseWriter the SDK writes to.
type streamWriter struct {
	header http.Header
	mu     sync.Mutex
	status int
	buf    bytes.Buffer
	// committed closes at the first Flush; ready signals data to send.
	committed chan struct{}
	commit    sync.Once
	ready     chan struct{}
	// done closes when the handler has returned.
	done chan struct{}
}

func newStreamWriter() *streamWriter {
	return &streamWriter{header: http.Header{}, committed: make(chan struct{}), ready: make(chan struct{}, 1), done: make(chan struct{})}
}

func (w *streamWriter) Header() http.Header { return w.header }

func (w *streamWriter) WriteHeader(status int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.status == 0 {
		w.status = status
	}
}

func (w *streamWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

// Flush commits the headers and hands what was written to the connection.
func (w *streamWriter) Flush() {
	w.WriteHeader(http.StatusOK)
	w.commit.Do(func() { close(w.committed) })
	select {
	case w.ready <- struct{}{}:
	default:
	}
}

// take empties the buffer.
func (w *streamWriter) take() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := bytes.Clone(w.buf.Bytes())
	w.buf.Reset()
	return b
}

// idle reports whether nothing waits to be sent: no event half written.
func (w *streamWriter) idle() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Len() == 0
}

// keepAliveLine is the comment a quiet stream sends.
var keepAliveLine = []byte(": keep-alive\n\n")

// serve answers c with h's response to r, streamed from h's first Flush
// on; with keepAlive (a long call's), from keepAlive's silence on. cancel
// ends r's context; serve calls it once the response is sent or the
// client is gone.
func serve(c *fiber.Ctx, h http.Handler, r *http.Request, cancel context.CancelFunc, keepAlive time.Duration) {
	w := newStreamWriter()
	go func() {
		defer close(w.done)
		h.ServeHTTP(w, r)
	}()
	var quiet <-chan time.Time
	if keepAlive > 0 {
		t := time.NewTimer(keepAlive)
		defer t.Stop()
		quiet = t.C
	}
	streaming := true
	select {
	case <-w.committed:
		copyHeaders(c, w, w.header)
	case <-w.done:
		streaming = false
		copyHeaders(c, w, w.header)
	case <-quiet:
		// The SDK's headers of the stream, which it may still be writing
		// to its map: they are these.
		copyHeaders(c, w, http.Header{"Content-Type": {"text/event-stream"}, "Cache-Control": {"no-cache, no-transform"}})
	}
	if !streaming {
		c.Response().SetBodyRaw(w.take())
		cancel()
		return
	}
	// nginx would otherwise hold the events back in its buffer.
	c.Set("X-Accel-Buffering", "no")
	c.Response().ImmediateHeaderFlush = true
	c.Context().SetBodyStreamWriter(func(bw *bufio.Writer) {
		defer cancel()
		pump(bw, w, keepAlive)
	})
}

// copyHeaders sets c's status (w's) and header.
func copyHeaders(c *fiber.Ctx, w *streamWriter, header http.Header) {
	w.mu.Lock()
	status := w.status
	w.mu.Unlock()
	if status == 0 {
		status = http.StatusOK
	}
	c.Status(status)
	for k, vs := range header {
		for _, v := range vs {
			c.Response().Header.Add(k, v)
		}
	}
}

// pump sends what w is handed until the handler returns or the client is
// gone, with a keep-alive line each keepAlive (if set) of silence.
func pump(bw *bufio.Writer, w *streamWriter, keepAlive time.Duration) {
	var tick <-chan time.Time
	if keepAlive > 0 {
		t := time.NewTicker(keepAlive)
		defer t.Stop()
		tick = t.C
	}
	for {
		finished := false
		out := []byte(nil)
		select {
		case <-w.ready:
			out = w.take()
		case <-w.done:
			finished, out = true, w.take()
		case <-tick:
			if !w.idle() {
				continue
			}
			out = keepAliveLine
		}
		if _, err := bw.Write(out); err != nil || bw.Flush() != nil || finished {
			return
		}
	}
}
