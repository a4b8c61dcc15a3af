package identity

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func TestParseKeys(t *testing.T) {
	keys, err := ParseKeys([]string{"ci:sk-ci", " sk-bare ", "", "not a name:sk:x"}, []string{"owui:sk-owui"})
	if err != nil {
		t.Fatal(err)
	}
	// "not a name" is no key name, so that entry is a bare key, colons and
	// all.
	want := []Key{
		{Secret: "sk-ci"},
		{Secret: "sk-bare"},
		{Secret: "not a name:sk:x"},
		{Secret: "sk-owui", Proxy: true},
	}
	if len(keys) != len(want) {
		t.Fatalf("keys = %+v", keys)
	}
	for i, k := range keys {
		if k.Secret != want[i].Secret || k.Proxy != want[i].Proxy {
			t.Errorf("key %d = %+v, want secret %q proxy %v", i, k, want[i].Secret, want[i].Proxy)
		}
	}
	if keys[0].Name != "ci" || keys[3].Name != "owui" {
		t.Errorf("named keys = %q, %q", keys[0].Name, keys[3].Name)
	}
	// A bare key is named by a short hash of itself: stable, and not the key.
	if !strings.HasPrefix(keys[1].Name, "key-") || len(keys[1].Name) != len("key-")+8 || strings.Contains(keys[1].Name, "sk-bare") {
		t.Errorf("bare key name = %q", keys[1].Name)
	}
	again, _ := ParseKeys([]string{"sk-bare"}, nil)
	if again[0].Name != keys[1].Name {
		t.Errorf("bare key names differ: %q, %q", again[0].Name, keys[1].Name)
	}

	for _, bad := range [][2][]string{
		{{"a:sk-1", "a:sk-2"}, nil},
		{{"a:sk-1"}, {"b:sk-1"}},
		{{"a:sk-1"}, {"a:sk-2"}},
	} {
		if _, err := ParseKeys(bad[0], bad[1]); err == nil {
			t.Errorf("ParseKeys(%q, %q) accepted", bad[0], bad[1])
		}
	}
}

func headers(kv ...string) func(string) string {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h.Get
}

func TestResolve(t *testing.T) {
	keys, _ := ParseKeys([]string{"app:sk-app"}, []string{"owui:sk-owui"})
	r := &Resolver{Keys: keys, Headers: OpenWebUIHeaders}
	ann := []string{"X-OpenWebUI-User-Id", "ann", "X-OpenWebUI-User-Name", "Ann%20M%C3%BCller", "X-OpenWebUI-User-Email", "ann@example.com"}

	cases := []struct {
		name, auth string
		hdr        []string
		want       string
		err        error
	}{
		{"no key", "", ann, "", ErrMissingKey},
		{"not bearer", "Basic sk-app", nil, "", ErrMissingKey},
		{"wrong key", "Bearer sk-nope", nil, "", ErrInvalidKey},
		{"plain key is itself", "Bearer sk-app", nil, "app", nil},
		{"plain key's user headers are not trusted", "Bearer sk-app", ann, "app", nil},
		{"proxy key speaks for its user", "Bearer sk-owui", ann, "owui/ann", nil},
		{"proxy key without a user is itself", "Bearer sk-owui", nil, "owui", nil},
		{"proxy key, e-mail only", "Bearer sk-owui", []string{"X-OpenWebUI-User-Email", "bo@example.com"}, "owui/bo@example.com", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := r.Resolve(tc.auth, headers(tc.hdr...))
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if p.Name != tc.want || tc.err == nil && p.User.Key() != tc.want {
				t.Errorf("principal = %q (user key %q), want %q", p.Name, p.User.Key(), tc.want)
			}
		})
	}
	p, _ := r.Resolve("Bearer sk-owui", headers(ann...))
	if p.User.Name != "Ann Müller" || p.User.Email != "ann@example.com" || p.Key != "owui" {
		t.Errorf("user = %+v, key %q", p.User, p.Key)
	}

	// No keys: development, where the headers are trusted from anyone.
	open := &Resolver{Headers: OpenWebUIHeaders}
	if p, _ := open.Resolve("", headers(ann...)); p.Name != "ann" {
		t.Errorf("open, ann = %q", p.Name)
	}
	if p, _ := open.Resolve("Bearer whatever", headers()); p.Name != "anonymous" {
		t.Errorf("open, nobody = %q", p.Name)
	}

	// Renamed headers are read, Open WebUI's default names no longer.
	renamed := &Resolver{Keys: keys, Headers: Headers{UserID: "X-User", UserJWT: "X-User-Token"}}
	if p, _ := renamed.Resolve("Bearer sk-owui", headers("X-User", "cy", "X-OpenWebUI-User-Id", "ann")); p.Name != "owui/cy" {
		t.Errorf("renamed header = %q", p.Name)
	}
}

