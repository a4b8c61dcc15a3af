// Package identity tells who is asking: it binds a request's bearer key to a
// principal and, for keys trusted to speak for end users (proxy keys, such as
// Open WebUI's connection), the end user the request names, by plain headers
// or by Open WebUI's signed user header. Everything Longhaul stores or runs
// for a request is scoped by the principal's Name.
//
// The package knows HTTP only as header values, so the API's middleware, the
// fuzz tests and the settings check all use the same code.
package identity

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/longhaul-dev/longhaul"
)

// Key is a bearer key and the principal it names.
type Key struct {
	// Name names the key's principal (and, behind a proxy key, prefixes its
	// users' names). It appears in logs; the secret never does.
	Name   string
	Secret string
	// Proxy keys may speak for end users: only their requests' user headers
	// (or signed user token) are read.
	Proxy bool
	// Role is an API key's own role ("name:key:role=admin"), what allow:
	// rules judge its requests by; empty for none. A proxy key's users
	// carry their own.
	Role string
}

// keyRole is the form of a key's role.
var keyRole = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// roleSuffix marks the role part of a key entry: "name:key:role=admin".
const roleSuffix = ":role="

var keyName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ParseKeys reads the entries of LONGHAUL_API_KEYS and LONGHAUL_PROXY_KEYS:
// each is name:key, or a bare key, named "key-" and a short hash of it. An
// entry whose part before the first colon is not a valid name (letters,
// digits, '.', '_', '-'; at most 64) is a bare key. Names and secrets must be
// unique across both lists.
//
// An API key's entry may end in ":role=<role>" (name:key:role=admin), the
// role its requests have before allow: rules. The suffix is recognised only
// in that exact form (role: letters, digits, '.', '_', '-'; at most 64), so
// a key whose secret holds other colons keeps its secret whole; a secret
// that itself ends in ":role=…" cannot be written. A proxy key's entry may
// not carry a role: its users bring their own.
func ParseKeys(apiKeys, proxyKeys []string) ([]Key, error) {
	var keys []Key
	var errs []error
	names := map[string]bool{}
	secrets := map[string]bool{}
	add := func(entry string, proxy bool) {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			return
		}
		var role string
		if i := strings.LastIndex(entry, roleSuffix); i > 0 && keyRole.MatchString(entry[i+len(roleSuffix):]) {
			if proxy {
				errs = append(errs, errors.New("a proxy key carries no role (\":role=\" suffix): its users' roles come from Open WebUI"))
				return
			}
			role, entry = entry[i+len(roleSuffix):], entry[:i]
		}
		k := Key{Secret: entry, Proxy: proxy, Role: role}
		if name, secret, ok := strings.Cut(entry, ":"); ok && keyName.MatchString(name) && secret != "" {
			k.Name, k.Secret = name, secret
		} else {
			sum := sha256.Sum256([]byte(entry))
			k.Name = "key-" + hex.EncodeToString(sum[:4])
		}
		switch {
		case names[k.Name]:
			errs = append(errs, fmt.Errorf("key name %q is used twice", k.Name))
		case secrets[k.Secret]:
			errs = append(errs, fmt.Errorf("key %q repeats another key's secret", k.Name))
		default:
			names[k.Name], secrets[k.Secret] = true, true
			keys = append(keys, k)
		}
	}
	for _, e := range apiKeys {
		add(e, false)
	}
	for _, e := range proxyKeys {
		add(e, true)
	}
	return keys, errors.Join(errs...)
}

// Headers names the request headers end users are read from. The defaults
// are Open WebUI's; operators who rename them there (FORWARD_USER_INFO_HEADER_*,
// FORWARD_SESSION_INFO_HEADER_*) rename them here too.
type Headers struct {
	UserID, UserEmail, UserName, UserRole string
	// UserJWT carries Open WebUI's signed user (FORWARD_USER_INFO_HEADER_JWT).
	UserJWT string
	ChatID  string
	// MessageID is Open WebUI's id of the assistant message being written.
	MessageID string
	// UserGroups, when set (LONGHAUL_USER_GROUPS_HEADER), names the header
	// that carries the user's groups, separated by commas. Open WebUI
	// fills one only when its connection is told to ({{USER_GROUPS}}
	// since v0.11.0, see ParseGroups), so it is empty by default.
	UserGroups string
}

// OpenWebUIHeaders are Open WebUI's default header names.
var OpenWebUIHeaders = Headers{
	UserID:    "X-OpenWebUI-User-Id",
	UserEmail: "X-OpenWebUI-User-Email",
	UserName:  "X-OpenWebUI-User-Name",
	UserRole:  "X-OpenWebUI-User-Role",
	UserJWT:   "X-OpenWebUI-User-Jwt",
	ChatID:    "X-OpenWebUI-Chat-Id",
	MessageID: "X-OpenWebUI-Message-Id",
}

