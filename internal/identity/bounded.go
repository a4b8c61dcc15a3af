package identity

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Values that scope runs (a principal's name, a chat id) become Temporal
// search attribute values, parts of workflow ids and string literals of
// visibility queries. Temporal's SQL visibility keeps a keyword in 255
// characters, and on SQLite a literal with a backslash or a double quote
// never matches (see the API's quoteLiteral), nor does one that begins or
// ends with a single quote (Temporal strips every quote at either end of a
// literal), so such values are bounded here, once, for every use.

const (
	// maxPlain is the longest value Bounded keeps as it is, in bytes: a
	// proxy key's user ("<key name>/<user>") and a chat id of that user
	// ("<principal>/<chat>") stay well under 255.
	maxPlain = 80
	// hashMark separates a bounded value's readable prefix from its hash.
	// A value kept as it is never holds it, so no value kept as it is
	// equals another's bounded form.
	hashMark = "~"
	// prefixBytes bounds the readable prefix of a bounded value.
	prefixBytes = 40
)

// Bounded returns s when it can scope runs as it is: at most 80 bytes of
// valid UTF-8 with no control character, backslash, double quote or '~',
// neither beginning nor ending with a single quote. Any other value becomes
// a readable prefix of it (never beginning with a quote), '~' and 32 hex
// digits of its SHA-256 — the same for the same value, at most 73 bytes.
func Bounded(s string) string {
	if len(s) <= maxPlain && utf8.ValidString(s) && !strings.ContainsFunc(s, unsafeRune) && !strings.Contains(s, hashMark) &&
		!strings.HasPrefix(s, "'") && !strings.HasSuffix(s, "'") {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if r == utf8.RuneError || unsafeRune(r) || r == '~' || unicode.IsSpace(r) || (r == '\'' && b.Len() == 0) {
			r = '_'
		}
		if b.Len()+utf8.RuneLen(r) > prefixBytes {
			break
		}
		b.WriteRune(r)
	}
	sum := sha256.Sum256([]byte(s))
	return b.String() + hashMark + hex.EncodeToString(sum[:16])
}

// unsafeRune reports a rune a bounded value leaves out: one a visibility
// query on SQLite cannot match, or that does not print.
func unsafeRune(r rune) bool {
	return r == '\\' || r == '"' || !unicode.IsPrint(r)
}
