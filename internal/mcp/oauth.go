package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/longhaul-dev/longhaul/internal/tools"
	"github.com/longhaul-dev/longhaul/internal/usercreds"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"
)

// UserTokens gives the calls of an "auth": "oauth" server the tokens of
// the user each call is made for; *usercreds.Service is one. The tokens are
// read here, in the activity, from the store: they never pass through a
// workflow.
type UserTokens interface {
	// TokenSource returns the user's token source for the server, or an
	// error wrapping usercreds.ErrNotConnected.
	TokenSource(ctx context.Context, user, server string) (oauth2.TokenSource, error)
	// ConnectLink returns a link for the user to open in a browser to
	// connect the server: a Longhaul link that names the user and asks to
	// confirm, never the authorization server's URL with its state, since
	// the link goes into the tool result, and so into the workflow history
	// and the conversation. run is the run the call was made for, "" for
	// none: the callback tells it once the user connected.
	ConnectLink(ctx context.Context, user, server, run string) (string, error)
	// SaveTools keeps the server's tool list (JSON), and LoadTools returns
	// it (nil when none was kept), so that a worker that starts offers the
	// tools a connected user last listed.
	SaveTools(ctx context.Context, server string, list []byte) error
	LoadTools(ctx context.Context, server string) ([]byte, error)
}

// ConnectToolSuffix names the tool every OAuth server has before any user
// connected it, "<server>__connect_account": it answers with the user's
// authorize link, or, once connected, lists the server's tools with the
// user's token and makes them available.
const ConnectToolSuffix = "connect_account"

// errRefused is what a user's call ends with when the server refused their
// token (HTTP 401 or 403) or they have none.
var errRefused = errors.New("the server refused the user's token")

// userAuth is the go-sdk OAuthHandler (auth/client.go:24) of one user's
// session: the transport takes the bearer token from TokenSource on every
// request (mcp/streamable.go:2432) and calls Authorize on a 401 or 403
// (mcp/streamable.go:2324). Authorize does not run a flow here — a person
// must, in a browser — it only records that the user must connect again.
type userAuth struct {
	ts      oauth2.TokenSource
	refused atomic.Bool
}

func (u *userAuth) TokenSource(context.Context) (oauth2.TokenSource, error) {
	return tokenFunc(func() (*oauth2.Token, error) {
		tok, err := u.ts.Token()
		if errors.Is(err, usercreds.ErrNotConnected) {
			u.refused.Store(true)
		}
		return tok, err
	}), nil
}

func (u *userAuth) Authorize(_ context.Context, _ *http.Request, resp *http.Response) error {
	resp.Body.Close()
	u.refused.Store(true)
	return errRefused
}

type tokenFunc func() (*oauth2.Token, error)

func (f tokenFunc) Token() (*oauth2.Token, error) { return f() }

// startOAuth registers the connect tool of an OAuth server, which has no
// shared session to list its tools with.
func (s *server) startOAuth() error {
	if s.m.UserTokens == nil {
		s.cfgErr = fmt.Errorf(`%w: "auth": "oauth" needs LONGHAUL_TOKEN_KEY and LONGHAUL_PUBLIC_URL`, ErrInvalidConfig)
		s.lastErr = s.cfgErr
		return s.cfgErr
	}
	ctx, cancel := context.WithTimeout(s.m.ctx, s.m.connectTimeout())
	defer cancel()
	var list []*mcpsdk.Tool
	switch raw, err := s.m.UserTokens.LoadTools(ctx, s.name); {
	case err != nil:
		s.log.Warn("mcp tools kept from an earlier listing not read; offering the connect tool alone", "error", err)
	case raw != nil:
		if err := json.Unmarshal(raw, &list); err != nil {
			s.log.Warn("mcp tools kept from an earlier listing not read; offering the connect tool alone", "error", err)
			list = nil
		}
	}
	s.listMu.Lock()
	defer s.listMu.Unlock()
	s.userTools = map[string]*mcpsdk.Tool{}
	s.addUserTools(list)
	ts := append([]tools.Tool{s.connectTool()}, s.convert(s.userToolList())...)
	s.mu.Lock()
	s.nTools = len(ts)
	s.mu.Unlock()
	return s.m.reg.SetGroup(GroupPrefix+s.name, ts)
}

