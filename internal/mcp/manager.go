// Package mcp connects the engine to the MCP (Model Context Protocol)
// servers an operator configures, so that their tools can be given to the
// model like the built-in ones. Each server's tools become tools.Tools named
// "<server>__<tool>" in one group of a tools.Registry, kept up to date when
// the server says its tool list changed; a call runs on the server's current
// session and reconnects first when that session has ended.
package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/longhaul-dev/longhaul/internal/tools"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ErrClosed is returned when the Manager has been closed.
var ErrClosed = errors.New("mcp manager is closed")

// Defaults of the Manager's tunables.
const (
	DefaultConnectTimeout = 30 * time.Second
	DefaultRetryMin       = time.Second
	DefaultRetryMax       = 2 * time.Minute
	DefaultTerminateWait  = 5 * time.Second
)

// GroupPrefix prefixes a server's name to make its tool group's name.
const GroupPrefix = "mcp:"

// Manager connects to the configured MCP servers and keeps their tools in a
// tools.Registry, one group per server named GroupPrefix+name. Set its
// exported fields before Start. It is safe for concurrent use.
type Manager struct {
	// ConnectTimeout bounds one connection attempt: starting the server or
	// reaching its URL, the MCP handshake and listing the tools. Zero means
	// DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// RetryMin and RetryMax bound the delay between background attempts to
	// connect a server that could not be reached: it starts at RetryMin and
	// doubles up to RetryMax. Zero means DefaultRetryMin and DefaultRetryMax.
	RetryMin, RetryMax time.Duration
	// TerminateWait is how long closing a stdio server waits for it to exit
	// after its input is closed, and again after SIGTERM, before killing it.
	// Zero means DefaultTerminateWait.
	TerminateWait time.Duration
	// LookupEnv resolves the ${VAR} references of the configuration. Nil
	// means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// UserTokens gives the calls of "auth": "oauth" servers their user's
	// tokens; without it such servers are not started.
	UserTokens UserTokens
	// Named, when set, reports whether an agent names a tool by its full
	// name ("<server>__<tool>"). An "auth": "oauth" server's tools come
	// from each user's own listing, and one user's listing must not decide
	// what everyone is offered: of such a listing only the named tools are
	// kept, added to (or updating) what earlier listings kept, never
	// removing one. Nil keeps every tool, still never removing one.
	Named func(name string) bool

	reg     *tools.Registry
	log     *slog.Logger
	servers []*server // by name

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine the Manager started

	mu      sync.Mutex
	started bool
	closed  bool

	tokens atomic.Uint64

	// listed, when set by a test, is called after a server's tools are
	// listed and registered, with why they were listed.
	listed func(server, reason string)
}

// New returns a Manager for the servers of cfg that registers their tools
// in reg. A server whose configuration is invalid is reported by Servers
// and never connected. A nil log discards the Manager's logs.
func New(cfg Config, reg *tools.Registry, log *slog.Logger) *Manager {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Manager{reg: reg, log: log, ctx: ctx, cancel: cancel}
	for _, name := range slices.Sorted(maps.Keys(cfg.Servers)) {
		sc := cfg.Servers[name]
		s := &server{
			m:        m,
			name:     name,
			cfg:      sc,
			log:      log.With("mcp_server", name),
			relist:   make(chan struct{}, 1),
			progress: map[string]func(string, float64){},
		}
		if errs := validateServer(name, sc); len(errs) > 0 {
			s.cfgErr = fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
			s.lastErr = s.cfgErr
		}
		s.client = mcpsdk.NewClient(&mcpsdk.Implementation{Name: "longhaul", Version: version()}, &mcpsdk.ClientOptions{
			// No roots, sampling or elicitation: the engine offers none.
			Capabilities: &mcpsdk.ClientCapabilities{},
			ToolListChangedHandler: func(context.Context, *mcpsdk.ToolListChangedRequest) {
				// Called on the goroutine that handles the session's
				// incoming messages one at a time: list elsewhere, not to
				// hold up the others (progress among them).
				select {
				case s.relist <- struct{}{}:
				default:
				}
			},
			ProgressNotificationHandler: func(_ context.Context, req *mcpsdk.ProgressNotificationClientRequest) {
				s.onProgress(req.Params)
			},
		})
		m.servers = append(m.servers, s)
	}
	return m
}

// version is the engine's version as the servers see it.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

func (m *Manager) connectTimeout() time.Duration {
	return orDefault(m.ConnectTimeout, DefaultConnectTimeout)
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Start connects to every server concurrently and registers their tools.
// It returns once every server has had its first attempt (or when ctx
// ends; the attempts go on). A server that could not be reached is logged
// with the reason and retried in the background, with exponential backoff,
// until it connects or the Manager is closed; calling one of its tools also
// tries to connect it. Start can be called once.
func (m *Manager) Start(ctx context.Context) error {
	m.mu.Lock()
	switch {
	case m.closed:
		m.mu.Unlock()
		return ErrClosed
	case m.started:
		m.mu.Unlock()
		return errors.New("mcp manager already started")
	}
	m.started = true
	firsts := make([]chan struct{}, 0, len(m.servers))
	for _, s := range m.servers {
		if s.cfgErr != nil {
			s.log.Error("mcp server not started: invalid configuration", "error", s.cfgErr)
			continue
		}
		if s.cfg.OAuth() {
			// No shared session: each call opens one with its user's token.
			if err := s.startOAuth(); err != nil {
				s.log.Error("mcp server not started", "error", err)
			}
			continue
		}
		first := make(chan struct{})
		firsts = append(firsts, first)
		m.wg.Add(2)
		go s.run(first)
		go s.watchToolList()
	}
	m.mu.Unlock()
	for _, first := range firsts {
		select {
		case <-first:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Close ends every session, stopping the server processes, stops the
// Manager's goroutines and removes the servers' tools from the registry.
// Calls in flight fail. It waits for all of this and is idempotent.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.mu.Unlock()
	m.cancel()
	var wg sync.WaitGroup
	for _, s := range m.servers {
		s.mu.Lock()
		s.closed = true
		sess := s.sess
		s.sess = nil
		s.mu.Unlock()
		if sess != nil {
			wg.Go(sess.close)
		}
	}
	wg.Wait()
	m.wg.Wait()
	var errs []error
	for _, s := range m.servers {
		if err := m.reg.SetGroup(GroupPrefix+s.name, nil); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ServerStatus is the state of one server.
type ServerStatus struct {
	Name string
	// Transport is TransportStdio, TransportHTTP or TransportSSE.
	Transport string
	// Connected reports whether the server has a live session.
	Connected bool
	// Tools is the number of the server's tools in the registry.
	Tools int
	// Err says why the server is not connected: its invalid configuration,
	// the last failed attempt or what ended its session. It is nil while
	// connected and before the first attempt.
	Err error
}

// Servers returns the state of every configured server, sorted by name.
func (m *Manager) Servers() []ServerStatus {
	out := make([]ServerStatus, 0, len(m.servers))
	for _, s := range m.servers {
		s.mu.Lock()
		st := ServerStatus{
			Name:      s.name,
			Transport: s.cfg.transport(),
			Connected: s.sess != nil && s.sess.alive(),
			Tools:     s.nTools,
			Err:       s.lastErr,
		}
		s.mu.Unlock()
		if st.Connected {
			st.Err = nil
		}
		out = append(out, st)
	}
	return out
}

// progressToken returns a progress token no other call has.
func (m *Manager) progressToken() string {
	return "longhaul-" + strconv.FormatUint(m.tokens.Add(1), 10)
}
