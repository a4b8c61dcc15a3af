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