func sign(t *testing.T, secret string, claims jwt.MapClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSignedUserHeader(t *testing.T) {
	const secret = "owui-forward-secret-at-least-32-bytes"
	now := time.Unix(1_790_000_000, 0)
	keys, _ := ParseKeys(nil, []string{"owui:sk-owui"})
	r := &Resolver{Keys: keys, JWTSecret: []byte(secret), Headers: OpenWebUIHeaders, Now: func() time.Time { return now }}
	claims := func(exp time.Time) jwt.MapClaims {
		// What Open WebUI signs (backend/open_webui/utils/headers.py).
		return jwt.MapClaims{"sub": "u-1", "email": "ann@example.com", "name": "Ann", "role": "user",
			"iss": "open-webui", "iat": now.Add(-time.Second).Unix(), "exp": exp.Unix()}
	}
	good := sign(t, secret, claims(now.Add(5*time.Minute)))

	p, err := r.Resolve("Bearer sk-owui", headers("X-OpenWebUI-User-Jwt", good))
	if err != nil || p.Name != "owui/u-1" || p.User.Email != "ann@example.com" || p.User.Role != "user" {
		t.Fatalf("good token: %+v, %v", p, err)
	}
	if p.NoUser {
		t.Errorf("a signed user is marked as no user")
	}
	// With a secret, plain headers name nobody, and a request that names
	// nobody is marked so: the API lets it list models, nothing else.
	for name, h := range map[string]func(string) string{
		"plain headers": headers("X-OpenWebUI-User-Id", "ann"),
		"no headers":    headers(),
		"blank token":   headers("X-OpenWebUI-User-Jwt", "  "),
	} {
		if p, err := r.Resolve("Bearer sk-owui", h); err != nil || p.Name != "owui" || !p.NoUser {
			t.Errorf("%s with a secret: %+v, %v; want owui marked NoUser", name, p, err)
		}
	}
	// Without a secret too, a proxy key's request that names no user is
	// marked (as a principal it would be one for every user of an Open
	// WebUI whose forwarding is off); a plain key is never marked.
	plain := &Resolver{Keys: append(keys, Key{Name: "app", Secret: "sk-app"}), Headers: OpenWebUIHeaders}
	for name, h := range map[string]func(string) string{
		"no headers":  headers(),
		"blank id":    headers("X-OpenWebUI-User-Id", "  "),
		"only a name": headers("X-OpenWebUI-User-Name", "Ann"),
		"only a chat": headers("X-OpenWebUI-Chat-Id", "c1"),
	} {
		if p, err := plain.Resolve("Bearer sk-owui", h); err != nil || !p.NoUser {
			t.Errorf("a proxy key without a secret, %s: %+v, %v; want marked NoUser", name, p, err)
		}
	}
	if p, _ := plain.Resolve("Bearer sk-owui", headers("X-OpenWebUI-User-Id", "ann")); p.NoUser || p.Name != "owui/ann" {
		t.Errorf("a proxy key without a secret, naming ann: %+v", p)
	}
	if p, _ := plain.Resolve("Bearer sk-app", headers()); p.NoUser || p.Name != "app" {
		t.Errorf("a plain key without a secret: %+v", p)
	}
	for _, fix := range []string{"ENABLE_FORWARD_USER_INFO_HEADERS", "LONGHAUL_API_KEYS"} {
		if !strings.Contains(ErrNoUser.Error(), fix) {
			t.Errorf("ErrNoUser does not name the fix %s: %q", fix, ErrNoUser)
		}
	}
	withApp := &Resolver{Keys: append(keys, Key{Name: "app", Secret: "sk-app"}), JWTSecret: []byte(secret), Headers: OpenWebUIHeaders, Now: r.Now}
	if p, _ := withApp.Resolve("Bearer sk-app", headers()); p.NoUser || p.Name != "app" {
		t.Errorf("a plain key with a secret set: %+v", p)
	}
	noExp := claims(now)
	delete(noExp, "exp")
	none := jwt.NewWithClaims(jwt.SigningMethodNone, claims(now.Add(time.Minute)))
	unsigned, _ := none.SignedString(jwt.UnsafeAllowNoneSignatureType)
	for name, tok := range map[string]string{
		"wrong secret": sign(t, "another-secret-another-secret-0000", claims(now.Add(time.Minute))),
		"expired":      sign(t, secret, claims(now.Add(-time.Minute))),
		"no expiry":    sign(t, secret, noExp),
		"alg none":     unsigned,
		"garbage":      "not.a.token",
		"no subject":   sign(t, secret, jwt.MapClaims{"exp": now.Add(time.Minute).Unix()}),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := r.Resolve("Bearer sk-owui", headers("X-OpenWebUI-User-Jwt", tok))
			if !errors.Is(err, ErrBadToken) {
				t.Fatalf("err = %v, want ErrBadToken", err)
			}
			if strings.Contains(err.Error(), tok) {
				t.Errorf("the error echoes the token: %v", err)
			}
		})
	}
}