// addUserTools adds to userTools the tools of a user's listing that an
// agent names (Manager.Named), a newer definition replacing an older one;
// it never removes one, so that one user's listing cannot take a tool
// away from the others, nor add one nobody named. It returns the tools
// of list it kept. listMu is held.
func (s *server) addUserTools(list []*mcpsdk.Tool) []*mcpsdk.Tool {
	if s.userTools == nil {
		s.userTools = map[string]*mcpsdk.Tool{}
	}
	var kept []*mcpsdk.Tool
	for _, mt := range list {
		if mt == nil {
			continue
		}
		if name, ok := toolName(s.name, mt.Name); !ok || (s.m.Named != nil && !s.m.Named(name)) {
			continue
		}
		s.userTools[mt.Name] = mt
		kept = append(kept, mt)
	}
	return kept
}

// addListing adds what a user's listing may add (addUserTools) to the
// kept list, which it reads first (another worker may have added to it),
// registers the result and keeps it for the next start. It returns the
// tools of list it kept and the tools registered.
func (s *server) addListing(ctx context.Context, connect *connectTool, list []*mcpsdk.Tool) ([]*mcpsdk.Tool, []tools.Tool, error) {
	s.listMu.Lock()
	defer s.listMu.Unlock()
	old := maps.Clone(s.userTools)
	if raw, err := s.m.UserTokens.LoadTools(ctx, s.name); err == nil && raw != nil {
		var kept []*mcpsdk.Tool
		if json.Unmarshal(raw, &kept) == nil {
			s.addUserTools(kept)
		}
	}
	mine := s.addUserTools(list)
	all := s.userToolList()
	ts := append([]tools.Tool{connect}, s.convert(all)...)
	if err := s.m.reg.SetGroup(GroupPrefix+s.name, ts); err != nil {
		s.userTools = old
		return nil, nil, fmt.Errorf("mcp server %q: register tools: %w", s.name, err)
	}
	if raw, err := json.Marshal(all); err == nil {
		if err := s.m.UserTokens.SaveTools(ctx, s.name, raw); err != nil {
			s.log.Warn("mcp tool list not kept for the next start", "error", err)
		}
	}
	return mine, ts, nil
}

// userToolList is userTools sorted by name. listMu is held.
func (s *server) userToolList() []*mcpsdk.Tool {
	out := make([]*mcpsdk.Tool, 0, len(s.userTools))
	for _, name := range slices.Sorted(maps.Keys(s.userTools)) {
		out = append(out, s.userTools[name])
	}
	return out
}

func (s *server) connectTool() *connectTool {
	name, _ := toolName(s.name, ConnectToolSuffix)
	return &connectTool{srv: s, name: name}
}

// asUser runs do on a session of its own opened with call.User's token,
// and closes it. A user who has not connected the server, or whose token
// the server refuses, gets the connect-first result instead: a clear tool
// result with their authorize link, which the model relays, not an error
// to retry.
func (s *server) asUser(ctx context.Context, call tools.Call, tool string, do func(context.Context, *mcpsdk.ClientSession) (tools.Result, error)) (tools.Result, error) {
	if s.m.UserTokens == nil {
		return tools.Result{}, fmt.Errorf("mcp server %q: %w", s.name, s.cfgErr)
	}
	if call.User == "" {
		return tools.Result{}, fmt.Errorf("mcp server %q connects each user's own account, and this run has no user (%w)", s.name, tools.ErrPermanent)
	}
	ts, err := s.m.UserTokens.TokenSource(ctx, call.User, s.name)
	if errors.Is(err, usercreds.ErrNotConnected) {
		return s.connectFirst(ctx, call, tool)
	}
	if err != nil {
		return tools.Result{}, fmt.Errorf("mcp server %q: the user's token: %w", s.name, err)
	}
	ua := &userAuth{ts: ts}
	c, err := newConn(s.cfg, s.m.LookupEnv, s.log, orDefault(s.m.TerminateWait, DefaultTerminateWait))
	if err != nil {
		return tools.Result{}, fmt.Errorf("mcp server %q: %w", s.name, err)
	}
	c.transport.(*mcpsdk.StreamableClientTransport).OAuthHandler = ua
	cctx, cancel := context.WithTimeout(ctx, s.m.connectTimeout())
	cs, err := s.client.Connect(cctx, c.transport, nil)
	cancel()
	if err != nil {
		c.release()
		if ua.refused.Load() {
			return s.connectFirst(ctx, call, tool)
		}
		return tools.Result{}, redactErr(c.redact, fmt.Errorf("mcp server %q: connect: %w", s.name, err))
	}
	defer func() {
		_ = cs.Close()
		c.release()
	}()
	res, err := do(ctx, cs)
	if err != nil && ua.refused.Load() {
		return s.connectFirst(ctx, call, tool)
	}
	return res, redactErr(c.redact, err)
}

