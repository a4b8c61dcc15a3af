package contract

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
)

// TestChatRunIDKeepsOldIDs: runs started before the ids were made
// injective keep their ids, so a retried request still attaches to them.
func TestChatRunIDKeepsOldIDs(t *testing.T) {
	// Before: "chat-" + the chat key's hash (a chat key always holds a
	// '/', which was always hashed) + "-turn-<n>", then "-<message id>"
	// kept as it is when plain.
	hash := func(s string) string { sum := sha256.Sum256([]byte(s)); return hex.EncodeToString(sum[:12]) }
	const chat, msg = "owui/ann/3f9c1a2e-5b7d-4c1f-9a0e-2d6b8f4e1c3a", "0b8e7f2c-1d3a-4e5f-9a6b-7c8d9e0f1a2b"
	for _, tc := range []struct{ got, want string }{
		{ChatRunID(chat, 3, ""), "chat-" + hash(chat) + "-turn-3"},
		{ChatRunID(chat, 3, msg), "chat-" + hash(chat) + "-turn-3-" + msg},
		{ChatRunID(chat, 1, "m.1_x"), "chat-" + hash(chat) + "-turn-1-m.1_x"},
		{ChatRetakeID(ChatRunID(chat, 2, ""), 2), "chat-" + hash(chat) + "-turn-2-r2"},
	} {
		if tc.got != tc.want {
			t.Errorf("id %q, want %q as before", tc.got, tc.want)
		}
	}
}

// TestChatRunIDDoesNotCollide: the ids of two different chat turns or
// answers, retakes and spares included, are never the same.
func TestChatRunIDDoesNotCollide(t *testing.T) {
	base := ChatRunID("owui/ann/c", 1, "")
	tuples := [][3]string{
		{"owui/ann/c", "1", "r2"},                           // a message id that looks like a retake
		{"owui/ann/c", "1", "r0-" + strings.Repeat("a", 8)}, // or like a spare
		{"owui/ann/c", "1", chatHash("x/y")},                // or like a hash
		{"owui/ann/c", "1", "x/y"},                          // whose hash that is
		{"owui/ann/c-turn-1", "1", ""},                      // a chat whose id looks like a turn
		{"owui/ann/c", "1", "turn-1"},
	}
	seen := map[string]string{
		ChatRetakeID(base, 2):                           "retake 2",
		ChatSpareID(base, "r0-"+strings.Repeat("a", 8)): "a spare",
		ChatSpareID(base, strings.Repeat("a", 8)):       "another spare",
	}
	for _, tp := range tuples {
		var turn int
		fmt.Sscan(tp[1], &turn)
		id := ChatRunID(tp[0], turn, tp[2])
		if other, ok := seen[id]; ok {
			t.Errorf("%q and %s share the id %q", tp, other, id)
		}
		seen[id] = fmt.Sprintf("%q", tp)
	}
}

// FuzzChatRunID checks that ChatRunID is injective, and that no retake or
// spare of a turn asked without a message id takes the id of a run asked
// with one.
func FuzzChatRunID(f *testing.F) {
	f.Add("owui/ann/c", 1, "r2", "owui/ann/c", 1, "", 2)
	f.Add("a", 1, "turn-1", "a-turn-1", 1, "", 0)
	f.Add("owui/ann/c", 1, "0123456789abcdef01234567", "owui/ann/c", 1, "x/y", 0)
	f.Add("c", 12, "", "c", 1, "2", 0)
	f.Fuzz(func(t *testing.T, chat1 string, turn1 int, msg1, chat2 string, turn2 int, msg2 string, k int) {
		a, b := ChatRunID(chat1, turn1, msg1), ChatRunID(chat2, turn2, msg2)
		same := chat1 == chat2 && turn1 == turn2 && msg1 == msg2
		if (a == b) != same {
			t.Errorf("ChatRunID(%q, %d, %q) = %q, ChatRunID(%q, %d, %q) = %q", chat1, turn1, msg1, a, chat2, turn2, msg2, b)
		}
		if msg1 == "" {
			k = 2 + (k%31+31)%31 // 2 … 32
			for _, retake := range []string{ChatRetakeID(a, k), ChatSpareID(a, msg2)} {
				if retake == b {
					t.Errorf("a retake of ChatRunID(%q, %d, \"\") and ChatRunID(%q, %d, %q) share the id %q", chat1, turn1, chat2, turn2, msg2, b)
				}
			}
		}
	})
}
