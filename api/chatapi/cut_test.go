package chatapi

import (
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul"
)

// TestRenderCutAnswer: an answer the model's output limit cut, or a think
// that used the whole limit, says so in a status line Open WebUI shows;
// other clients read finish_reason "length" as ever.
func TestRenderCutAnswer(t *testing.T) {
	tests := []struct {
		name, cut, text string
		notice          string
	}{
		{"cut off", longhaul.CutMaxTokens, "The first half", "cut off at the model's output limit"},
		{"all thinking", longhaul.CutThinking, "", "spent its whole output limit (max_tokens) thinking"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			events := []longhaul.Event{
				content("turn-1", tt.text),
				ev(longhaul.EventDone, longhaul.DoneData{Status: "completed", FinishReason: "length", Cut: tt.cut}),
			}
			owui := frames(t, newRenderer("c1", "assistant", 7, true), events, false)
			last := owui[len(owui)-1]
			if !strings.Contains(last, `"finish_reason":"length"`) {
				t.Errorf("last frame %s does not finish with length", last)
			}
			status := owui[len(owui)-2]
			if !strings.Contains(status, `"type":"status"`) || !strings.Contains(status, tt.notice) || !strings.Contains(status, `"done":true`) {
				t.Errorf("frame before the finish = %s, want a done status saying %q", status, tt.notice)
			}
			plain := frames(t, newRenderer("c1", "assistant", 7, false), events, false)
			for _, f := range plain {
				if strings.Contains(f, `"status"`) {
					t.Errorf("a client other than Open WebUI got a status frame: %s", f)
				}
			}
			if last := plain[len(plain)-1]; !strings.Contains(last, `"finish_reason":"length"`) {
				t.Errorf("last frame %s does not finish with length", last)
			}
		})
	}
}
