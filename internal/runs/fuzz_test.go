package runs

import (
	"testing"

	"github.com/longhaul-dev/longhaul"
)

// FuzzEventID parses a Last-Event-ID (or ?after=) and checks that the id a
// stream writes for the position it names parses back to that position.
func FuzzEventID(f *testing.F) {
	for _, s := range []string{"0", "57", "57:1234", "57:1234:2", "57:0", "-1", "1:2:3:4", "1::2", "9223372036854775807", "1:2147483648", "1:5:0", "1:5:1001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		pos, ok := ParseCursor(v)
		if !ok {
			return
		}
		if pos.after < 0 || pos.bytes < 0 || (pos.bytes > 0 && (pos.attempt < 1 || pos.attempt > 1000)) {
			t.Fatalf("%q parsed to %+v", v, pos)
		}
		if pos.after == 0 && pos.bytes == 0 {
			return // the start of the stream has no id of its own
		}
		it := Item{Event: longhaul.Event{Type: longhaul.EventContentDelta}, Pos: pos}
		if pos.bytes == 0 {
			it = Item{Event: longhaul.Event{Type: longhaul.EventContent, Offset: pos.after}}
		}
		id := it.ID()
		back, ok := ParseCursor(id)
		if !ok || back.after != pos.after || back.bytes != pos.bytes || back.attempt != pos.attempt {
			t.Fatalf("%q → %+v → id %q → %+v (ok %v)", v, pos, id, back, ok)
		}
	})
}
