// Package chunk cuts a document's text into the chunks a vector store
// embeds and searches, by OpenAI's "static" chunking strategy: windows of
// at most MaxTokens tokens, each starting Overlap tokens before the end of
// the one before.
//
// Tokens are cl100k_base's (github.com/tiktoken-go/tokenizer, whose
// vocabularies are embedded, so nothing is downloaded): the encoding of
// OpenAI's embedding models (text-embedding-3-small/-large, ada-002), so a
// chunk's size is counted as the embedder counts its input. A chunk never
// splits a UTF-8 character: where a character's bytes span two tokens, the
// chunk boundary moves back to the character's first token.
package chunk

import (
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/tiktoken-go/tokenizer"
)

// The static strategy's bounds and defaults, as OpenAI documents them
// (API reference, "Vector store files" › chunking_strategy › static):
// "max_chunk_size_tokens: The maximum number of tokens in each chunk. The
// default value is 800. The minimum value is 100 and the maximum value is
// 4096." and "chunk_overlap_tokens: The number of tokens that overlap
// between chunks. The default value is 400. Note that the overlap must not
// exceed half of max_chunk_size_tokens."
// (https://platform.openai.com/docs/api-reference/vector-stores-files/createFile).
const (
	DefaultMaxTokens = 800
	DefaultOverlap   = 400
	MinMaxTokens     = 100
	MaxMaxTokens     = 4096
)

// Encoding is the tokenizer's encoding.
const Encoding = "cl100k_base"

// Strategy is the static strategy's sizes, in tokens.
type Strategy struct {
	MaxTokens int
	Overlap   int
}

// Default is OpenAI's default strategy: 800 tokens, 400 of overlap.
var Default = Strategy{MaxTokens: DefaultMaxTokens, Overlap: DefaultOverlap}

// Resolve returns the strategy of the sizes a request gave: both zero is
// Default; a zero MaxTokens with an overlap is 800 with that overlap; an
// overlap of zero with a size is no overlap (OpenAI's static strategy
// requires both fields, so a zero there is the caller's). The result is
// validated.
func Resolve(maxTokens, overlap int) (Strategy, error) {
	if maxTokens == 0 && overlap == 0 {
		return Default, nil
	}
	if maxTokens == 0 {
		maxTokens = DefaultMaxTokens
	}
	s := Strategy{MaxTokens: maxTokens, Overlap: overlap}
	return s, s.Validate()
}

// Validate checks the strategy as OpenAI does: MaxTokens from 100 to 4096,
// Overlap from 0 to half of MaxTokens.
func (s Strategy) Validate() error {
	if s.MaxTokens < MinMaxTokens || s.MaxTokens > MaxMaxTokens {
		return fmt.Errorf("max_chunk_size_tokens must be from %d to %d, not %d", MinMaxTokens, MaxMaxTokens, s.MaxTokens)
	}
	if s.Overlap < 0 {
		return fmt.Errorf("chunk_overlap_tokens must not be negative, not %d", s.Overlap)
	}
	if s.Overlap > s.MaxTokens/2 {
		return fmt.Errorf("chunk_overlap_tokens (%d) must not exceed half of max_chunk_size_tokens (%d)", s.Overlap, s.MaxTokens)
	}
	return nil
}

// Chunk is one piece of the text.
type Chunk struct {
	Text string
	// Tokens is the chunk's length in tokens.
	Tokens int
	// Start and End are the chunk's byte offsets in the text.
	Start, End int
}

var (
	codecOnce sync.Once
	codec     tokenizer.Codec
	codecErr  error
)

func getCodec() (tokenizer.Codec, error) {
	codecOnce.Do(func() { codec, codecErr = tokenizer.Get(tokenizer.Cl100kBase) })
	return codec, codecErr
}

// Count returns the number of tokens of text.
func Count(text string) (int, error) {
	c, err := getCodec()
	if err != nil {
		return 0, err
	}
	return c.Count(text)
}

// Split cuts text into chunks by s. text must be UTF-8; an empty (or blank)
// text has no chunks. Chunks that hold only white space are left out.
func Split(text string, s Strategy) ([]Chunk, int, error) {
	if err := s.Validate(); err != nil {
		return nil, 0, err
	}
	if !utf8.ValidString(text) {
		return nil, 0, fmt.Errorf("split: the text is not UTF-8")
	}
	c, err := getCodec()
	if err != nil {
		return nil, 0, err
	}
	_, toks, err := c.Encode(text)
	if err != nil {
		return nil, 0, fmt.Errorf("split: %w", err)
	}
	// off[i] is the byte offset of token i; off[n] is len(text).
	n := len(toks)
	off := make([]int, n+1)
	for i, t := range toks {
		off[i+1] = off[i] + len(t)
	}
	toks = nil
	if off[n] != len(text) {
		return nil, 0, fmt.Errorf("split: tokens cover %d bytes of %d", off[n], len(text))
	}
	// boundary moves a token index back to the first token of the
	// character its start falls in.
	boundary := func(i int) int {
		for i > 0 && i < n && !utf8.RuneStart(text[off[i]]) {
			i--
		}
		return i
	}
	var out []Chunk
	for start := 0; start < n; {
		end := n
		if start+s.MaxTokens < n {
			end = boundary(start + s.MaxTokens)
		}
		if t := text[off[start]:off[end]]; strings.TrimSpace(t) != "" {
			out = append(out, Chunk{Text: t, Tokens: end - start, Start: off[start], End: off[end]})
		}
		if end == n {
			break
		}
		next := boundary(end - s.Overlap)
		if next <= start {
			// Cannot happen with the validated sizes (a character is
			// at most 4 tokens); never loop forever if it does.
			next = end
		}
		start = next
	}
	return out, n, nil
}
