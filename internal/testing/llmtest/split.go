package llmtest

import (
	"strings"
	"unicode"
)

// This file splits a reply's text into the pieces its chunks carry.

// splitWords splits s into pieces of one word each, every piece carrying the
// whitespace before its word; leading whitespace goes with the first word and
// trailing whitespace with the last. Joining the pieces gives s back.
func splitWords(s string) []string {
	var parts []string
	start := 0
	sawWord := false
	prevSpace := false
	for i, c := range s {
		space := unicode.IsSpace(c)
		if space && !prevSpace && sawWord && i > start {
			parts = append(parts, s[start:i])
			start = i
			sawWord = false
		}
		if !space {
			sawWord = true
		}
		prevSpace = space
	}
	if start < len(s) {
		if !sawWord && len(parts) > 0 {
			parts[len(parts)-1] += s[start:]
		} else {
			parts = append(parts, s[start:])
		}
	}
	return parts
}

// splitRunes splits s into pieces of n runes (the last may be shorter).
// Joining the pieces gives s back.
func splitRunes(s string, n int) []string {
	var parts []string
	var b strings.Builder
	count := 0
	for _, c := range s {
		b.WriteRune(c)
		count++
		if count == n {
			parts = append(parts, b.String())
			b.Reset()
			count = 0
		}
	}
	if b.Len() > 0 {
		parts = append(parts, b.String())
	}
	return parts
}
