package mcpapi

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"sync"

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
// connection (as api/sse does). A write the client does not take ends the
// request's context, which ends the SDK's stream.

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

// serve answers c with h's response to r, streamed from h's first Flush
// on. cancel ends r's context; serve calls it once the response is sent
// or the client is gone.
func serve(c *fiber.Ctx, h http.Handler, r *http.Request, cancel context.CancelFunc) {
	w := newStreamWriter()
	go func() {
		defer close(w.done)
		h.ServeHTTP(w, r)
	}()
	streaming := false
	select {
	case <-w.committed:
		streaming = true
	case <-w.done:
	}
	w.mu.Lock()
	status := w.status
	w.mu.Unlock()
	if status == 0 {
		status = http.StatusOK
	}
	c.Status(status)
	for k, vs := range w.header {
		for _, v := range vs {
			c.Response().Header.Add(k, v)
		}
	}
	if !streaming {
		c.Response().SetBodyRaw(w.take())
		cancel()
		return
	}
	c.Response().ImmediateHeaderFlush = true
	c.Context().SetBodyStreamWriter(func(bw *bufio.Writer) {
		defer cancel()
		for {
			finished := false
			select {
			case <-w.ready:
			case <-w.done:
				finished = true
			}
			if _, err := bw.Write(w.take()); err != nil || bw.Flush() != nil {
				return
			}
			if finished {
				return
			}
		}
	})
}
