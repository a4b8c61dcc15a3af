package window_test

import (
	"os"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/internal/window"
)

// benchText is about 16,000 characters of the kinds of text a model call
// carries: English docs, German and Chinese prose, code.
func benchText(b testing.TB) string {
	var sb strings.Builder
	for _, f := range []string{"../../docs/deploy.md", "testdata/corpus/de.txt", "testdata/corpus/zh.txt", "testdata/corpus/code.py"} {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		sb.Write(data)
	}
	s := sb.String()
	for len(s) < 16000 {
		s += s
	}
	return s[:16000]
}

func BenchmarkText(b *testing.B) {
	s := benchText(b)
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		window.Text(s)
	}
}

func TestTextAllocatesNothing(t *testing.T) {
	s := benchText(t)
	if n := testing.AllocsPerRun(10, func() { window.Text(s) }); n != 0 {
		t.Errorf("Text allocates %v times per call, want none", n)
	}
}

func TestTextEdges(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int
	}{
		{"", 0},
		{"the cat", 2},
		{" hello the world", 3},
		// Without a common English word, long words count as another
		// language's: about one token per three letters.
		{"hello", 2},
		{"Donaudampfschifffahrtsgesellschaft", 12},
		{"12345", 5}, // Qwen splits digits one by one
		{"\xff\xfe", 2},
	} {
		if got := window.Text(tt.in); got != tt.want {
			t.Errorf("Text(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}
