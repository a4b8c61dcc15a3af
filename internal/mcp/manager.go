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

	"github.com/cenkalti/backoff/v5"
	"github.com/longhaul-dev/longhaul/internal/access"
	"github.com/longhaul-dev/longhaul/internal/tools"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/singleflight"
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

// server is one configured MCP server and its current session.
type server struct {
	m      *Manager
	name   string
	cfg    ServerConfig
	cfgErr error // set when cfg is invalid: the server is never connected
	log    *slog.Logger
	client *mcpsdk.Client
	relist chan struct{} // a tools/list_changed notification arrived

	// listMu serialises listing the tools and registering them, so that the
	// last list taken is the one registered.
	listMu sync.Mutex
	// userTools is what the users' listings of an "auth": "oauth" server
	// added up to (see Manager.Named), by the server's own tool names;
	// listMu guards it.
	userTools map[string]*mcpsdk.Tool

	// connecting shares one connection attempt among the callers that
	// need a session at the same time.
	connecting singleflight.Group

	mu      sync.Mutex
	sess    *session // the current session; nil when there is none
	lastErr error
	nTools  int
	closed  bool

	progressMu sync.Mutex
	progress   map[string]func(string, float64) // by progress token
}

// session is one MCP session with a server.
type session struct {
	cs   *mcpsdk.ClientSession
	conn *conn

	ended     chan struct{} // closed when the session has ended
	closing   atomic.Bool   // the Manager is closing it on purpose
	closeOnce sync.Once
}

func (ss *session) alive() bool {
	select {
	case <-ss.ended:
		return false
	default:
		return true
	}
}

// close ends the session and releases what it holds: the server process
// (stdio) or the HTTP connections. It waits for the process to exit.
func (ss *session) close() {
	ss.closeOnce.Do(func() {
		ss.closing.Store(true)
		_ = ss.cs.Close()
		ss.conn.release()
	})
}

// pid returns the server process's id, or 0 for a remote server.
func (ss *session) pid() int {
	if ss.conn.cmd == nil || ss.conn.cmd.Process == nil {
		return 0
	}
	return ss.conn.cmd.Process.Pid
}

