package runs

import (
	"math"
	"strconv"
	"strings"

	"github.com/longhaul-dev/longhaul"
)

// Cursor is how far one follower has read a run: every durable event up to
// after, and bytes of the text of the call running after it.
type Cursor struct {
	after   int64
	call    string
	attempt int
	bytes   int
	// status is the last tool progress delivered (feed sequence).
	status int64
}

// Item is what a follower reads next: a durable event (Offset > 0), or an
// ephemeral one — content_delta (data: longhaul.Delta), content_reset or
// tool_status. Pos is the follower's cursor after it.
type Item struct {
	longhaul.Event
	Pos Cursor
}

// After is the cursor of a follower that has read every durable event up
// to offset after, and nothing of the text of the call running after it.
func After(after int64) Cursor { return Cursor{after: after} }

// ParseCursor reads an event id, as ID writes it: "57", "57:1234" or
// "57:1234:2".
func ParseCursor(v string) (Cursor, bool) {
	parts := strings.Split(v, ":")
	if len(parts) > 3 {
		return Cursor{}, false
	}
	var n [3]int64
	for i, p := range parts {
		x, err := strconv.ParseInt(p, 10, 64)
		if err != nil || x < 0 || (i == 1 && x > math.MaxInt32) || (i == 2 && (x < 1 || x > 1000)) {
			return Cursor{}, false
		}
		n[i] = x
	}
	pos := Cursor{after: n[0], bytes: int(n[1])}
	if pos.bytes > 0 {
		pos.attempt = max(int(n[2]), 1)
	}
	return pos, true
}

// ID is the SSE id of an item: the offset of a durable event, or the
// position in the running call's text of an ephemeral one; empty for tool
// progress, which is not resumed. ParseCursor reads it back.
func (it Item) ID() string {
	switch {
	case it.Offset > 0:
		return strconv.FormatInt(it.Offset, 10)
	case it.Type == longhaul.EventToolStatus:
		return ""
	}
	id := strconv.FormatInt(it.Pos.after, 10) + ":" + strconv.Itoa(it.Pos.bytes)
	if it.Pos.attempt > 1 {
		id += ":" + strconv.Itoa(it.Pos.attempt)
	}
	return id
}

// Offset is the offset of the last durable event the cursor has read.
func (c Cursor) Offset() int64 { return c.after }
