package toolargs_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/internal/toolargs"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		name, raw, want string
		repaired        bool
		refused         string
	}{
		{name: "object", raw: `{"q":"x"}`, want: `{"q":"x"}`},
		{name: "none", raw: ``, want: `{}`},
		{name: "blank", raw: "  \n", want: `{}`, repaired: true},
		{name: "null", raw: `null`, want: `{}`, repaired: true},
		{name: "spaces", raw: " {\"q\":1} \n", want: `{"q":1}`, repaired: true},
		{name: "encoded twice", raw: `"{\"q\":\"x\"}"`, want: `{"q":"x"}`, repaired: true},
		{name: "fenced", raw: "```json\n{\"q\":\"x\"}\n```", want: `{"q":"x"}`, repaired: true},
		{name: "fenced bare", raw: "```{\"q\":2}```", want: `{"q":2}`, repaired: true},
		{name: "cut off", raw: `{"q": "x`, want: `{}`, refused: "not valid JSON (unexpected end of JSON input)"},
		{name: "text after", raw: `{"q":1} and more`, want: `{}`, refused: "not valid JSON"},
		{name: "two objects", raw: `{"q":1}{"q":2}`, want: `{}`, refused: "not valid JSON"},
		{name: "array", raw: `[1,2]`, want: `{}`, refused: "a JSON array"},
		{name: "string", raw: `"hello"`, want: `{}`, refused: "a JSON string"},
		{name: "number", raw: `42`, want: `{}`, refused: "a JSON number"},
		{name: "python", raw: `{'q': 'x'}`, want: `{}`, refused: "not valid JSON"},
		{name: "fenced array", raw: "```json\n[1]\n```", want: `{}`, refused: "not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := toolargs.Check(tt.raw)
			if got.Arguments != tt.want {
				t.Errorf("Arguments = %q, want %q", got.Arguments, tt.want)
			}
			if (got.Repair != "") != tt.repaired {
				t.Errorf("Repair = %q, want repaired %v", got.Repair, tt.repaired)
			}
			switch {
			case tt.refused == "" && got.Err != nil:
				t.Errorf("refused: %v", got.Err)
			case tt.refused != "" && (got.Err == nil || !strings.Contains(got.Err.Error(), tt.refused) || !errors.Is(got.Err, toolargs.ErrNotObject)):
				t.Errorf("Err = %v, want one saying %q", got.Err, tt.refused)
			}
			if w := toolargs.Wire(tt.raw); w != tt.want {
				t.Errorf("Wire = %q, want %q", w, tt.want)
			}
		})
	}
}

func TestRefusal(t *testing.T) {
	raw := `{"query": "` + strings.Repeat("a", 400)
	msg := toolargs.Refusal("web_search", raw, toolargs.Check(raw).Err)
	for _, want := range []string{"web_search", "did not run", "unexpected end of JSON input", "You sent: `{\"query\": \"aaa", "…`", "one JSON object"} {
		if !strings.Contains(msg, want) {
			t.Errorf("refusal %q lacks %q", msg, want)
		}
	}
	if len(msg) > 600 {
		t.Errorf("refusal is %d bytes long; the sent text should be cut", len(msg))
	}
}
