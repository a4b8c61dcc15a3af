// Package toolargs checks a tool call's arguments before anything runs or
// sends them: they must be one JSON object. A model (through a server's
// tool parser, or a gateway) may write anything else, and a call whose
// arguments are not an object, sent back in a later request's history, is
// refused by the server for good: Ollama answers 400 "invalid tool call
// arguments" (ollama v0.32.15 openai/openai.go:772-781,
// FromCompletionToolCall unmarshals them into an ordered map, api/types.go:293)
// and vLLM refuses to render the history. So the same check runs where a
// call is run (its result tells the model what it sent and why nothing
// ran) and where a history is sent (the call goes out repaired, or with
// empty arguments).
package toolargs

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Checked is what became of a call's arguments.
type Checked struct {
	// Arguments is one JSON object: the arguments as sent, repaired, or
	// "{}" when they were refused.
	Arguments string
	// Repair says what was repaired; empty when the arguments were sent
	// as they are (or refused).
	Repair string
	// Err says why the arguments were refused; nil when they are usable.
	Err error
}

// Empty is the arguments of a call that has none, or whose arguments were
// refused.
const Empty = "{}"

// ErrNotObject is the cause of every refusal.
var ErrNotObject = errors.New("tool call arguments are not a JSON object")

// Check checks raw, a call's arguments as the model sent them. Only safe
// repairs are made, none of which guesses at a value: no arguments (empty
// text or null) become {}, an object sent as a JSON string (encoded twice)
// is decoded once, and a Markdown code fence around an object is dropped.
// Anything else that is not one JSON object is refused.
func Check(raw string) Checked {
	s := strings.TrimSpace(raw)
	switch {
	case s == "":
		if raw == "" {
			return Checked{Arguments: Empty}
		}
		return Checked{Arguments: Empty, Repair: "blank arguments read as none"}
	case s == "null":
		return Checked{Arguments: Empty, Repair: "null arguments read as none"}
	}
	if isObject(s) {
		if s != raw {
			return Checked{Arguments: s, Repair: "white space around the object dropped"}
		}
		return Checked{Arguments: raw}
	}
	var inner string
	if json.Unmarshal([]byte(s), &inner) == nil && isObject(strings.TrimSpace(inner)) {
		return Checked{Arguments: strings.TrimSpace(inner), Repair: "an object sent as a JSON string decoded"}
	}
	if body, ok := unfence(s); ok && isObject(body) {
		return Checked{Arguments: body, Repair: "a Markdown code fence around the object dropped"}
	}
	return Checked{Arguments: Empty, Err: fmt.Errorf("%w: %s", ErrNotObject, why(s))}
}

// Wire is the arguments a history sends for a call: what Check makes of
// them, so a refused call goes out with none.
func Wire(raw string) string {
	return Check(raw).Arguments
}

// isObject reports whether s is exactly one JSON object.
func isObject(s string) bool {
	return strings.HasPrefix(s, "{") && json.Valid([]byte(s))
}

// unfence is the body of a Markdown code fence (```json … ```).
func unfence(s string) (string, bool) {
	if !strings.HasPrefix(s, "```") || !strings.HasSuffix(s, "```") || len(s) < 6 {
		return "", false
	}
	body := strings.TrimSuffix(strings.TrimPrefix(s, "```"), "```")
	// The fence's info string (json) ends at the first line break.
	if i := strings.IndexByte(body, '\n'); i >= 0 && !strings.Contains(body[:i], "{") {
		body = body[i+1:]
	}
	return strings.TrimSpace(body), true
}

// why says what is wrong with s, which is not one JSON object.
func why(s string) string {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return "not valid JSON (" + err.Error() + ")"
	}
	switch v.(type) {
	case []any:
		return "a JSON array, not an object"
	case string:
		return "a JSON string, not an object"
	case float64:
		return "a JSON number, not an object"
	case bool:
		return "a JSON boolean, not an object"
	}
	return "not a JSON object"
}

// Refusal is what the model reads as the result of a call whose arguments
// were refused: what it sent (cut to a few hundred characters) and why,
// and that nothing ran.
func Refusal(tool, raw string, err error) string {
	return fmt.Sprintf("the arguments of this call to %s were refused and the tool did not run: %v. You sent: %s. Call it again with its arguments as one JSON object that matches the tool's parameters.",
		tool, err, Quote(raw, 300))
}

// Quote is s cut to at most n characters (an ellipsis marks the cut), in
// backquotes.
func Quote(s string, n int) string {
	if utf8.RuneCountInString(s) > n {
		s = string([]rune(s)[:n]) + "…"
	}
	return "`" + s + "`"
}
