package identity

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestBounded(t *testing.T) {
	long := strings.Repeat("u", 1000)
	kept := []string{"ann", "ann@example.com", "o'brien", "Zoë Ünal", "3f9c1a2e-5b7d-4c1f-9a0e-2d6b8f4e1c3a", strings.Repeat("a", maxPlain)}
	for _, s := range kept {
		if got := Bounded(s); got != s {
			t.Errorf("Bounded(%q) = %q, want it kept", s, got)
		}
	}
	hashed := []string{long, long[:999] + "v", strings.Repeat("a", maxPlain+1), `back\slash`, `say "hi"`, "tab\there", "a~b", "bad\xffutf8", strings.Repeat("ü", 500),
		// Temporal strips quotes at either end of a visibility literal.
		"bob'", "'bob", "' OR LonghaulUser != '", "x' OR LonghaulUser != '", "''"}
	seen := map[string]string{}
	for _, s := range hashed {
		got := Bounded(s)
		if got == s || len(got) > prefixBytes+1+32 || !utf8.ValidString(got) || strings.ContainsAny(got, "\\\"\t") ||
			strings.HasPrefix(got, "'") || strings.HasSuffix(got, "'") {
			t.Errorf("Bounded(%.40q) = %q: not bounded", s, got)
		}
		if Bounded(s) != got {
			t.Errorf("Bounded(%.40q) is not stable", s)
		}
		if other, ok := seen[got]; ok {
			t.Errorf("Bounded(%.40q) = Bounded(%.40q) = %q", s, other, got)
		}
		seen[got] = s
		// A readable prefix stays.
		if prefix, _, _ := strings.Cut(got, hashMark); prefix == "" || (prefix[0] != s[0] && s[0] != '\'') {
			t.Errorf("Bounded(%.40q) = %q: no readable prefix", s, got)
		}
	}
	// Someone who names themselves as another's bounded form is not them.
	if forged := Bounded(long); Bounded(forged) == forged {
		t.Errorf("a bounded form is kept as it is: %q", forged)
	}
}

func TestResolveBoundsLongUsers(t *testing.T) {
	keys, _ := ParseKeys(nil, []string{"owui:sk-owui"})
	r := &Resolver{Keys: keys, Headers: OpenWebUIHeaders}
	long := strings.Repeat("u", 1000)
	a, err := r.Resolve("Bearer sk-owui", headers("X-OpenWebUI-User-Id", long))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := r.Resolve("Bearer sk-owui", headers("X-OpenWebUI-User-Id", long[:999]+"v"))
	if a.Name != "owui/"+Bounded(long) || a.User.Key() != a.Name {
		t.Errorf("principal = %q (user key %q)", a.Name, a.User.Key())
	}
	// Two ids alike in their first 999 characters are two principals.
	if a.Name == b.Name {
		t.Errorf("two users share the principal %q", a.Name)
	}
	if len(a.User.ID) != maxUserField {
		t.Errorf("the user's id is kept for display as %d bytes, want %d", len(a.User.ID), maxUserField)
	}
}

