package usercreds

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/longhaul-dev/longhaul/internal/store"
	"golang.org/x/oauth2"
)

// The kinds of credential rows.
const (
	kindOAuth  = "oauth"        // a user's tokens for one MCP server
	kindSecret = "secret"       // a user's named HTTP-tool secret
	kindLink   = "oauth_link"   // a connect link not yet confirmed (user ""), by the link id's hash
	kindState  = "oauth_state"  // a pending authorization (user ""), by the state's hash
	kindClient = "oauth_client" // a dynamically registered client (user ""), by server
	kindTools  = "mcp_tools"    // an OAuth server's last tool list (user ""), by server
)

// CallbackPath is the path of the OAuth redirect URI under
// LONGHAUL_PUBLIC_URL.
const CallbackPath = "/oauth/callback"

// ConnectPath is the path, under LONGHAUL_PUBLIC_URL, of the connect links
// users are given: ConnectPath + the link's id. The API answers it with a
// page naming the Longhaul user the account would be connected to, and
// starts the authorization only on that page's explicit POST.
const ConnectPath = "/oauth/connect/"

// Defaults of the Service's tunables.
const (
	// DefaultLinkTTL is how long a connect link may wait to be confirmed.
	DefaultLinkTTL = 10 * time.Minute
	// DefaultStateTTL is how long a confirmed authorization may take at
	// the authorization server.
	DefaultStateTTL      = 10 * time.Minute
	DefaultRefreshBefore = time.Minute
	// MaxSecretSize bounds one HTTP-tool secret.
	MaxSecretSize = 8 << 10
)

// Errors of the Service.
var (
	// ErrUnknownServer: no MCP server of that name declares auth: oauth.
	ErrUnknownServer = errors.New("no MCP server of that name uses OAuth")
	// ErrNotConnected: the user has not connected the server (or revoked it).
	ErrNotConnected = errors.New("not connected")
	// ErrBadState: the callback's state, or a connect link, is unknown,
	// used, or expired.
	ErrBadState = errors.New("the authorization request is unknown, already used or expired; start again")
	// ErrOtherBrowser: the callback came to a browser that did not confirm
	// the connect link (the flow was finished by someone else).
	ErrOtherBrowser = errors.New("this authorization was not confirmed in this browser; nothing was connected. " +
		"Open the connect link in the browser you sign in with and confirm it there, or ask for a new link")
	// ErrNoSecret: the user has not set the secret.
	ErrNoSecret = errors.New("secret not set")
	// ErrBadSecretName: a secret name is not [A-Za-z0-9_-]{1,64}.
	ErrBadSecretName = errors.New("a secret name is 1 to 64 letters, digits, '_' or '-'")
)

// Server is an MCP server that declares auth: oauth.
type Server struct {
	// URL is the server's MCP endpoint: the protected resource.
	URL string
	// ClientID and ClientSecret are a client registered with the server's
	// authorization server by the operator; empty ClientID means dynamic
	// client registration (RFC 7591).
	ClientID, ClientSecret string
	// Scopes are requested; empty means what the resource metadata lists.
	Scopes []string
}

// Service runs the authorization flows and keeps the users' tokens and
// secrets. Set its fields before use; it is safe for concurrent use.
type Service struct {
	Store store.Credentials
	Box   *Box
	// PublicURL is where users' browsers reach the API
	// (LONGHAUL_PUBLIC_URL); the redirect URI is PublicURL+CallbackPath.
	PublicURL string
	// Servers are the MCP servers that use OAuth, by name.
	Servers map[string]Server
	// HTTPClient makes the discovery, registration, token and revocation
	// requests; nil means http.DefaultClient.
	HTTPClient *http.Client
	// LinkTTL is how long a connect link may wait to be confirmed
	// (DefaultLinkTTL); StateTTL is how long a confirmed authorization
	// stays valid (DefaultStateTTL); RefreshBefore is how long before its
	// expiry an access token is refreshed (DefaultRefreshBefore).
	LinkTTL, StateTTL, RefreshBefore time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Log receives the outcome of flows, never a token; nil discards.
	Log *slog.Logger

	refreshing sync.Map // user + "\x00" + server -> *sync.Mutex
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Service) client() *http.Client {
	if s.HTTPClient != nil {
		return s.HTTPClient
	}
	return http.DefaultClient
}

