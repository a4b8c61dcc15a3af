// The OAuth flow of a user's connection: the server's metadata discovered,
// the callback's code exchanged, and tokens kept fresh and sealed.

package usercreds

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// discover finds the server's authorization server and the client to use
// with it, following the MCP authorization spec's discovery order as the
// go-sdk implements it (auth/authorization_code.go:423-492 for the
// protected-resource metadata, auth/shared.go:23 for the authorization
// server's), then registers a client (oauthex.RegisterClient, RFC 7591)
// when the operator configured none, and keeps it for the next users.
func (s *Service) discover(ctx context.Context, name string, srv Server) (client, error) {
	var prm *oauthex.ProtectedResourceMetadata
	for _, u := range prmURLs(srv.URL) {
		m, err := oauthex.GetProtectedResourceMetadata(ctx, u.url, u.resource, s.client())
		if err == nil && m != nil && len(m.AuthorizationServers) > 0 {
			prm = m
			break
		}
	}
	if prm == nil {
		// 2025-03-26 fallback: the server's origin is the authorization server.
		u, err := url.Parse(srv.URL)
		if err != nil {
			return client{}, fmt.Errorf("url: %w", err)
		}
		u.Path, u.RawQuery = "", ""
		prm = &oauthex.ProtectedResourceMetadata{Resource: srv.URL, AuthorizationServers: []string{u.String()}}
	}
	asm, err := auth.GetAuthServerMetadata(ctx, prm.AuthorizationServers[0], s.client())
	if err != nil {
		return client{}, fmt.Errorf("authorization server metadata: %w", err)
	}
	if asm == nil {
		base := strings.TrimRight(prm.AuthorizationServers[0], "/")
		asm = &oauthex.AuthServerMeta{Issuer: base, AuthorizationEndpoint: base + "/authorize",
			TokenEndpoint: base + "/token", RegistrationEndpoint: base + "/register"}
	}
	scopes := srv.Scopes
	if len(scopes) == 0 {
		scopes = prm.ScopesSupported
	}
	c := client{AuthURL: asm.AuthorizationEndpoint, TokenURL: asm.TokenEndpoint, RevocationURL: asm.RevocationEndpoint,
		Resource: prm.Resource, Scopes: scopes}
	if srv.ClientID != "" {
		c.ClientID, c.ClientSecret = srv.ClientID, srv.ClientSecret
		c.AuthStyle = authStyle(asm.TokenEndpointAuthMethodsSupported)
		return c, nil
	}
	var reg client
	if err := s.get(ctx, "", kindClient, name, &reg); err == nil && reg.TokenURL == c.TokenURL && reg.ClientID != "" {
		c.ClientID, c.ClientSecret, c.AuthStyle = reg.ClientID, reg.ClientSecret, reg.AuthStyle
		return c, nil
	}
	if asm.RegistrationEndpoint == "" {
		return client{}, errors.New(`the authorization server offers no dynamic client registration: set "client_id" (and "client_secret") in the MCP config`)
	}
	resp, err := oauthex.RegisterClient(ctx, asm.RegistrationEndpoint, &oauthex.ClientRegistrationMetadata{
		RedirectURIs:  []string{s.RedirectURL()},
		GrantTypes:    []string{"authorization_code", "refresh_token"},
		ResponseTypes: []string{"code"},
		ClientName:    "Longhaul",
		Scope:         strings.Join(scopes, " "),
	}, s.client())
	if err != nil {
		return client{}, fmt.Errorf("register a client: %w", err)
	}
	c.ClientID, c.ClientSecret = resp.ClientID, resp.ClientSecret
	c.AuthStyle = authStyle([]string{resp.TokenEndpointAuthMethod})
	if err := s.put(ctx, "", kindClient, name, c); err != nil {
		return client{}, fmt.Errorf("keep the registered client: %w", err)
	}
	s.log().Info("registered an OAuth client", "mcp_server", name)
	return c, nil
}

type prmURL struct{ url, resource string }

