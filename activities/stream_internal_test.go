package activities

import (
	"testing"
)

// TestThinkTags: a <think> block at the start of streamed content is the
// reasoning, however the content is cut into pieces; the template's
// newlines around it are neither reasoning nor answer; content without a
// block, or with tags later on, is all answer.
func TestThinkTags(t *testing.T) {
	for _, tt := range []struct{ in, reasoning, text string }{
		{"<think>\nfirst a, then b\n</think>\n\nB wins.", "first a, then b", "B wins."},
		{"\n<think>a < b</think>B.", "a < b", "B."},
		{"<think>\nunfinished", "unfinished", ""},
		{"<b>plain</b> <think>x</think>", "", "<b>plain</b> <think>x</think>"},
		{"<thin", "", "<thin"},
		{"plain", "", "plain"},
	} {
		for cut := 0; cut <= len(tt.in); cut++ {
			var tags thinkTags
			r1, c1 := tags.feed(tt.in[:cut])
			r2, c2 := tags.feed(tt.in[cut:])
			r3, c3 := tags.flush()
			if r1+r2+r3 != tt.reasoning || c1+c2+c3 != tt.text {
				t.Fatalf("%q cut at %d: reasoning %q+%q+%q, text %q+%q+%q; want %q, %q", tt.in, cut, r1, r2, r3, c1, c2, c3, tt.reasoning, tt.text)
			}
		}
	}
}

// TestDecodeStructuredAfterAThought: a structured answer (plan, review,
// dispatch) that a thinking model opens with a <think> block, braces
// and all, decodes to the JSON after it.
func TestDecodeStructuredAfterAThought(t *testing.T) {
	raw, err := decodeStructured("<think>\nThe plan needs {steps}; maybe {\"a\":1}?\n</think>\n\n{\"steps\":[]}", nil, nil)
	if err != nil || string(raw) != `{"steps":[]}` {
		t.Fatalf("decodeStructured = %s, %v", raw, err)
	}
}

// TestJSONArguments: tool-call arguments as a string of JSON, as an object,
// or null.
func TestJSONArguments(t *testing.T) {
	for in, want := range map[string]string{`"{\"a\": 1}"`: `{"a": 1}`, `{"a": 1, "b": [true]}`: `{"a":1,"b":[true]}`, `null`: ``} {
		var a jsonArguments
		if err := a.UnmarshalJSON([]byte(in)); err != nil || string(a) != want {
			t.Errorf("%s: %q, %v; want %q", in, a, err, want)
		}
	}
}