func (s *Service) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.New(slog.DiscardHandler)
}

// RedirectURL is the OAuth redirect URI registered with every server.
func (s *Service) RedirectURL() string {
	return strings.TrimRight(s.PublicURL, "/") + CallbackPath
}

// ServerNames lists the servers that use OAuth, sorted.
func (s *Service) ServerNames() []string { return slices.Sorted(maps.Keys(s.Servers)) }

func aad(user, kind, name string) []byte {
	return []byte("longhaul usercreds v1\x00" + user + "\x00" + kind + "\x00" + name)
}

func (s *Service) put(ctx context.Context, user, kind, name string, v any) error {
	plain, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.Store.PutCredential(ctx, store.Credential{User: user, Kind: kind, Name: name, Data: s.Box.Seal(plain, aad(user, kind, name))})
}

func (s *Service) get(ctx context.Context, user, kind, name string, v any) error {
	c, err := s.Store.GetCredential(ctx, user, kind, name)
	if err != nil {
		return err
	}
	plain, err := s.Box.Open(c.Data, aad(user, kind, name))
	if err != nil {
		return err
	}
	return json.Unmarshal(plain, v)
}

// client is an OAuth client of one authorization server, and where its
// tokens are used.
type client struct {
	ClientID      string           `json:"client_id"`
	ClientSecret  string           `json:"client_secret,omitempty"`
	AuthURL       string           `json:"auth_url"`
	TokenURL      string           `json:"token_url"`
	RevocationURL string           `json:"revocation_url,omitempty"`
	AuthStyle     oauth2.AuthStyle `json:"auth_style"`
	Resource      string           `json:"resource"`
	Scopes        []string         `json:"scopes,omitempty"`
}

func (c client) config(redirect string) *oauth2.Config {
	return &oauth2.Config{
		ClientID: c.ClientID, ClientSecret: c.ClientSecret, RedirectURL: redirect, Scopes: c.Scopes,
		Endpoint: oauth2.Endpoint{AuthURL: c.AuthURL, TokenURL: c.TokenURL, AuthStyle: c.AuthStyle},
	}
}

// link is a connect link given to a user, kept until it is confirmed.
type link struct {
	User   string `json:"user"`
	Server string `json:"server"`
	// Run is the run that waits for the connection, "" for none.
	Run     string    `json:"run,omitempty"`
	Expires time.Time `json:"expires"`
}

// pending is a started authorization, kept until its callback.
type pending struct {
	User     string `json:"user"`
	Server   string `json:"server"`
	Run      string `json:"run,omitempty"`
	Verifier string `json:"verifier"`
	// Browser is the hash of the browser secret of the browser that
	// confirmed the connect link: only that browser's callback completes.
	Browser string    `json:"browser"`
	Expires time.Time `json:"expires"`
	Client  client    `json:"client"`
}

// connection is a user's tokens for one server.
type connection struct {
	Token  *oauth2.Token `json:"token"`
	Client client        `json:"client"`
}

// ConnectLink gives user a link to connect their account of server:
// PublicURL + ConnectPath + an opaque, single-use id that expires after
// LinkTTL. The link carries no OAuth state and reaches no authorization
// server by itself, so it may sit in a tool result, a workflow history or
// a conversation: whoever opens it is shown the Longhaul user it connects
// to and must confirm (Confirm) before any authorization starts, and only
// the browser that confirmed can finish it (Callback). run, when set, is
// the run that waits for the connection: Complete names it.
func (s *Service) ConnectLink(ctx context.Context, user, server, run string) (string, error) {
	if _, ok := s.Servers[server]; !ok {
		return "", fmt.Errorf("%q: %w", server, ErrUnknownServer)
	}
	if user == "" {
		return "", errors.New("a connect link needs a user")
	}
	ttl := orDefault(s.LinkTTL, DefaultLinkTTL)
	// Expired links are only garbage; sweep them now and then.
	_, _ = s.Store.DeleteCredentialsBefore(ctx, kindLink, s.now().Add(-ttl))
	id := rand.Text() // 26 base32 characters: 130 random bits
	if err := s.put(ctx, "", kindLink, stateKey(id), link{User: user, Server: server, Run: run, Expires: s.now().Add(ttl)}); err != nil {
		return "", fmt.Errorf("keep the connect link: %w", err)
	}
	return strings.TrimRight(s.PublicURL, "/") + ConnectPath + id, nil
}

