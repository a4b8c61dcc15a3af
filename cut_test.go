package longhaul_test

import (
	"testing"

	"github.com/longhaul-dev/longhaul"
)

func TestCutOf(t *testing.T) {
	tests := []struct {
		finish, text, reasoning, want string
	}{
		{"stop", "", "thought", ""},
		{"length", "half an answ", "", longhaul.CutMaxTokens},
		{"length", "half an answ", "thought", longhaul.CutMaxTokens},
		{"length", " \n", "thought", longhaul.CutThinking},
		{"length", "", "", longhaul.CutMaxTokens},
	}
	for _, tt := range tests {
		if got := longhaul.CutOf(tt.finish, tt.text, tt.reasoning); got != tt.want {
			t.Errorf("CutOf(%q, %q, %q) = %q, want %q", tt.finish, tt.text, tt.reasoning, got, tt.want)
		}
		if tt.want != "" && longhaul.CutNotice(tt.want) == "" {
			t.Errorf("CutNotice(%q) is empty", tt.want)
		}
	}
}
