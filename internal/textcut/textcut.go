// Package textcut cuts text to a number of characters (runes, never in the
// middle of one), so that every place that bounds what a model, a log or a
// person reads cuts the same way. It is a pure string helper that imports
// nothing of Longhaul's, so workflow code may use it too.
package textcut

import "strings"

// Runes returns the first n runes of s; n <= 0 gives "". Whether it left
// something out is len(result) < len(s).
func Runes(s string, n int) string {
	if len(s) <= n { // fewer bytes than n: fewer runes too
		return s
	}
	i := 0
	for pos := range s {
		if i == max(n, 0) {
			return s[:pos]
		}
		i++
	}
	return s
}

// Ellipsis returns s when it has at most n runes; else its first n-1 runes,
// without trailing whitespace, and "…", so that the result is at most n
// runes long.
func Ellipsis(s string, n int) string {
	if len(Runes(s, n)) == len(s) {
		return s
	}
	return strings.TrimRightFunc(Runes(s, n-1), isSpace) + "…"
}

func isSpace(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' }