// connectFirst is the result of a call for a user who has not connected
// the server: the link to connect, in the result the model reads and, for
// Open WebUI, as a status line, and as the result's Connect, for a run
// that waits for the connection.
func (s *server) connectFirst(ctx context.Context, call tools.Call, tool string) (tools.Result, error) {
	link, err := s.m.UserTokens.ConnectLink(ctx, call.User, s.name, call.Run)
	if err != nil {
		return tools.Result{}, fmt.Errorf("mcp server %q: start the user's authorization: %w", s.name, err)
	}
	if call.Progress != nil {
		call.Progress(fmt.Sprintf("Connect your %s account: %s", s.name, link), 0)
	}
	return tools.Result{Target: s.name, Connect: &tools.Connect{Server: s.name, URL: link}, Content: fmt.Sprintf(
		"NOT CONNECTED: %s could not run because the user has not connected their %s account (or the connection expired). "+
			"Tell the user to open this link in their browser to connect it, then to ask again:\n\n%s\n\n"+
			"(The link works once, for a few minutes; asking again gives a new one.)", tool, s.name, link)}, nil
}

// connectTool is an OAuth server's "<server>__connect_account".
type connectTool struct {
	srv  *server
	name string
}

var _ tools.Tool = (*connectTool)(nil)

func (t *connectTool) Name() string { return t.name }
func (t *connectTool) Description() string {
	return fmt.Sprintf("Connect the user's own %s account, or check that it is connected. Call it when the user wants to use %s or to connect it; "+
		"it answers with a link for the user to open, or, once connected, makes the %s tools available.", t.srv.name, t.srv.name, t.srv.name)
}
func (t *connectTool) Parameters() json.RawMessage { return emptySchema }

// Call answers with the authorize link, or, for a connected user, lists
// the server's tools with their token and adds the named ones to what
// every user is offered (see Manager.Named).
func (t *connectTool) Call(ctx context.Context, call tools.Call) (tools.Result, error) {
	s := t.srv
	return s.asUser(ctx, call, t.name, func(ctx context.Context, cs *mcpsdk.ClientSession) (tools.Result, error) {
		var list []*mcpsdk.Tool
		for mt, err := range cs.Tools(ctx, nil) {
			if err != nil {
				return tools.Result{}, fmt.Errorf("mcp server %q: list tools: %w", s.name, err)
			}
			list = append(list, mt)
		}
		mine, ts, err := s.addListing(ctx, t, list)
		if err != nil {
			return tools.Result{}, err
		}
		s.mu.Lock()
		s.nTools = len(ts)
		s.lastErr = nil
		s.mu.Unlock()
		names := make([]string, 0, len(mine))
		for _, mt := range mine {
			if name, ok := toolName(s.name, mt.Name); ok && s.m.reg.Has(name) {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		if s.m.listed != nil {
			s.m.listed(s.name, "connect_account")
		}
		return tools.Result{Target: s.name, Content: fmt.Sprintf("CONNECTED: the user's %s account is connected. Its tools: %s.", s.name, strings.Join(names, ", "))}, nil
	})
}
