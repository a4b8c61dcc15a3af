package window

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"
)

// The chat template's cost, in tokens, beside the text it wraps: what
// Llama 3.1's and Qwen's templates (as Ollama renders them) and OpenAI's
// own accounting add per message, per tool and per request.
const (
	// perMessage covers a message's header and end markers: Llama 3's
	// <|start_header_id|>role<|end_header_id|>\n\n…<|eot_id|> (5), Qwen's
	// <|im_start|>role\n…<|im_end|>\n (5), OpenAI's 3 or 4.
	perMessage = 6
	// perRequest covers the start of text and the answer's own header.
	perRequest = 8
	// toolsPreamble covers the instructions a template puts around the
	// tool list (Llama 3.1's "Given the following functions…", Qwen's
	// <tools> block and its call format), counted once when tools are
	// offered.
	toolsPreamble = 160
	// perTool covers the separators around each tool's JSON.
	perTool = 6
	// ImageTokens is what one image is counted as, whatever its size: the
	// most of the vision models Ollama serves (llava 576, gemma3 256) and
	// OpenAI's high detail for a square image (765), rounded up; low
	// detail is OpenAI's 85.
	ImageTokens    = 1024
	imageTokensLow = 85
)

// Text estimates the tokens of s under the byte-pair tokenizers of the
// models users run (Llama 3's, Qwen's, OpenAI's cl100k and o200k), on the
// high side: it splits s as their pre-tokenizers do (letters, digits
// one by one as Qwen's does, punctuation, whitespace) and gives each
// piece the most tokens those vocabularies spend on such a piece, so that
// text it has never seen (identifiers, base64, another script) is not
// under-counted. Words count as English unless s has too few of the
// commonest English words (see english). It reads s once and allocates
// nothing. It is long because it is that one pass: a case per kind of
// piece in one loop, on the hot path of every model call.
func Text(s string) int {
	// n counts everything but words of letters, which count both ways
	// until the end says which language s is in.
	n, asEnglish, asForeign := 0, 0, 0
	words, common := 0, 0
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c < utf8.RuneSelf && isLetter(c):
			j, upper, lower, shifts := i, 0, 0, 0
			prevUpper := false
			var key uint32
			for j < len(s) && s[j] < utf8.RuneSelf && isLetter(s[j]) {
				u := s[j] >= 'A' && s[j] <= 'Z'
				if u {
					upper++
				} else {
					lower++
				}
				if j > i && u != prevUpper {
					shifts++
				}
				if j-i < 4 {
					key = key<<8 | uint32(s[j]|0x20)
				}
				prevUpper = u
				j++
			}
			words++
			if j-i <= 4 && commonEnglish(key) {
				common++
			}
			asEnglish += letters(j-i, upper, lower, shifts, false)
			asForeign += letters(j-i, upper, lower, shifts, true)
			i = j
		case c >= '0' && c <= '9':
			j := i
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			// Llama 3 and OpenAI split digits in threes, Qwen one by
			// one.
			n += j - i
			i = j
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			j := i
			for j < len(s) && (s[j] == ' ' || s[j] == '\t' || s[j] == '\n' || s[j] == '\r') {
				j++
			}
			// One space before a word or a mark belongs to it; digits
			// stand alone.
			if j-i > 1 || c != ' ' || j == len(s) || (s[j] >= '0' && s[j] <= '9') {
				n++
			}
			i = j
		case c < utf8.RuneSelf:
			j := i
			for j < len(s) && s[j] < utf8.RuneSelf && !isLetter(s[j]) && !(s[j] >= '0' && s[j] <= '9') && s[j] != ' ' && s[j] != '\n' && s[j] != '\t' && s[j] != '\r' {
				j++
			}
			n += (j - i + 2) / 3
			i = j
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if !isCyrillic(r) {
				i += size
				n += runeTokens(r)
				continue
			}
			// A Cyrillic word: Llama 3's and Qwen's vocabularies hold
			// enough of them that a word costs about a token per three
			// letters (measured: internal/window's tokenizer test);
			// counted as one per two.
			l := 0
			for i < len(s) {
				r, size := utf8.DecodeRuneInString(s[i:])
				if !isCyrillic(r) {
					break
				}
				i += size
				l++
			}
			n += 1 + (l-1)/2
		}
	}
	if english(words, common) {
		return n + asEnglish
	}
	return n + asForeign
}