// prmURLs are where protected-resource metadata may be (RFC 9728 §3.1; the
// MCP spec's order, as go-sdk auth/authorization_code.go:465-492 lists
// them): at the endpoint's path, then at the root.
func prmURLs(resource string) []prmURL {
	u, err := url.Parse(resource)
	if err != nil {
		return nil
	}
	m := *u
	m.RawQuery = ""
	m.Path = "/.well-known/oauth-protected-resource/" + strings.TrimLeft(u.Path, "/")
	out := []prmURL{{m.String(), resource}}
	m.Path = "/.well-known/oauth-protected-resource"
	root := *u
	root.Path, root.RawQuery = "", ""
	return append(out, prmURL{m.String(), root.String()})
}

// authStyle picks how to authenticate at the token endpoint, as go-sdk
// auth/authorization_code.go:509-543 does.
func authStyle(methods []string) oauth2.AuthStyle {
	switch {
	case slices.Contains(methods, "client_secret_post"), slices.Contains(methods, "none"):
		return oauth2.AuthStyleInParams
	case slices.Contains(methods, "client_secret_basic"):
		return oauth2.AuthStyleInHeader
	}
	return oauth2.AuthStyleAutoDetect
}

// Callback completes an authorization: it takes the state (once; an
// unknown, used or expired one is ErrBadState), checks that browser is the
// secret of the browser that confirmed the link (else ErrOtherBrowser:
// the flow was finished by someone other than who confirmed it), exchanges
// the code with the PKCE verifier and keeps the tokens, sealed, for the
// state's user. It returns the user and server the state was bound to.
func (s *Service) Callback(ctx context.Context, state, code, browser string) (user, server string, err error) {
	c, err := s.Complete(ctx, state, code, browser)
	return c.User, c.Server, err
}

// Completed is a connection a callback completed: the user, the server,
// and the run that waits for it ("" for none).
type Completed struct {
	User, Server, Run string
}

// Complete is Callback, answering the run the connect link was made for
// as well.
func (s *Service) Complete(ctx context.Context, state, code, browser string) (Completed, error) {
	if state == "" {
		return Completed{}, ErrBadState
	}
	if code == "" {
		// No code to exchange: the state is spent all the same.
		if err := s.Decline(ctx, state); err != nil {
			return Completed{}, err
		}
		return Completed{}, ErrBadState
	}
	key := stateKey(state)
	var p pending
	if err := s.get(ctx, "", kindState, key, &p); err != nil {
		return Completed{}, ErrBadState
	}
	if ok, err := s.Store.DeleteCredential(ctx, "", kindState, key); err != nil {
		return Completed{}, err
	} else if !ok {
		return Completed{}, ErrBadState // another callback took it first
	}
	if !s.now().Before(p.Expires) {
		return Completed{}, ErrBadState
	}
	if p.Browser == "" || subtle.ConstantTimeCompare([]byte(p.Browser), []byte(stateKey(browser))) != 1 {
		s.log().Warn("an OAuth callback came to a browser that did not confirm the connect link; refused", "mcp_server", p.Server)
		return Completed{}, ErrOtherBrowser
	}
	if _, known := s.Servers[p.Server]; !known {
		return Completed{}, fmt.Errorf("%q: %w", p.Server, ErrUnknownServer)
	}
	cctx := context.WithValue(ctx, oauth2.HTTPClient, s.client())
	tok, err := p.Client.config(s.RedirectURL()).Exchange(cctx, code,
		oauth2.VerifierOption(p.Verifier), oauth2.SetAuthURLParam("resource", p.Client.Resource))
	if err != nil {
		return Completed{}, fmt.Errorf("exchange the code: %w", tokenErr(err))
	}
	if err := s.put(ctx, p.User, kindOAuth, p.Server, connection{Token: tok, Client: p.Client}); err != nil {
		return Completed{}, fmt.Errorf("keep the tokens: %w", err)
	}
	s.log().Info("mcp server connected by a user", "mcp_server", p.Server)
	return Completed{User: p.User, Server: p.Server, Run: p.Run}, nil
}

// Decline spends state without completing its authorization: the
// callback of an authorization the user declined or the server refused
// (?error=). The state can complete nothing afterwards. An unknown or
// used state is no error: there is nothing left to spend.
func (s *Service) Decline(ctx context.Context, state string) error {
	if state == "" {
		return nil
	}
	if _, err := s.Store.DeleteCredential(ctx, "", kindState, stateKey(state)); err != nil {
		return fmt.Errorf("spend the OAuth state: %w", err)
	}
	return nil
}

