package chatapi

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul"
)

// TestRenderModelFallback: Open WebUI sees a model fallback as a status
// line naming the failed model, why and the next one; a plain client sees
// nothing of it.
func TestRenderModelFallback(t *testing.T) {
	events := []longhaul.Event{ev(longhaul.EventModelFallback, longhaul.ModelFallbackData{
		Call: "turn-1", Model: "remote:big-model", Next: "llama3.1:8b", Reason: "model endpoint answered 503: overloaded", Code: longhaul.ErrTypeModelUnavailable, Status: 503,
	})}
	got := frames(t, newRenderer("c1", "assistant", 7, true), events, false)
	want := []string{
		`{"event":{"type":"status","data":{"description":"model remote:big-model failed (503), answering with llama3.1:8b","done":false}}}`,
		chunkHead + `"choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":"stop"}]}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Open WebUI frames (-want +got):\n%s", diff)
	}
	if plain := frames(t, newRenderer("c1", "assistant", 7, false), events, false); len(plain) != 1 {
		t.Errorf("plain client got %q, want only the finish", plain)
	}
}