// letters is the estimate of a run of ASCII letters: an English word
// (lower case, capitalised, or a short acronym) is one token up to six
// letters and one more for each five after; a word of another language
// written in Latin letters (foreign: German, Dutch, Polish…), which the
// vocabularies hold few whole words of, one up to four letters and one
// for every three letters after the first; anything else (camelCase, base64, hashes) one for every
// three letters, as byte-pair vocabularies split such runs.
func letters(l, upper, lower, shifts int, foreign bool) int {
	word := upper == 0 || (upper == 1 && !(shifts > 1)) || (lower == 0 && l <= 4)
	switch {
	case word && foreign && l > 4:
		return 1 + (l-1)/3
	case word && foreign:
		return 1
	case word:
		return 1 + max(0, l-6+4)/5
	}
	return (l + 2) / 3
}

// english reports whether a text of words runs of letters, common of
// them among the commonest English words, reads as English (prose, or
// code and schemas documented in English): at least one word in
// englishShare is such a word, chosen among those that are not also
// common words of German, Dutch, French, Spanish or Polish.
func english(words, common int) bool {
	return words == 0 || common*englishShare >= words
}

// englishShare: English prose has about one such word in four, English
// code and JSON schemas one in six to ten; German and Dutch prose under
// one in fifty.
const englishShare = 16

// commonEnglish reports whether key (a word of up to four letters, lower
// case, packed a byte at a time) is one of the commonest English words.
func commonEnglish(key uint32) bool {
	switch key {
	case 't'<<16 | 'h'<<8 | 'e', 'a'<<16 | 'n'<<8 | 'd', 'f'<<16 | 'o'<<8 | 'r',
		'y'<<16 | 'o'<<8 | 'u', 'a'<<16 | 'r'<<8 | 'e', 'n'<<16 | 'o'<<8 | 't', 'b'<<16 | 'u'<<8 | 't',
		'c'<<16 | 'a'<<8 | 'n', 'i'<<16 | 't'<<8 | 's', 'h'<<16 | 'a'<<8 | 's', 'a'<<16 | 'n'<<8 | 'y',
		't'<<24 | 'h'<<16 | 'a'<<8 | 't', 'w'<<24 | 'i'<<16 | 't'<<8 | 'h', 't'<<24 | 'h'<<16 | 'i'<<8 | 's',
		'f'<<24 | 'r'<<16 | 'o'<<8 | 'm', 'y'<<24 | 'o'<<16 | 'u'<<8 | 'r', 'h'<<24 | 'a'<<16 | 'v'<<8 | 'e',
		't'<<24 | 'h'<<16 | 'e'<<8 | 'y', 'w'<<24 | 'h'<<16 | 'a'<<8 | 't', 'w'<<24 | 'h'<<16 | 'e'<<8 | 'n',
		'e'<<24 | 'a'<<16 | 'c'<<8 | 'h', 'i'<<24 | 'n'<<16 | 't'<<8 | 'o', 't'<<24 | 'h'<<16 | 'e'<<8 | 'n',
		't'<<8 | 'o', 'i'<<8 | 't', 'b'<<8 | 'e', 'b'<<8 | 'y', 'o'<<8 | 'r', 'i'<<8 | 'f', 'a'<<8 | 't',
		'a'<<8 | 's', 'o'<<8 | 'f':
		return true
	}
	return false
}

func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

// isCyrillic reports whether r is a letter of the Cyrillic block.
func isCyrillic(r rune) bool { return r >= 0x0400 && r <= 0x04FF && unicode.IsLetter(r) }

// runeTokens is the estimate of one character outside ASCII: a letter of
// an alphabet with few entries in the vocabularies, or a CJK character,
// costs up to a token; a symbol or an emoji up to two or three bytes'
// worth.
func runeTokens(r rune) int {
	switch {
	case r == utf8.RuneError:
		return 1
	case unicode.IsLetter(r) || unicode.IsMark(r) || unicode.IsNumber(r):
		return 1
	case r >= 0x1F000:
		return 3
	}
	return 2
}