// TestScopeKeysDoNotCollide: a principal's name and its chat keys join
// parts with '/', so each part escapes it: user "m/x" with chat "c9" and
// user "m" with chat "x/c9" are two chats, while ids
// with neither '/' nor '%' keep the keys they always had.
func TestScopeKeysDoNotCollide(t *testing.T) {
	keys, _ := ParseKeys(nil, []string{"owui:sk-owui"})
	r := &Resolver{Keys: keys, Headers: OpenWebUIHeaders}
	key := func(user, chat string) string {
		t.Helper()
		p, err := r.Resolve("Bearer sk-owui", headers("X-OpenWebUI-User-Id", user))
		if err != nil {
			t.Fatal(err)
		}
		return ChatKey(p.Name, chat)
	}
	for _, tc := range []struct{ a, b [2]string }{
		{[2]string{"m/x", "c9"}, [2]string{"m", "x/c9"}},
		{[2]string{"m%2Fx", "c9"}, [2]string{"m/x", "c9"}},
		{[2]string{"m", "x%2Fc9"}, [2]string{"m", "x/c9"}},
		{[2]string{"m%", "2F"}, [2]string{"m", "%2F"}},
		{[2]string{"", "m/x"}, [2]string{"m", "x"}},
	} {
		ka, kb := key(tc.a[0], tc.a[1]), key(tc.b[0], tc.b[1])
		if ka == kb {
			t.Errorf("user %q chat %q and user %q chat %q share the chat key %q", tc.a[0], tc.a[1], tc.b[0], tc.b[1], ka)
		}
	}
	// Ids without '/' or '%' keep their keys: runs started before still
	// attach and list.
	for _, tc := range []struct{ user, chat, want string }{
		{"ann", "c-1", "owui/ann/c-1"},
		{"ann@example.com", "3f9c1a2e-5b7d-4c1f-9a0e-2d6b8f4e1c3a", "owui/ann@example.com/3f9c1a2e-5b7d-4c1f-9a0e-2d6b8f4e1c3a"},
		{"ann", strings.Repeat("c", 100), "owui/ann/" + Bounded(strings.Repeat("c", 100))},
	} {
		if got := key(tc.user, tc.chat); got != tc.want {
			t.Errorf("user %q chat %q: key %q, want %q as before", tc.user, tc.chat, got, tc.want)
		}
	}
	// The client reads its chat ids back as it sent them.
	for _, chat := range []string{"x/c9", "50%", "%2F", "plain"} {
		if got := ClientChatID("owui/m", key("m", chat)); got != chat {
			t.Errorf("ClientChatID of chat %q = %q", chat, got)
		}
	}
}

// FuzzScopeKeys checks that the chat keys of two different (user, chat)
// pairs behind one proxy key never meet, and that a part reads back as the
// value it was made of unless it had to be hashed.
func FuzzScopeKeys(f *testing.F) {
	f.Add("m/x", "c9", "m", "x/c9")
	f.Add("m%2Fx", "c9", "m/x", "c9")
	f.Add("", "m/x", "m", "x")
	f.Add("a~b", "c", "a_b", "c")
	f.Add(strings.Repeat("u", 100), "%", strings.Repeat("u", 99), "u/%")
	keys, _ := ParseKeys(nil, []string{"owui:sk-owui"})
	r := &Resolver{Keys: keys, Headers: OpenWebUIHeaders}
	f.Fuzz(func(t *testing.T, user1, chat1, user2, chat2 string) {
		k1, ok1 := fuzzChatKey(r, user1, chat1)
		k2, ok2 := fuzzChatKey(r, user2, chat2)
		if !ok1 || !ok2 {
			return
		}
		same := strings.TrimSpace(user1) == strings.TrimSpace(user2) && chat1 == chat2
		if k1 == k2 && !same {
			t.Errorf("user %q chat %q and user %q chat %q share the chat key %q", user1, chat1, user2, chat2, k1)
		}
		if k1 != k2 && same {
			t.Errorf("one chat has two keys: %q, %q", k1, k2)
		}
		for _, s := range []string{user1, chat1} {
			p := Part(s)
			if strings.Contains(p, "/") {
				t.Errorf("Part(%q) = %q holds the separator", s, p)
			}
			if back, ok := UnescapePart(p); ok && back != s {
				t.Errorf("Part(%q) = %q reads back as %q", s, p, back)
			} else if !ok && !strings.Contains(p, hashMark) {
				t.Errorf("Part(%q) = %q does not read back", s, p)
			}
		}
	})
}

// fuzzChatKey is the chat key of user's chat behind the proxy key owui, as
// the API makes it; false when the request would be refused.
func fuzzChatKey(r *Resolver, user, chat string) (string, bool) {
	p, err := r.Resolve("Bearer sk-owui", func(h string) string {
		if h == r.Headers.UserID {
			return user
		}
		return ""
	})
	if err != nil {
		return "", false
	}
	return ChatKey(p.Name, chat), true
}
