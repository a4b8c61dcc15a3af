package sse

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/internal/testing/ssetest"
)

// FuzzSSEFrame writes a runs-API event frame with any payload and reads it
// back as an SSE client does: one event, of the type written, whose data
// is the JSON of the payload — a payload cannot end the frame or add one.
// Written raw, as data lines, the payload comes back whole, its line ends
// read as "\n".
func FuzzSSEFrame(f *testing.F) {
	for _, s := range []string{"hello", "a\n\nevent: done\ndata: {}", "\r\n", "data: x", "\x00", "\u2028", "a\r", "\r\r\n\n"} {
		f.Add("57", s)
	}
	f.Fuzz(func(t *testing.T, id, text string) {
		if strings.ContainsAny(id, "\r\n") {
			return // ids are the stream's own numbers, see feed.Item.ID
		}
		var buf bytes.Buffer
		sw := &Writer{w: bufio.NewWriter(&buf)}
		if err := sw.FrameJSON(id, "content_delta", map[string]string{"text": text}); err != nil {
			t.Fatal(err)
		}
		if err := sw.Frame(id, "content_delta", []byte(text)); err != nil {
			t.Fatal(err)
		}
		if err := sw.Flush(); err != nil {
			t.Fatal(err)
		}
		frames, err := ssetest.ReadAll(&buf)
		if err != nil || len(frames) != 2 {
			t.Fatalf("%d frames (%v) in %q", len(frames), err, buf.String())
		}
		for _, fr := range frames {
			if fr.ID != id || fr.Event != "content_delta" {
				t.Fatalf("frame %+v, want id %q and event content_delta", fr, id)
			}
		}
		var back map[string]string
		if err := json.Unmarshal([]byte(frames[0].Data), &back); err != nil || back["text"] != string([]rune(text)) {
			t.Fatalf("data %q read back as %q (%v)", text, back["text"], err)
		}
		lines := strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(text)
		if frames[1].Data != lines {
			t.Fatalf("raw data %q read back as %q, want %q", text, frames[1].Data, lines)
		}
	})
}
