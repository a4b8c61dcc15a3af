package textcut_test

import (
	"testing"

	"github.com/longhaul-dev/longhaul/internal/textcut"
)

func TestRunes(t *testing.T) {
	tests := []struct {
		s       string
		n       int
		want    string
		wantCut bool
	}{
		{"", 3, "", false},
		{"abc", 3, "abc", false},
		{"abcd", 3, "abc", true},
		{"üüüü", 3, "üüü", true},
		{"üüü", 3, "üüü", false},
		{"a😀b", 2, "a😀", true},
		{"abc", 0, "", true},
		{"abc", -1, "", true},
		{"", 0, "", false},
	}
	for _, tt := range tests {
		got := textcut.Runes(tt.s, tt.n)
		if cut := len(got) < len(tt.s); got != tt.want || cut != tt.wantCut {
			t.Errorf("Runes(%q, %d) = %q (cut %v); want %q (cut %v)", tt.s, tt.n, got, cut, tt.want, tt.wantCut)
		}
	}
}

func TestEllipsis(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 3, "abc"},
		{"abcd", 3, "ab…"},
		{"üüüü", 3, "üü…"},
		{"word word word", 6, "word…"},
		{"ab\n\tcd", 4, "ab…"},
		{"abc", 1, "…"},
	}
	for _, tt := range tests {
		if got := textcut.Ellipsis(tt.s, tt.n); got != tt.want {
			t.Errorf("Ellipsis(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}
