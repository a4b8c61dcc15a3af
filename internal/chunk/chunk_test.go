package chunk_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/longhaul-dev/longhaul/internal/chunk"
)

func TestResolve(t *testing.T) {
	for _, tc := range []struct {
		max, overlap int
		want         chunk.Strategy
		err          string
	}{
		{0, 0, chunk.Strategy{MaxTokens: 800, Overlap: 400}, ""},
		{100, 50, chunk.Strategy{MaxTokens: 100, Overlap: 50}, ""},
		{4096, 2048, chunk.Strategy{MaxTokens: 4096, Overlap: 2048}, ""},
		{1000, 0, chunk.Strategy{MaxTokens: 1000}, ""},
		{0, 300, chunk.Strategy{MaxTokens: 800, Overlap: 300}, ""},
		{99, 0, chunk.Strategy{}, "max_chunk_size_tokens must be from 100 to 4096, not 99"},
		{4097, 0, chunk.Strategy{}, "max_chunk_size_tokens must be from 100 to 4096, not 4097"},
		{101, 51, chunk.Strategy{}, "chunk_overlap_tokens (51) must not exceed half of max_chunk_size_tokens (101)"},
		{0, 401, chunk.Strategy{}, "must not exceed half"},
		{800, -1, chunk.Strategy{}, "must not be negative"},
	} {
		got, err := chunk.Resolve(tc.max, tc.overlap)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Resolve(%d, %d) error %v, want %q", tc.max, tc.overlap, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Resolve(%d, %d) = %+v, %v; want %+v", tc.max, tc.overlap, got, err, tc.want)
		}
	}
}

// prose is n sentences of varied words.
func prose(n int) string {
	words := strings.Fields("the keeper of the northern light wrote each evening about ships storms tides and the long silence of winter nights on the cape")
	var b strings.Builder
	for i := range n {
		for j := range 12 {
			b.WriteString(words[(i*7+j*3)%len(words)])
			b.WriteByte(' ')
		}
		b.WriteString("end.\n")
	}
	return b.String()
}

// check verifies chunks of text by s: each within the size, valid UTF-8,
// in order, overlapping as asked, together covering the text.
func check(t *testing.T, text string, s chunk.Strategy, chunks []chunk.Chunk, total int) {
	t.Helper()
	if len(chunks) == 0 {
		t.Fatal("no chunks")
	}
	if chunks[0].Start != 0 || chunks[len(chunks)-1].End != len(text) {
		t.Errorf("chunks cover %d..%d of %d bytes", chunks[0].Start, chunks[len(chunks)-1].End, len(text))
	}
	sum := 0
	for i, c := range chunks {
		if c.Tokens > s.MaxTokens || c.Tokens <= 0 {
			t.Errorf("chunk %d has %d tokens, max %d", i, c.Tokens, s.MaxTokens)
		}
		if !utf8.ValidString(c.Text) || c.Text != text[c.Start:c.End] {
			t.Errorf("chunk %d is not the valid UTF-8 text at %d..%d", i, c.Start, c.End)
		}
		if i > 0 {
			p := chunks[i-1]
			if c.Start <= p.Start || c.Start > p.End {
				t.Errorf("chunk %d starts at %d, after %d..%d", i, c.Start, p.Start, p.End)
			}
			if s.Overlap == 0 && c.Start != p.End {
				t.Errorf("chunk %d starts at %d, want %d (no overlap)", i, c.Start, p.End)
			}
			if s.Overlap > 0 && c.Start >= p.End {
				t.Errorf("chunk %d does not overlap chunk %d", i, i-1)
			}
		}
		sum += c.Tokens
	}
	if s.Overlap == 0 && sum != total {
		t.Errorf("chunks hold %d tokens, the text %d", sum, total)
	}
}

func TestSplit(t *testing.T) {
	text := prose(400)
	total, err := chunk.Count(text)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []chunk.Strategy{chunk.Default, {MaxTokens: 100, Overlap: 50}, {MaxTokens: 100}, {MaxTokens: 4096, Overlap: 2048}} {
		chunks, n, err := chunk.Split(text, s)
		if err != nil {
			t.Fatal(err)
		}
		if n != total {
			t.Errorf("Split counted %d tokens, Count %d", n, total)
		}
		check(t, text, s, chunks, total)
		// Each window but the last is full, and starts MaxTokens-Overlap
		// tokens after the one before: the count follows.
		step := s.MaxTokens - s.Overlap
		want := 1
		if total > s.MaxTokens {
			want = 1 + (total-s.MaxTokens+step-1)/step
		}
		if len(chunks) != want {
			t.Errorf("%+v: %d chunks of %d tokens, want %d", s, len(chunks), total, want)
		}
		for _, c := range chunks[:len(chunks)-1] {
			if c.Tokens != s.MaxTokens {
				t.Errorf("%+v: an inner chunk of %d tokens", s, c.Tokens)
			}
		}
	}
}

// TestSplitRunes: text whose characters take several tokens each is cut
// between characters only.
func TestSplitRunes(t *testing.T) {
	text := strings.Repeat("🦀龍𝔘ü ", 500) + strings.Repeat("😀", 300)
	total, _ := chunk.Count(text)
	for _, s := range []chunk.Strategy{{MaxTokens: 101, Overlap: 50}, {MaxTokens: 103}, {MaxTokens: 100, Overlap: 37}} {
		chunks, _, err := chunk.Split(text, s)
		if err != nil {
			t.Fatal(err)
		}
		check(t, text, s, chunks, total)
	}
}

func TestSplitEdges(t *testing.T) {
	if c, n, err := chunk.Split("", chunk.Default); err != nil || len(c) != 0 || n != 0 {
		t.Errorf("empty: %v %d %v", c, n, err)
	}
	if c, _, err := chunk.Split(" \n\n ", chunk.Default); err != nil || len(c) != 0 {
		t.Errorf("blank: %v %v", c, err)
	}
	if c, _, err := chunk.Split("short text", chunk.Default); err != nil || len(c) != 1 || c[0].Text != "short text" || c[0].Tokens != 2 {
		t.Errorf("short: %+v %v", c, err)
	}
	if _, _, err := chunk.Split("a\xffb", chunk.Default); err == nil {
		t.Error("invalid UTF-8 split")
	}
	if _, _, err := chunk.Split("abc", chunk.Strategy{MaxTokens: 50}); err == nil {
		t.Error("invalid strategy accepted")
	}
}

func BenchmarkSplit(b *testing.B) {
	text := prose(20000)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, _, err := chunk.Split(text, chunk.Default); err != nil {
			b.Fatal(err)
		}
	}
}