// TestSignedUserLifetime: a signed user token may live at most
// MaxTokenLifetime (exp - iat), and must say when it was issued; Open
// WebUI signs for 300 s (utils/headers.py:20-31).
func TestSignedUserLifetime(t *testing.T) {
	const secret = "owui-forward-secret-at-least-32-bytes"
	now := time.Unix(1_790_000_000, 0)
	keys, _ := ParseKeys(nil, []string{"owui:sk-owui"})
	token := func(iat, exp time.Duration) string {
		c := jwt.MapClaims{"sub": "u-1", "iss": "open-webui", "iat": now.Add(iat).Unix(), "exp": now.Add(exp).Unix()}
		if iat == noIAT {
			delete(c, "iat")
		}
		return sign(t, secret, c)
	}
	for _, tc := range []struct {
		name     string
		max      time.Duration
		iat, exp time.Duration
		ok       bool
	}{
		{"Open WebUI's 300 s", 0, -time.Second, 299 * time.Second, true},
		{"an hour, the default bound", 0, 0, time.Hour, true},
		{"a day", 0, -time.Minute, 24 * time.Hour, false},
		{"a year", 0, 0, 365 * 24 * time.Hour, false},
		{"issued long ago, still valid", 0, -48 * time.Hour, time.Minute, false},
		{"no iat", 0, noIAT, time.Minute, false},
		{"issued in the future", 0, time.Hour, 2 * time.Hour, false},
		{"a tighter bound", 10 * time.Minute, 0, 11 * time.Minute, false},
		{"within a tighter bound", 10 * time.Minute, 0, 5 * time.Minute, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Resolver{Keys: keys, JWTSecret: []byte(secret), MaxTokenLifetime: tc.max, Headers: OpenWebUIHeaders, Now: func() time.Time { return now }}
			p, err := r.Resolve("Bearer sk-owui", headers("X-OpenWebUI-User-Jwt", token(tc.iat, tc.exp)))
			switch {
			case tc.ok && (err != nil || p.Name != "owui/u-1"):
				t.Errorf("refused: %+v, %v", p, err)
			case !tc.ok && !errors.Is(err, ErrBadToken):
				t.Errorf("accepted: %+v, %v", p, err)
			}
		})
	}
}

// noIAT asks token for a token without iat.
const noIAT = time.Duration(-1 << 62)