// Message estimates one chat message: its text, its reasoning sent back,
// its images, its tool calls as a template renders them (JSON), and the
// template's markers.
func Message(m openai.ChatCompletionMessage) int {
	n := perMessage + Text(m.Role) + counted(m.Content) + Text(m.Name) + counted(m.ReasoningContent)
	for _, p := range m.MultiContent {
		switch {
		case p.ImageURL != nil && p.ImageURL.Detail == openai.ImageURLDetailLow:
			n += imageTokensLow
		case p.ImageURL != nil:
			n += ImageTokens
		default:
			n += counted(p.Text)
		}
	}
	for _, tc := range m.ToolCalls {
		n += perTool + Text(tc.ID) + Text(tc.Function.Name) + counted(tc.Function.Arguments) + 8
	}
	n += Text(m.ToolCallID)
	return n
}

// Tools estimates the tool definitions a request offers, as the templates
// render them: each tool's JSON, and the instructions around them.
func Tools(tools []openai.Tool) int {
	if len(tools) == 0 {
		return 0
	}
	n := toolsPreamble
	for _, t := range tools {
		n += perTool + tool(t)
	}
	return n
}

// toolWrapper is the estimate of a function tool's JSON without its name,
// description and parameters: {"type":"function","function":{"name":"",
// "description":"","parameters":…}}.
var toolWrapper = Text(`{"type":"function","function":{"name":"","description":"","parameters":}}`)

// tool estimates one tool's JSON. A function whose parameters are JSON
// already (as Longhaul's tools give them) is counted from its parts,
// without encoding it again (its description's few JSON escapes are
// within the estimate's margin); any other tool is encoded.
func tool(t openai.Tool) int {
	f := t.Function
	if f != nil && t.Type == openai.ToolTypeFunction && !f.Strict {
		var params string
		switch p := f.Parameters.(type) {
		case json.RawMessage:
			params = string(p)
		case []byte:
			params = string(p)
		case string:
			params = p
		case nil:
		default:
			params = "\x00"
		}
		if params != "\x00" {
			return toolWrapper + Text(f.Name) + counted(f.Description) + countedJSON(params)
		}
	}
	b, err := json.Marshal(t)
	if err != nil {
		return 0
	}
	return Text(string(b))
}

// Request estimates the prompt tokens of a Chat Completions request: every
// message, the tools, the response format's schema, and the template.
func Request(req openai.ChatCompletionRequest) int {
	n := perRequest + Tools(req.Tools)
	for _, m := range req.Messages {
		n += Message(m)
	}
	if rf := req.ResponseFormat; rf != nil && rf.JSONSchema != nil && rf.JSONSchema.Schema != nil {
		if b, err := json.Marshal(rf.JSONSchema.Schema); err == nil {
			n += counted(string(b)) + perTool
		}
	}
	return n
}

// Every model call of a run sends the same agent prompt and tool schemas,
// and the conversation so far, again: only what is new since the last call
// needs counting. counted keeps the estimates of long texts (memoLen bytes
// and more), up to memoBytes of them, and starts over when full.
const (
	memoLen   = 1024
	memoBytes = 32 << 20
)

var memo = struct {
	sync.Mutex
	n     map[string]int
	bytes int
}{n: map[string]int{}}

// countedJSON is the estimate of the JSON value s as a request carries it
// (encoding/json compacts a json.RawMessage), remembered whatever its
// length: the same tool schemas come with every call.
func countedJSON(s string) int {
	key := "\x00json\x00" + s
	memo.Lock()
	n, ok := memo.n[key]
	memo.Unlock()
	if ok {
		return n
	}
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err == nil {
		n = Text(b.String())
	} else {
		n = Text(s)
	}
	remember(key, n)
	return n
}

// counted is Text(s), remembered for a long s.
func counted(s string) int {
	if len(s) < memoLen {
		return Text(s)
	}
	memo.Lock()
	n, ok := memo.n[s]
	memo.Unlock()
	if ok {
		return n
	}
	n = Text(s)
	remember(strings.Clone(s), n)
	return n
}

// remember keeps the estimate n of key, starting over when the memo is
// full. The key must not share a larger buffer (a slice of a response
// body): callers pass a copy.
func remember(key string, n int) {
	memo.Lock()
	defer memo.Unlock()
	if memo.bytes+len(key) > memoBytes {
		clear(memo.n)
		memo.bytes = 0
	}
	memo.n[key] = n
	memo.bytes += len(key)
}
