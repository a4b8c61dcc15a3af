package usercreds

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/internal/testing/storetest"
)

// TestConnectLinkBinding, at the service: a connect link
// holds no OAuth state, works once and expires after LinkTTL; the state it
// starts completes only with the secret of the browser that confirmed it,
// so a victim's browser that finishes the requester's flow stores nothing.
func TestConnectLinkBinding(t *testing.T) {
	as, mux := authServer(t)
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "at-" + r.PostForm.Get("code"), "token_type": "Bearer", "expires_in": 3600})
	})
	st := storetest.SQLiteStore(t)
	box, _ := NewBox(strings.Repeat("ab", KeySize))
	now := time.Now()
	s := &Service{Store: st.(store.Credentials), Box: box, PublicURL: "https://lh.example/", Now: func() time.Time { return now },
		Servers: map[string]Server{"srv": {URL: as.URL + "/mcp", ClientID: "c"}}}
	connected := func() bool {
		_, err := s.TokenSource(t.Context(), "alice", "srv")
		return err == nil
	}
	start := func(browser string) (link, state string) {
		t.Helper()
		link, err := s.ConnectLink(t.Context(), "alice", "srv", "")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(link, "https://lh.example"+ConnectPath) || strings.Contains(link, "state") {
			t.Fatalf("link %q, want https://lh.example%s<id>", link, ConnectPath)
		}
		id := strings.TrimPrefix(link, "https://lh.example"+ConnectPath)
		if user, server, err := s.Link(t.Context(), id); err != nil || user != "alice" || server != "srv" {
			t.Fatalf("Link = %q, %q, %v", user, server, err)
		}
		authURL, err := s.Confirm(t.Context(), id, browser)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Confirm(t.Context(), id, browser); !errors.Is(err, ErrBadState) {
			t.Errorf("a link confirmed twice: %v, want ErrBadState", err)
		}
		u, _ := url.Parse(authURL)
		return id, u.Query().Get("state")
	}

	_, state := start("alice-browser-secret-0000")
	if _, _, err := s.Callback(t.Context(), state, "victim", "victim-browser-secret-000"); !errors.Is(err, ErrOtherBrowser) || connected() {
		t.Fatalf("another browser's callback: %v, connected %v; want ErrOtherBrowser and nothing stored", err, connected())
	}
	_, state = start("alice-browser-secret-0000")
	if _, _, err := s.Callback(t.Context(), state, "victim", ""); !errors.Is(err, ErrOtherBrowser) || connected() {
		t.Fatalf("a callback without a browser secret: %v, connected %v", err, connected())
	}
	if _, err := s.Confirm(t.Context(), "unknown", "alice-browser-secret-0000"); !errors.Is(err, ErrBadState) {
		t.Errorf("an unknown link: %v", err)
	}
	_, state = start("alice-browser-secret-0000")
	if user, _, err := s.Callback(t.Context(), state, "alice", "alice-browser-secret-0000"); err != nil || user != "alice" || !connected() {
		t.Fatalf("the confirming browser's callback: %q, %v", user, err)
	}

	// A link expires after LinkTTL, a state after StateTTL.
	link, err := s.ConnectLink(t.Context(), "alice", "srv", "")
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(DefaultLinkTTL + time.Second)
	if _, err := s.Confirm(t.Context(), strings.TrimPrefix(link, "https://lh.example"+ConnectPath), "alice-browser-secret-0000"); !errors.Is(err, ErrBadState) {
		t.Errorf("an expired link: %v, want ErrBadState", err)
	}
	_, state = start("alice-browser-secret-0000")
	now = now.Add(DefaultStateTTL + time.Second)
	if _, _, err := s.Callback(t.Context(), state, "alice", "alice-browser-secret-0000"); !errors.Is(err, ErrBadState) {
		t.Errorf("an expired state: %v, want ErrBadState", err)
	}
}

// TestOAuthErrorCallbackSpendsState: an authorization server's error
// callback (?error=access_denied&state=…) spends the state before it
// returns, so the same state, replayed with a code, connects nothing. The
// API's callback calls Decline; Callback with no code spends it too.
func TestOAuthErrorCallbackSpendsState(t *testing.T) {
	as, mux := authServer(t)
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "at", "token_type": "Bearer", "expires_in": 3600})
	})
	box, _ := NewBox(strings.Repeat("ab", KeySize))
	s := &Service{Store: storetest.SQLiteStore(t).(store.Credentials), Box: box, PublicURL: "https://lh.example/",
		Servers: map[string]Server{"srv": {URL: as.URL + "/mcp", ClientID: "c"}}}
	const browser = "alice-browser-secret-0000"
	state := func() string {
		t.Helper()
		link, err := s.ConnectLink(t.Context(), "alice", "srv", "")
		if err != nil {
			t.Fatal(err)
		}
		authURL, err := s.Confirm(t.Context(), strings.TrimPrefix(link, "https://lh.example"+ConnectPath), browser)
		if err != nil {
			t.Fatal(err)
		}
		u, _ := url.Parse(authURL)
		return u.Query().Get("state")
	}
	for _, tc := range []struct {
		name    string
		decline func(string) error
	}{
		{"Decline", func(st string) error { return s.Decline(t.Context(), st) }},
		{"Callback without a code", func(st string) error { _, _, err := s.Callback(t.Context(), st, "", ""); return err }},
	} {
		st := state()
		if err := tc.decline(st); err != nil && !errors.Is(err, ErrBadState) {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if _, _, err := s.Callback(t.Context(), st, "code", browser); !errors.Is(err, ErrBadState) {
			t.Errorf("after %s, the state still completes: %v, want ErrBadState", tc.name, err)
		}
	}
}

// authServer is an OAuth authorization server that publishes its metadata
// (authorization and token endpoints, PKCE S256); a test adds its routes
// to mux.
func authServer(t *testing.T) (*httptest.Server, *http.ServeMux) {
	t.Helper()
	mux := http.NewServeMux()
	as := httptest.NewServer(mux)
	t.Cleanup(as.Close)
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": as.URL, "authorization_endpoint": as.URL + "/authorize",
			"token_endpoint": as.URL + "/token", "response_types_supported": []string{"code"}, "code_challenge_methods_supported": []string{"S256"}})
	})
	return as, mux
}