// Principal is who a request acts for.
type Principal struct {
	// Name scopes everything: the key's name; behind a proxy key
	// "<key name>/<user id>"; with no keys configured the user id the
	// headers name, else "anonymous". The user id is a Part: '/' and '%'
	// escaped, long or unusual ids bounded.
	Name string
	// Key is the name of the key the request carried; empty without keys.
	Key string
	// User is the end user, as far as the request told it.
	User longhaul.User
	// NoUser is set when a proxy key's request names no user, by signed
	// token (Resolver.JWTSecret) or plain headers alike: the request may
	// read what is not user data (the model list), nothing else. Refusing
	// it, rather than letting every such request share the key's
	// principal (its memories, conversations, backlog, DELETE /v1/me), keeps
	// a proxy whose forwarding is off from making all its users one.
	NoUser bool
}

// Errors Resolve returns; each is a 401.
var (
	ErrMissingKey = errors.New("missing API key: send Authorization: Bearer <key>")
	ErrInvalidKey = errors.New("invalid API key")
	ErrBadToken   = errors.New("invalid signed user header")
	// ErrNoUser is the error of a request whose principal has NoUser set,
	// on a route that reads or writes user data; the API answers it with a
	// 401. It names the fix on each side.
	ErrNoUser = errors.New("no user: a proxy key's request must name its end user. " +
		"In Open WebUI set ENABLE_FORWARD_USER_INFO_HEADERS=true, so that it sends the user headers; " +
		"a client that acts as one principal of its own takes a named API key (LONGHAUL_API_KEYS=name:key), not a proxy key")
)

// DefaultMaxTokenLifetime is Resolver.MaxTokenLifetime when none is set.
// Open WebUI signs its user for 300 s by default
// (FORWARD_USER_INFO_HEADER_JWT_EXPIRES_SECONDS); an hour leaves room for
// an operator who raised that, and no more.
const DefaultMaxTokenLifetime = time.Hour

// Resolver turns a request's credentials into its principal.
type Resolver struct {
	Keys []Key
	// JWTSecret, when set, is Open WebUI's FORWARD_USER_INFO_HEADER_JWT_SECRET:
	// end users come only from a valid token, never from plain headers.
	JWTSecret []byte
	Headers   Headers
	// MaxTokenLifetime bounds a signed user token's exp - iat; a token that
	// lives longer, or says nothing of when it was issued, is refused.
	// Zero is DefaultMaxTokenLifetime.
	MaxTokenLifetime time.Duration
	// Now is the clock tokens are checked against; nil is time.Now.
	Now func() time.Time
}

// Open reports whether no keys are configured: development, where anyone
// may name any user.
func (r *Resolver) Open() bool { return len(r.Keys) == 0 }

// maxUserField bounds each user field read from a header or token.
const maxUserField = 256

// Resolve returns the principal of a request with the given Authorization
// header value; header reads the request's other headers.
//
// A header's value may alias the request's buffer (fiber's c.Get does:
// fasthttp reuses it for the next request), so every value read is copied:
// the principal outlives the request (the stream-limit map, a run's input).
func (r *Resolver) Resolve(authorization string, header func(string) string) (Principal, error) {
	read := header
	header = func(name string) string { return strings.Clone(read(name)) }
	var key *Key
	if !r.Open() {
		secret, ok := strings.CutPrefix(authorization, "Bearer ")
		if !ok || strings.TrimSpace(secret) == "" {
			return Principal{}, ErrMissingKey
		}
		key = r.match(strings.TrimSpace(secret))
		if key == nil {
			return Principal{}, ErrInvalidKey
		}
		if !key.Proxy {
			return Principal{Name: key.Name, Key: key.Name, User: longhaul.User{Principal: key.Name, Role: key.Role}}, nil
		}
	}
	user, err := r.user(header)
	if err != nil {
		return Principal{}, err
	}
	// The name comes from the whole id, bounded; the user's fields are
	// only cut short for display.
	id := user.ID
	if id == "" {
		id = user.Email
	}
	p := Principal{User: longhaul.User{ID: bound(user.ID), Email: bound(user.Email), Name: bound(user.Name), Role: bound(user.Role)}}
	// Groups are read where a caller may speak for its users: behind a
	// proxy key (on the signed-token path too: see docs/security.md, "Who may
	// use what"), or with no keys and no signed header at all (development).
	// With no keys but a signed header, anyone could send the header, so
	// it is ignored.
	if h := r.Headers.UserGroups; h != "" && (key != nil || len(r.JWTSecret) == 0) {
		p.User.Groups = ParseGroups(header(h))
	}
	switch {
	case key == nil && id == "":
		p.Name = "anonymous"
	case key == nil:
		p.Name = Part(id)
	case id == "":
		p.Name, p.Key = key.Name, key.Name
		p.NoUser = true
	default:
		// A key's name holds no '/' and Part escapes it: two users of two
		// keys never share a name (see Part).
		p.Name, p.Key = key.Name+"/"+Part(id), key.Name
	}
	p.User.Principal = p.Name
	return p, nil
}

// Bounds of a groups header.
const (
	maxGroups     = 64
	maxGroupBytes = 256
)

