package identity

import (
	"slices"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func TestParseKeyRoles(t *testing.T) {
	keys, err := ParseKeys([]string{"ci:sk-ci:role=admin", "bot:sk:with:colons", "sk-bare:role=ops", "odd:sk-x:role=bad role"}, []string{"owui:sk-owui"})
	if err != nil {
		t.Fatal(err)
	}
	want := []Key{
		{Name: "ci", Secret: "sk-ci", Role: "admin"},
		{Name: "bot", Secret: "sk:with:colons"},
		{Secret: "sk-bare", Role: "ops"},
		// Not a role's form: the suffix is part of the secret.
		{Name: "odd", Secret: "sk-x:role=bad role"},
		{Name: "owui", Secret: "sk-owui", Proxy: true},
	}
	for i, k := range keys {
		w := want[i]
		if k.Secret != w.Secret || k.Role != w.Role || k.Proxy != w.Proxy || (w.Name != "" && k.Name != w.Name) {
			t.Errorf("key %d = %+v, want %+v", i, k, w)
		}
	}
	if _, err := ParseKeys(nil, []string{"owui:sk-owui:role=admin"}); err == nil {
		t.Error("a proxy key with a role was accepted")
	}
}

func TestResolveRoleAndGroups(t *testing.T) {
	const secret = "owui-forward-secret-at-least-32-bytes"
	now := time.Unix(1_790_000_000, 0)
	keys, _ := ParseKeys([]string{"ci:sk-ci:role=admin"}, []string{"owui:sk-owui"})
	h := OpenWebUIHeaders
	h.UserGroups = "X-Longhaul-User-Groups"
	plain := &Resolver{Keys: keys, Headers: h}
	signed := &Resolver{Keys: keys, Headers: h, JWTSecret: []byte(secret), Now: func() time.Time { return now }}
	open := &Resolver{Headers: h}
	openSigned := &Resolver{Headers: h, JWTSecret: []byte(secret), Now: func() time.Time { return now }}
	tok := sign(t, secret, jwt.MapClaims{"sub": "u-1", "email": "ann@example.com", "name": "Ann", "role": "admin",
		"iss": "open-webui", "iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix()})
	groups := "media, film,,media , " // repeats and blanks dropped
	tests := []struct {
		name       string
		r          *Resolver
		auth       string
		hdr        func(string) string
		role       string
		wantGroups []string
	}{
		{"API key with a role; groups header ignored", plain, "Bearer sk-ci", headers("X-Longhaul-User-Groups", groups, "X-OpenWebUI-User-Role", "user"), "admin", nil},
		{"proxy key, plain headers", plain, "Bearer sk-owui", headers("X-OpenWebUI-User-Id", "u-1", "X-OpenWebUI-User-Role", "user", "X-Longhaul-User-Groups", groups), "user", []string{"media", "film"}},
		{"proxy key, signed user", signed, "Bearer sk-owui", headers("X-OpenWebUI-User-Jwt", tok, "X-OpenWebUI-User-Role", "user", "X-Longhaul-User-Groups", groups), "admin", []string{"media", "film"}},
		{"no keys (development)", open, "", headers("X-OpenWebUI-User-Id", "u-1", "X-Longhaul-User-Groups", "media"), "", []string{"media"}},
		{"no keys but a signed header: groups not trusted", openSigned, "", headers("X-OpenWebUI-User-Jwt", tok, "X-Longhaul-User-Groups", "media"), "admin", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := tt.r.Resolve(tt.auth, tt.hdr)
			if err != nil {
				t.Fatal(err)
			}
			if p.User.Role != tt.role || !slices.Equal(p.User.Groups, tt.wantGroups) {
				t.Errorf("role %q groups %q, want %q %q", p.User.Role, p.User.Groups, tt.role, tt.wantGroups)
			}
		})
	}
}

func TestParseGroupsBounds(t *testing.T) {
	var many []byte
	for i := range 100 {
		many = append(many, []byte("g"+string(rune('a'+i%26))+string(rune('a'+i/26))+",")...)
	}
	if got := ParseGroups(string(many)); len(got) != maxGroups {
		t.Errorf("%d groups kept, want %d", len(got), maxGroups)
	}
	long := string(make([]byte, maxGroupBytes+1))
	if got := ParseGroups("a," + long); !slices.Equal(got, []string{"a"}) {
		t.Errorf("a too long group was kept: %d groups", len(got))
	}
}
