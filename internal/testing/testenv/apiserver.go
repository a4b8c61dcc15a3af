package testenv

import (
	"context"
	"net"
	"sync"
	"time"

	"github.com/longhaul-dev/longhaul/api"
)

// APIServer is one more API on the env's Temporal, as another `longhaul
// api` process would be.
type APIServer struct {
	*api.Server
	URL string // its base URL, e.g. http://127.0.0.1:1234
	ln  *connListener
}

// StartAPI starts another API server against the env's runs service,
// with the env's catalog, store and API configuration, which edit (if
// any) adjusts. Stop stops it; t.Cleanup does too.
func (e *Env) StartAPI(edit ...func(*api.Config)) *APIServer {
	e.T.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		e.T.Fatal(err)
	}
	cfg := e.apiConfig
	for _, f := range edit {
		f(&cfg)
	}
	a := &APIServer{Server: api.New(cfg, e.apiRuns(), e.Catalog, e.log), URL: "http://" + ln.Addr().String(),
		ln: &connListener{Listener: ln, conns: map[net.Conn]struct{}{}}}
	go func() { _ = a.App().Listener(a.ln) }()
	e.T.Cleanup(a.Stop)
	return a
}

// Stop stops the server as SIGTERM stops `longhaul api`: it refuses new
// connections, gives open requests a short grace, then ends as the process
// does, cutting the connections still open (event streams).
func (a *APIServer) Stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_ = a.Shutdown(ctx)
	a.ln.closeAll()
}

// connListener remembers the connections it accepted, so they can be cut.
type connListener struct {
	net.Listener
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

func (l *connListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.mu.Lock()
		l.conns[c] = struct{}{}
		l.mu.Unlock()
	}
	return c, err
}

func (l *connListener) closeAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.conns {
		_ = c.Close()
	}
	clear(l.conns)
}
