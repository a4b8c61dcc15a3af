package mcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/longhaul-dev/longhaul/internal/tools"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"
)

// fakeTokens gives each user the token "tok-<user>" and keeps the saved
// tool list in memory.
type fakeTokens struct {
	mu    sync.Mutex
	saved []byte
}

var _ UserTokens = (*fakeTokens)(nil)

func (f *fakeTokens) TokenSource(_ context.Context, user, _ string) (oauth2.TokenSource, error) {
	return oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "tok-" + user}), nil
}
func (f *fakeTokens) ConnectLink(context.Context, string, string, string) (string, error) {
	return "https://lh.example/oauth/connect/X", nil
}
func (f *fakeTokens) SaveTools(_ context.Context, _ string, list []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.saved = slices.Clone(list)
	return nil
}
func (f *fakeTokens) LoadTools(context.Context, string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.saved), nil
}

// TestOAuthListingIsNotEveryones: a user's connection
// lists the server's tools with their own token, and what it lists must
// not decide what every user is offered: a tool no agent names is never
// added (alice's account shows admin_nuke), and a user whose account shows
// fewer tools (bob's) takes none away, neither from the registry nor from
// the list kept for the next start.
func TestOAuthListingIsNotEveryones(t *testing.T) {
	servers := map[string]*mcpsdk.Server{}
	for user, names := range map[string][]string{"alice": {"read", "write", "admin_nuke"}, "bob": {"read"}} {
		srv := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "acct", Version: "1"}, nil)
		for _, n := range names {
			srv.AddTool(&mcpsdk.Tool{Name: n, Description: n + " as " + user, InputSchema: map[string]any{"type": "object"}},
				func(context.Context, *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
					return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: "ok"}}}, nil
				})
		}
		servers["Bearer tok-"+user] = srv
	}
	hs := httptest.NewServer(mcpsdk.NewStreamableHTTPHandler(func(r *http.Request) *mcpsdk.Server {
		return servers[r.Header.Get("Authorization")]
	}, nil))
	t.Cleanup(hs.Close)
	cfg, err := ParseConfig([]byte(`{"mcpServers": {"acct": {"url": "` + hs.URL + `", "auth": "oauth"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	named := func(name string) bool { return slices.Contains([]string{"acct__read", "acct__write"}, name) }
	tokens := &fakeTokens{}
	start := func() (*Manager, *tools.Registry) {
		reg, err := tools.NewRegistry()
		if err != nil {
			t.Fatal(err)
		}
		m := New(cfg, reg, nil)
		m.UserTokens, m.Named = tokens, named
		if err := m.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = m.Close() })
		return m, reg
	}
	_, reg := start()
	connect := func(user string) string {
		t.Helper()
		tl, ok := reg.Get("acct__connect_account")
		if !ok {
			t.Fatalf("no connect tool; have %v", reg.Names())
		}
		res, err := tl.Call(t.Context(), tools.Call{ID: "c", User: user})
		if err != nil || !strings.HasPrefix(res.Content, "CONNECTED") {
			t.Fatalf("%s connects: %q, %v", user, res.Content, err)
		}
		return res.Content
	}
	want := []string{"acct__connect_account", "acct__read", "acct__write"}
	connect("alice")
	if got := reg.Names(); !slices.Equal(got, want) {
		t.Errorf("after alice's listing the registry offers %v, want %v (no tool an agent does not name)", got, want)
	}
	if got := connect("bob"); !strings.Contains(got, "acct__read") || strings.Contains(got, "acct__write") {
		t.Errorf("bob's connect result %q, want his own tools", got)
	}
	if got := reg.Names(); !slices.Equal(got, want) {
		t.Errorf("after bob's listing the registry offers %v, want %v (his listing takes nothing away)", got, want)
	}
	tokens.mu.Lock()
	saved := string(tokens.saved)
	tokens.mu.Unlock()
	if !strings.Contains(saved, `"write"`) || strings.Contains(saved, "admin_nuke") {
		t.Errorf("the kept list is %s, want read and write, never admin_nuke", saved)
	}
	// A worker that starts offers what the listings added up to.
	if _, reg2 := start(); !slices.Equal(reg2.Names(), want) {
		t.Errorf("a restarted worker offers %v, want %v", reg2.Names(), want)
	}
}