// run makes the server's first connection attempt, closes first, and then
// retries with backoff until the server is connected or the Manager closes.
func (s *server) run(first chan struct{}) {
	defer s.m.wg.Done()
	_, err := s.connect(s.m.ctx)
	close(first)
	if err == nil || s.m.ctx.Err() != nil {
		return
	}
	retry := &backoff.ExponentialBackOff{
		InitialInterval: orDefault(s.m.RetryMin, DefaultRetryMin),
		MaxInterval:     orDefault(s.m.RetryMax, DefaultRetryMax),
		Multiplier:      2,
		// Servers that failed together do not retry in lockstep.
		RandomizationFactor: 0.2,
	}
	for {
		delay := retry.NextBackOff()
		s.log.Warn("mcp server unavailable; retrying in the background", "error", err, "retry_in", delay)
		t := time.NewTimer(delay)
		select {
		case <-s.m.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if _, err = s.connect(s.m.ctx); err == nil || s.m.ctx.Err() != nil {
			return
		}
	}
}

// connect returns the server's live session, connecting first when there
// is none. Concurrent callers share one attempt; ctx bounds only the wait.
func (s *server) connect(ctx context.Context) (*session, error) {
	s.mu.Lock()
	switch sess := s.sess; {
	case sess != nil && sess.alive():
		s.mu.Unlock()
		return sess, nil
	case s.closed:
		s.mu.Unlock()
		return nil, ErrClosed
	case s.cfgErr != nil:
		s.mu.Unlock()
		return nil, s.cfgErr
	}
	// The Manager is not closed (s.closed is set first), so Close has not
	// started waiting for the group yet.
	s.m.wg.Add(1)
	s.mu.Unlock()
	done := make(chan singleflight.Result, 1)
	go func() {
		defer s.m.wg.Done()
		v, err, _ := s.connecting.Do("", func() (any, error) { return s.attempt() })
		done <- singleflight.Result{Val: v, Err: err}
	}()
	select {
	case r := <-done:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*session), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// attempt connects, lists and registers the tools, and installs the new
// session. A session installed by an attempt that ended just before this
// one started is returned as it is.
func (s *server) attempt() (*session, error) {
	s.mu.Lock()
	if sess := s.sess; sess != nil && sess.alive() {
		s.mu.Unlock()
		return sess, nil
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(s.m.ctx, s.m.connectTimeout())
	defer cancel()
	sess, err := s.dial(ctx)
	if err != nil {
		s.mu.Lock()
		s.lastErr = err
		s.mu.Unlock()
		return nil, err
	}
	// Hold listMu from listing to installing, so that a tools/list_changed
	// arriving meanwhile is handled after, on the installed session.
	s.listMu.Lock()
	n, err := s.registerTools(ctx, sess)
	s.mu.Lock()
	switch {
	case err != nil:
		s.lastErr = err
	case s.closed:
		err = ErrClosed
	default:
		s.sess = sess
		s.lastErr = nil
		s.nTools = n
	}
	s.mu.Unlock()
	s.listMu.Unlock()
	if err != nil {
		sess.close()
		return nil, err
	}
	s.log.Info("mcp server connected", "transport", s.cfg.transport(), "tools", n)
	if s.m.listed != nil {
		s.m.listed(s.name, "connect")
	}
	return sess, nil
}

// dial opens a session and starts watching for its end.
func (s *server) dial(ctx context.Context) (*session, error) {
	c, err := newConn(s.cfg, s.m.LookupEnv, s.log, orDefault(s.m.TerminateWait, DefaultTerminateWait))
	if err != nil {
		return nil, err
	}
	cs, err := s.client.Connect(ctx, c.transport, nil)
	if err != nil {
		c.release()
		if ctx.Err() != nil && s.m.ctx.Err() == nil {
			err = fmt.Errorf("no answer within %v: %w", s.m.connectTimeout(), err)
		}
		return nil, redactErr(c.redact, fmt.Errorf("connect: %w", err))
	}
	sess := &session{cs: cs, conn: c, ended: make(chan struct{})}
	s.m.wg.Add(1) // inside an attempt, which the group already counts
	go s.watch(sess)
	return sess, nil
}

// watch waits for the session to end, by either side, and marks it ended.
func (s *server) watch(sess *session) {
	defer s.m.wg.Done()
	err := sess.cs.Wait()
	// The reason is recorded before the session is marked ended, so that
	// whoever sees it ended also sees why.
	defer close(sess.ended)
	if sess.closing.Load() {
		return
	}
	reason := errors.New("the session ended")
	if err != nil {
		reason = redactErr(sess.conn.redact, fmt.Errorf("the session ended: %w", err))
	}
	s.drop(sess, reason)
}

// drop forgets sess, which failed with err, so that the next call
// reconnects, and closes it in the background.
func (s *server) drop(sess *session, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sess == sess {
		s.sess = nil
		s.lastErr = err
		s.log.Warn("mcp server connection lost; the next call reconnects", "error", err)
	}
	if s.closed {
		return // Close closes it
	}
	s.m.wg.Add(1)
	go func() {
		defer s.m.wg.Done()
		sess.close()
	}()
}

// registerTools lists the session's tools, all pages, and registers them.
// It returns how many were registered. listMu is held.
func (s *server) registerTools(ctx context.Context, sess *session) (int, error) {
	var list []*mcpsdk.Tool
	for t, err := range sess.cs.Tools(ctx, nil) {
		if err != nil {
			return 0, redactErr(sess.conn.redact, fmt.Errorf("list tools: %w", err))
		}
		list = append(list, t)
	}
	ts := s.convert(list)
	if err := s.m.reg.SetGroup(GroupPrefix+s.name, ts); err != nil {
		return 0, fmt.Errorf("register tools: %w", err)
	}
	return len(ts), nil
}

// convert converts a server's tool list, skipping with a warning the tools
// the engine cannot offer.
func (s *server) convert(list []*mcpsdk.Tool) []tools.Tool {
	out := make([]tools.Tool, 0, len(list))
	byName := map[string]string{}
	for _, mt := range list {
		name, ok := toolName(s.name, mt.Name)
		if !ok {
			s.log.Warn("mcp tool skipped: its name is empty or longer than 64 characters with the server prefix", "tool", mt.Name, "name", name)
			continue
		}
		if other, dup := byName[name]; dup {
			s.log.Warn("mcp tool skipped: its name collides with another tool's", "tool", mt.Name, "other", other, "name", name)
			continue
		}
		if other, ok := s.m.reg.Get(name); ok {
			if ot, mine := other.(*tool); !mine || ot.srv != s {
				s.log.Warn("mcp tool skipped: another tool has its name", "tool", mt.Name, "name", name)
				continue
			}
		}
		params, err := parameters(mt.InputSchema)
		if err != nil {
			s.log.Warn("mcp tool skipped", "tool", mt.Name, "error", err)
			continue
		}
		t := &tool{srv: s, name: name, remote: mt.Name, description: description(mt), params: params,
			approval: s.cfg.RequiresApproval(mt.Name), allow: []*access.Rule{s.cfg.Allow, s.cfg.ToolAllow[mt.Name]}}
		// The registry compiles the schema; check it here, so that one bad
		// tool does not keep the others out.
		if _, err := tools.NewRegistry(t); err != nil {
			s.log.Warn("mcp tool skipped", "tool", mt.Name, "error", err)
			continue
		}
		byName[name] = mt.Name
		out = append(out, t)
	}
	for _, want := range s.cfg.Approve {
		if !slices.ContainsFunc(list, func(mt *mcpsdk.Tool) bool { return mt.Name == want }) {
			s.log.Warn("mcp approval names a tool the server does not offer", "tool", want)
		}
	}
	return out
}

// watchToolList lists the tools again whenever the server says they
// changed.
func (s *server) watchToolList() {
	defer s.m.wg.Done()
	for {
		select {
		case <-s.m.ctx.Done():
			return
		case <-s.relist:
		}
		s.listMu.Lock()
		s.mu.Lock()
		sess := s.sess
		s.mu.Unlock()
		if sess != nil && sess.alive() {
			ctx, cancel := context.WithTimeout(s.m.ctx, s.m.connectTimeout())
			n, err := s.registerTools(ctx, sess)
			cancel()
			switch {
			case s.m.ctx.Err() != nil:
				// Closing.
			case err != nil:
				s.log.Warn("mcp tools not relisted after a change; keeping the old list", "error", err)
			default:
				s.mu.Lock()
				s.nTools = n
				s.mu.Unlock()
				s.log.Info("mcp tools relisted after a change", "tools", n)
				if s.m.listed != nil {
					s.m.listed(s.name, "list_changed")
				}
			}
		}
		s.listMu.Unlock()
	}
}

func (s *server) addProgress(token string, f func(string, float64)) {
	s.progressMu.Lock()
	s.progress[token] = f
	s.progressMu.Unlock()
}

func (s *server) removeProgress(token string) {
	s.progressMu.Lock()
	delete(s.progress, token)
	s.progressMu.Unlock()
}

// onProgress routes a progress notification to the call that asked for it.
func (s *server) onProgress(p *mcpsdk.ProgressNotificationParams) {
	if p == nil {
		return
	}
	token, ok := p.ProgressToken.(string)
	if !ok {
		return // not one of ours
	}
	s.progressMu.Lock()
	f := s.progress[token]
	s.progressMu.Unlock()
	if f == nil {
		return
	}
	var fraction float64
	if p.Total > 0 {
		fraction = min(max(p.Progress/p.Total, 0), 1)
	}
	msg := p.Message
	if msg == "" {
		if p.Total > 0 {
			msg = fmt.Sprintf("%g of %g", p.Progress, p.Total)
		} else {
			msg = fmt.Sprintf("%g", p.Progress)
		}
	}
	f(msg, fraction)
}

// rejected is the code of the SDK's error for a request its transport
// could not deliver (for example a failed HTTP request).
const rejected = -32005

// broken reports whether err from a request means the session can carry no
// more requests: anything but an error answered by the server.
func broken(err error) bool {
	if errors.Is(err, mcpsdk.ErrConnectionClosed) || errors.Is(err, &jsonrpc.Error{Code: rejected}) {
		return true
	}
	var we *jsonrpc.Error
	return !errors.As(err, &we)
}
