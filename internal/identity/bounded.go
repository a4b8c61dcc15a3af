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

// partEscaper percent-encodes the separator of scope keys and the escape
// character itself, and nothing else.
var (
	partEscaper   = strings.NewReplacer("%", "%25", "/", "%2F")
	partUnescaper = strings.NewReplacer("%25", "%", "%2F", "/")
)

// Part returns s as one part of a scope key that joins parts with '/' (a
// principal's name "<key name>/<user>", a chat key "<principal>/<chat>"):
// '%' and '/' percent-encoded, then Bounded. Parts never hold '/', so a
// key splits back into its parts one way only, and two different tuples
// of parts never make the same key: user "m/x" with chat "c9" and user "m"
// with chat "x/c9" are "m%2Fx/c9" and "m/x%2Fc9". A value with neither
// character is what Bounded makes of it, as before the escaping, so scopes
// named earlier stay the same.
func Part(s string) string {
	return Bounded(partEscaper.Replace(s))
}

// UnescapePart returns the value Part made p of, and true; or p and false
// when p is a bounded value's prefix and hash, which cannot be turned back.
func UnescapePart(p string) (string, bool) {
	if strings.Contains(p, hashMark) {
		return p, false
	}
	return partUnescaper.Replace(p), true
}

// ChatKey is the key of a principal's chat: the principal's name, '/' and
// the chat id as a Part.
func ChatKey(principal, chat string) string {
	return principal + "/" + Part(chat)
}

// ClientChatID is the chat id a client knows the chat of key by, key being
// one of principal's chat keys: the id it sent, or its bounded form when
// that was too long or unusual to keep.
func ClientChatID(principal, key string) string {
	id, _ := UnescapePart(strings.TrimPrefix(key, principal+"/"))
	return id
}