// Link returns the user and server of a connect link without spending it,
// for the page that asks to confirm; ErrBadState when it is unknown, used
// or expired.
func (s *Service) Link(ctx context.Context, id string) (user, server string, err error) {
	var l link
	if id == "" || s.get(ctx, "", kindLink, stateKey(id), &l) != nil || !s.now().Before(l.Expires) {
		return "", "", ErrBadState
	}
	return l.User, l.Server, nil
}

// Confirm spends a connect link and starts the authorization it names: it
// discovers the server's authorization server, registers a client when
// none is configured, keeps a single-use state bound to the link's user,
// the PKCE verifier and browser (the browser's secret, which only the
// confirming browser holds) for StateTTL, and returns the authorization
// endpoint's URL to send that browser to.
func (s *Service) Confirm(ctx context.Context, id, browser string) (string, error) {
	if browser == "" {
		return "", ErrOtherBrowser
	}
	var l link
	if id == "" || s.get(ctx, "", kindLink, stateKey(id), &l) != nil || !s.now().Before(l.Expires) {
		return "", ErrBadState
	}
	user, server := l.User, l.Server
	if ok, err := s.Store.DeleteCredential(ctx, "", kindLink, stateKey(id)); err != nil {
		return "", err
	} else if !ok {
		return "", ErrBadState // confirmed by another request first
	}
	srv, ok := s.Servers[server]
	if !ok {
		return "", fmt.Errorf("%q: %w", server, ErrUnknownServer)
	}
	c, err := s.discover(ctx, server, srv)
	if err != nil {
		return "", fmt.Errorf("mcp server %q: %w", server, err)
	}
	ttl := orDefault(s.StateTTL, DefaultStateTTL)
	_, _ = s.Store.DeleteCredentialsBefore(ctx, kindState, s.now().Add(-ttl))
	verifier := oauth2.GenerateVerifier()
	state := rand.Text()
	p := pending{User: user, Server: server, Run: l.Run, Verifier: verifier, Browser: stateKey(browser), Expires: s.now().Add(ttl), Client: c}
	if err := s.put(ctx, "", kindState, stateKey(state), p); err != nil {
		return "", fmt.Errorf("keep the authorization state: %w", err)
	}
	// PKCE S256 and the resource indicator (RFC 8707), as the SDK's own
	// flow does: go-sdk auth/authorization_code.go:600-612.
	return c.config(s.RedirectURL()).AuthCodeURL(state,
		oauth2.S256ChallengeOption(verifier),
		oauth2.SetAuthURLParam("resource", c.Resource)), nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// stateKey is the name a state or a link id is kept under, and how a
// browser secret is kept: its hash, so the store holds nothing that
// completes a flow.
func stateKey(state string) string {
	h := sha256.Sum256([]byte(state))
	return hex.EncodeToString(h[:])
}

// Connection is what a user sees of one server's connection: never a token.
type Connection struct {
	Server    string     `json:"server"`
	Connected bool       `json:"connected"`
	Scopes    []string   `json:"scopes,omitempty"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	UpdatedAt *time.Time `json:"updated_at,omitempty"`
}

// Connections lists every OAuth server and whether user connected it.
func (s *Service) Connections(ctx context.Context, user string) ([]Connection, error) {
	out := []Connection{}
	for _, name := range s.ServerNames() {
		c := Connection{Server: name}
		var conn connection
		switch err := s.get(ctx, user, kindOAuth, name, &conn); {
		case err == nil:
			c.Connected, c.Scopes = true, conn.Client.Scopes
			if conn.Token != nil && !conn.Token.Expiry.IsZero() {
				e := conn.Token.Expiry.UTC()
				c.ExpiresAt = &e
			}
		case errors.Is(err, store.ErrNoCredential):
		default:
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// Disconnect forgets user's tokens for server and asks the authorization
// server to revoke them (RFC 7009) when it has a revocation endpoint. It
// reports whether there were tokens; a failed revocation is logged, the
// tokens are gone either way.
func (s *Service) Disconnect(ctx context.Context, user, server string) (bool, error) {
	if _, ok := s.Servers[server]; !ok {
		return false, fmt.Errorf("%q: %w", server, ErrUnknownServer)
	}
	var c connection
	getErr := s.get(ctx, user, kindOAuth, server, &c)
	ok, err := s.Store.DeleteCredential(ctx, user, kindOAuth, server)
	if err != nil || !ok || getErr != nil || c.Client.RevocationURL == "" || c.Token == nil {
		return ok, err
	}
	for _, tok := range []struct{ v, hint string }{{c.Token.RefreshToken, "refresh_token"}, {c.Token.AccessToken, "access_token"}} {
		if tok.v == "" {
			continue
		}
		if err := s.revoke(ctx, c.Client, tok.v, tok.hint); err != nil {
			s.log().Warn("token revocation failed; the tokens are forgotten here", "mcp_server", server, "error", err)
		}
	}
	return true, nil
}

// revoke is one RFC 7009 revocation request. oauth2 has none, and the SDK
// neither; it is one form POST.
func (s *Service) revoke(ctx context.Context, c client, token, hint string) error {
	form := url.Values{"token": {token}, "token_type_hint": {hint}}
	if c.AuthStyle != oauth2.AuthStyleInHeader {
		form.Set("client_id", c.ClientID)
		if c.ClientSecret != "" {
			form.Set("client_secret", c.ClientSecret)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.RevocationURL, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if c.AuthStyle == oauth2.AuthStyleInHeader {
		req.SetBasicAuth(url.QueryEscape(c.ClientID), url.QueryEscape(c.ClientSecret))
	}
	resp, err := s.client().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return nil
}

var secretNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidSecretName reports whether name can name a secret.
func ValidSecretName(name string) bool { return secretNameRE.MatchString(name) }

// SetSecret keeps user's secret name, sealed.
func (s *Service) SetSecret(ctx context.Context, user, name, value string) error {
	if !ValidSecretName(name) {
		return ErrBadSecretName
	}
	if len(value) > MaxSecretSize {
		return fmt.Errorf("the secret is over %d bytes", MaxSecretSize)
	}
	return s.put(ctx, user, kindSecret, name, value)
}

// Secret returns user's secret name, or ErrNoSecret.
func (s *Service) Secret(ctx context.Context, user, name string) (string, error) {
	var v string
	if err := s.get(ctx, user, kindSecret, name, &v); err != nil {
		if errors.Is(err, store.ErrNoCredential) {
			return "", ErrNoSecret
		}
		return "", err
	}
	return v, nil
}

// SecretNames lists the names of user's secrets, never their values.
func (s *Service) SecretNames(ctx context.Context, user string) ([]store.Credential, error) {
	return s.Store.ListCredentials(ctx, user, kindSecret)
}

// DeleteSecret forgets user's secret name and reports whether it was set.
func (s *Service) DeleteSecret(ctx context.Context, user, name string) (bool, error) {
	return s.Store.DeleteCredential(ctx, user, kindSecret, name)
}

// SaveTools keeps the tool list an OAuth server last gave a connected user,
// so that a worker that starts lists the server's tools before anyone
// connects again.
func (s *Service) SaveTools(ctx context.Context, server string, list []byte) error {
	return s.put(ctx, "", kindTools, server, json.RawMessage(list))
}

// LoadTools returns what SaveTools kept, or nil.
func (s *Service) LoadTools(ctx context.Context, server string) ([]byte, error) {
	var list json.RawMessage
	if err := s.get(ctx, "", kindTools, server, &list); err != nil {
		if errors.Is(err, store.ErrNoCredential) {
			return nil, nil
		}
		return nil, err
	}
	return list, nil
}

// Forget removes every token and secret of user (their data is deleted).
func (s *Service) Forget(ctx context.Context, user string) (int64, error) {
	return s.Store.DeleteUserCredentials(ctx, user)
}