// ParseGroups reads a groups header: names separated by commas, each
// trimmed, empty ones dropped, repeats kept once, at most 64 of at most 256
// bytes each (the rest dropped).
//
// The form is the one Open WebUI gives its {{USER_GROUPS}} variable: in a
// connection's headers, since v0.11.0, the names of the user's groups,
// each trimmed, joined with "," (utils/headers.py:115-131 at v0.11.0); in
// prompt templates joined with ", " (v0.10.2's utils/task.py:59-68). Before
// v0.11.0 the header came only from whatever stands between (an
// authenticating proxy such as oauth2-proxy's X-Forwarded-Groups); a group
// name that holds a comma cannot be named.
func ParseGroups(v string) []string {
	var out []string
	for g := range strings.SplitSeq(v, ",") {
		g = strings.TrimSpace(g)
		if g == "" || len(g) > maxGroupBytes || slices.Contains(out, g) {
			continue
		}
		if len(out) == maxGroups {
			break
		}
		out = append(out, g)
	}
	return out
}

// match finds the key with this secret, comparing every key in constant time.
func (r *Resolver) match(secret string) *Key {
	var found *Key
	for i := range r.Keys {
		if subtle.ConstantTimeCompare([]byte(r.Keys[i].Secret), []byte(secret)) == 1 {
			found = &r.Keys[i]
		}
	}
	return found
}

// user reads the end user, whole: from the signed token when a secret is set
// (no token, no user), else from the plain headers.
func (r *Resolver) user(header func(string) string) (longhaul.User, error) {
	h := r.Headers
	if len(r.JWTSecret) > 0 {
		tok := strings.TrimSpace(header(h.UserJWT))
		if tok == "" {
			return longhaul.User{}, nil
		}
		return r.parseToken(tok)
	}
	name := header(h.UserName)
	// Open WebUI percent-encodes the name (all but spaces).
	if n, err := url.PathUnescape(name); err == nil {
		name = n
	}
	u := longhaul.User{
		ID:    strings.TrimSpace(header(h.UserID)),
		Email: strings.TrimSpace(header(h.UserEmail)),
		Name:  name,
		Role:  header(h.UserRole),
	}
	return u, nil
}

// userClaims are the claims Open WebUI signs (utils/headers.py).
type userClaims struct {
	Email string `json:"email"`
	Name  string `json:"name"`
	Role  string `json:"role"`
	jwt.RegisteredClaims
}

func (r *Resolver) parseToken(tok string) (longhaul.User, error) {
	var c userClaims
	opts := []jwt.ParserOption{
		jwt.WithValidMethods([]string{"HS256"}),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(5 * time.Second),
		// An iat in the future is refused too (utils/headers.py:20-31 of
		// Open WebUI v0.10.2 always sets iat and exp).
		jwt.WithIssuedAt(),
	}
	if r.Now != nil {
		opts = append(opts, jwt.WithTimeFunc(r.Now))
	}
	_, err := jwt.ParseWithClaims(tok, &c, func(*jwt.Token) (any, error) { return r.JWTSecret, nil }, opts...)
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return longhaul.User{}, fmt.Errorf("%w: the token has expired", ErrBadToken)
	case err != nil:
		return longhaul.User{}, fmt.Errorf("%w: %s", ErrBadToken, tokenProblem(err))
	case strings.TrimSpace(c.Subject) == "":
		return longhaul.User{}, fmt.Errorf("%w: the token names no subject", ErrBadToken)
	case c.IssuedAt == nil:
		return longhaul.User{}, fmt.Errorf("%w: the token has no issue time (iat)", ErrBadToken)
	case c.ExpiresAt.Sub(c.IssuedAt.Time) > r.maxLifetime():
		return longhaul.User{}, fmt.Errorf("%w: the token lives %s, longer than the %s allowed (LONGHAUL_OPENWEBUI_JWT_MAX_LIFETIME)",
			ErrBadToken, c.ExpiresAt.Sub(c.IssuedAt.Time), r.maxLifetime())
	}
	return longhaul.User{ID: strings.TrimSpace(c.Subject), Email: strings.TrimSpace(c.Email), Name: c.Name, Role: c.Role}, nil
}

func (r *Resolver) maxLifetime() time.Duration {
	if r.MaxTokenLifetime > 0 {
		return r.MaxTokenLifetime
	}
	return DefaultMaxTokenLifetime
}

// tokenProblem says what is wrong with a token without echoing it.
func tokenProblem(err error) string {
	switch {
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return "bad signature"
	case errors.Is(err, jwt.ErrTokenMalformed):
		return "malformed token"
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return "the token has no expiry"
	case errors.Is(err, jwt.ErrTokenNotValidYet), errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return "the token is not valid yet"
	case errors.Is(err, jwt.ErrTokenUnverifiable):
		return "unexpected signing method"
	}
	return "rejected"
}

func bound(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= maxUserField {
		return s
	}
	return strings.ToValidUTF8(s[:maxUserField], "")
}
