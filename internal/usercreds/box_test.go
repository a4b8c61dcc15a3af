package usercreds

import (
	"errors"
	"strings"
	"testing"
)

func TestBox(t *testing.T) {
	b, err := NewBox(strings.Repeat("ab", KeySize))
	if err != nil {
		t.Fatal(err)
	}
	sealed := b.Seal([]byte("at_secret"), aad("alice", kindOAuth, "github"))
	if strings.Contains(string(sealed), "at_secret") {
		t.Fatal("the sealed value holds the plaintext")
	}
	got, err := b.Open(sealed, aad("alice", kindOAuth, "github"))
	if err != nil || string(got) != "at_secret" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	// Moved to another user's row, it does not open.
	if _, err := b.Open(sealed, aad("bob", kindOAuth, "github")); !errors.Is(err, ErrSealed) {
		t.Errorf("another row's Open: %v, want ErrSealed", err)
	}
	other, _ := NewBox(strings.Repeat("cd", KeySize))
	if _, err := other.Open(sealed, aad("alice", kindOAuth, "github")); !errors.Is(err, ErrSealed) {
		t.Errorf("another key's Open: %v, want ErrSealed", err)
	}
	for _, k := range []string{"", "zz", strings.Repeat("ab", 16)} {
		if _, err := NewBox(k); err == nil || (k != "" && strings.Contains(err.Error(), k)) {
			t.Errorf("NewBox(%q) = %v, want an error without the key", k, err)
		}
	}
}
