// One MCP server's connection: dialled, watched and redialled, its tools
// registered and its tool list followed.

package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
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