// tokenErr keeps an oauth2 error's code and description and drops the
// response body, which may echo what was sent.
func tokenErr(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		msg := "the token endpoint refused"
		if re.ErrorCode != "" {
			msg += ": " + re.ErrorCode
		}
		if re.Response != nil {
			msg += fmt.Sprintf(" (HTTP %d)", re.Response.StatusCode)
		}
		return errors.New(msg)
	}
	return err
}

// TokenSource returns the user's token source for server: it refreshes the
// access token RefreshBefore its expiry (oauth2.Config.TokenSource) and
// stores the refreshed tokens. ErrNotConnected when the user has none; a
// refresh the authorization server refuses (the grant was revoked) forgets
// the tokens and is ErrNotConnected too.
func (s *Service) TokenSource(ctx context.Context, user, server string) (oauth2.TokenSource, error) {
	if _, ok := s.Servers[server]; !ok {
		return nil, fmt.Errorf("%q: %w", server, ErrUnknownServer)
	}
	var c connection
	if err := s.get(ctx, user, kindOAuth, server, &c); err != nil {
		if errors.Is(err, store.ErrNoCredential) {
			return nil, ErrNotConnected
		}
		return nil, err
	}
	return &savingSource{s: s, ctx: ctx, user: user, server: server, conn: c}, nil
}

// savingSource hands out the user's access token, refreshing it first
// when it is about to expire, and stores what a refresh returned.
type savingSource struct {
	s            *Service
	ctx          context.Context
	user, server string
	mu           sync.Mutex
	conn         connection
}

func (t *savingSource) Token() (*oauth2.Token, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	// One refresh at a time per user and server in this process: with
	// refresh-token rotation, two at once would spend the same refresh
	// token and the second would read as revoked.
	l, _ := t.s.refreshing.LoadOrStore(t.user+"\x00"+t.server, &sync.Mutex{})
	l.(*sync.Mutex).Lock()
	defer l.(*sync.Mutex).Unlock()
	for attempt := 0; ; attempt++ {
		got, err := t.token()
		var re *oauth2.RetrieveError
		if err == nil || !errors.As(err, &re) {
			return got, err
		}
		if re.ErrorCode != "invalid_grant" {
			// tokenErr: the response body is not repeated, in case it echoes.
			return nil, fmt.Errorf("refresh the token of %q: %w", t.server, tokenErr(err))
		}
		// Refused: another call (or process) may have rotated the tokens
		// meanwhile; take the stored ones once before giving up.
		var stored connection
		if attempt == 0 && t.s.get(t.ctx, t.user, kindOAuth, t.server, &stored) == nil &&
			stored.Token != nil && stored.Token.RefreshToken != t.conn.Token.RefreshToken {
			t.conn = stored
			continue
		}
		_, _ = t.s.Store.DeleteCredential(t.ctx, t.user, kindOAuth, t.server)
		t.s.log().Info("a user's token was refused on refresh; forgotten", "mcp_server", t.server)
		return nil, ErrNotConnected
	}
}

// token returns the current access token, refreshed first when it expires
// within RefreshBefore, and stores a refreshed one.
func (t *savingSource) token() (*oauth2.Token, error) {
	before := t.s.RefreshBefore
	if before <= 0 {
		before = DefaultRefreshBefore
	}
	tok := *t.conn.Token
	if !tok.Expiry.IsZero() {
		// oauth2 refreshes within 10s of Expiry; make it RefreshBefore.
		tok.Expiry = tok.Expiry.Add(-before)
	}
	cctx := context.WithValue(context.WithoutCancel(t.ctx), oauth2.HTTPClient, t.s.client())
	got, err := t.conn.Client.config(t.s.RedirectURL()).TokenSource(cctx, &tok).Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) {
			return nil, err
		}
		return nil, fmt.Errorf("refresh the token of %q: %w", t.server, err)
	}
	if got.AccessToken == t.conn.Token.AccessToken {
		return t.conn.Token, nil
	}
	if got.RefreshToken == "" {
		got.RefreshToken = t.conn.Token.RefreshToken
	}
	t.conn.Token = got
	if err := t.s.put(t.ctx, t.user, kindOAuth, t.server, t.conn); err != nil {
		return nil, fmt.Errorf("keep the refreshed token of %q: %w", t.server, err)
	}
	t.s.log().Info("refreshed a user's token", "mcp_server", t.server)
	return got, nil
}
