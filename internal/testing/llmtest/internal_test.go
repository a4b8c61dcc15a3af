package llmtest

import (
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestSplitWords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{in: "", want: nil},
		{in: "one", want: []string{"one"}},
		{in: "hello world", want: []string{"hello", " world"}},
		{in: "  lead", want: []string{"  lead"}},
		{in: "trail  ", want: []string{"trail  "}},
		{in: "a  b\n\nc ", want: []string{"a", "  b", "\n\nc "}},
		{in: "   ", want: []string{"   "}},
		{in: "héllo wörld", want: []string{"héllo", " wörld"}},
	}
	for _, tt := range tests {
		got := splitWords(tt.in)
		if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
			t.Errorf("splitWords(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if strings.Join(got, "") != tt.in {
			t.Errorf("splitWords(%q) does not join back", tt.in)
		}
	}
}

func TestSplitRunes(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want []string
	}{
		{in: "", n: 3, want: nil},
		{in: "abcdefg", n: 3, want: []string{"abc", "def", "g"}},
		{in: "héllo", n: 2, want: []string{"hé", "ll", "o"}},
		{in: "ab", n: 5, want: []string{"ab"}},
	}
	for _, tt := range tests {
		got := splitRunes(tt.in, tt.n)
		if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
			t.Errorf("splitRunes(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

func TestCountTokens(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{in: "", want: 0},
		{in: "   ", want: 0},
		{in: "hello", want: 1},
		{in: "Hello, world!", want: 4},
		{in: `{"a":1}`, want: 7},
		{in: "naïve café 42", want: 3},
	}
	for _, tt := range tests {
		if got := CountTokens(tt.in); got != tt.want {
			t.Errorf("CountTokens(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestOptionsMerge(t *testing.T) {
	var outer, inner options
	for _, o := range []Option{FirstByteDelay(time.Second), ChunkSize(2), Header("A", "outer"), Header("B", "outer"), CutAfter(3)} {
		o(&outer)
	}
	for _, o := range []Option{FirstByteDelay(time.Second), ChunkSize(5), Header("A", "inner"), FinishReason("length")} {
		o(&inner)
	}
	got := outer.merge(inner)
	if got.firstByteDelay != 2*time.Second || got.chunkSize != 5 || !got.hasCut || got.cutAfter != 3 || got.finishReason != "length" {
		t.Errorf("merged = %+v", got)
	}
	if want := (http.Header{"A": {"inner"}, "B": {"outer"}}); got.header.Get("A") != "inner" || got.header.Get("B") != "outer" || len(got.header) != len(want) {
		t.Errorf("merged headers = %v, want %v", got.header, want)
	}
	if outer.header.Get("A") != "outer" {
		t.Error("merge modified the outer headers")
	}
}

func TestResolveFailTimesNested(t *testing.T) {
	inner := FailTimes(1, 503, Text("ok"))
	outer := Delay(time.Second, FailTimes(1, 429, inner))
	var got []int
	for range 3 {
		a := resolve(outer.r, options{})
		if a.leaf != nil {
			got = append(got, 200)
			if !a.consume || a.opts.firstByteDelay != time.Second {
				t.Errorf("success action = %+v", a)
			}
			continue
		}
		if a.consume {
			t.Errorf("failure %d consumed the entry", a.status)
		}
		got = append(got, a.status)
	}
	if want := []int{429, 503, 200}; !reflect.DeepEqual(got, want) {
		t.Errorf("statuses = %v, want %v", got, want)
	}
}

func TestWithIsIndependent(t *testing.T) {
	base := Text("x")
	derived := base.With(ChunkSize(3))
	resolve(derived.r, options{})
	if base.Calls() != 0 || derived.Calls() != 1 {
		t.Errorf("Calls: base %d derived %d, want 0 and 1", base.Calls(), derived.Calls())
	}
	if base.r.opts.chunkSize != 0 {
		t.Error("With modified the original reply")
	}
	withHeader := base.With(Header("A", "1"))
	_ = withHeader.With(Header("A", "2"))
	if got := withHeader.r.opts.header.Values("A"); len(got) != 1 {
		t.Errorf("With shared headers with a derived reply: %v", got)
	}
}

func TestConstructorPanics(t *testing.T) {
	tests := map[string]func(){
		"JSON of a channel":      func() { JSON(make(chan int)) },
		"WithText on Status":     func() { Status(500, "").WithText("x") },
		"FailTimes of zero":      func() { FailTimes(1, 500, Reply{}) },
		"Func nil":               func() { Func(nil) },
		"With on zero":           func() { Reply{}.With() },
		"Enqueue zero":           func() { (&Server{}).Enqueue(Reply{}) },
		"non-positive dimension": func() { Embed("x", 0) },
	}
	for name, f := range tests {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("%s did not panic", name)
				}
			}()
			f()
		})
	}
}
