package window

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestParseSettings(t *testing.T) {
	got, err := ParseSettings(" llama3.1:8b=16384, remote:gpt-4o=128000 ,")
	if err != nil || got["llama3.1:8b"] != 16384 || got["remote:gpt-4o"] != 128000 || len(got) != 2 {
		t.Fatalf("ParseSettings = %v, %v", got, err)
	}
	for _, bad := range []string{"llama3.1:8b", "=4096", "m=lots", "m=100", "m=4096,m=8192"} {
		if _, err := ParseSettings(bad); !errors.Is(err, ErrBadSetting) {
			t.Errorf("ParseSettings(%q) = %v; want ErrBadSetting", bad, err)
		}
	}
}

func TestResolver(t *testing.T) {
	asked := 0
	reply := Window{Tokens: 8192, Source: SourceOllamaShow}
	r := NewResolver(Settings{"remote:gpt-4o": 128000}, func(context.Context, string, string, string) (Window, bool) {
		asked++
		return reply, reply.Tokens > 0
	})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r.now = func() time.Time { return now }
	ctx := context.Background()
	ollama := Target{Ref: "llama3.1:8b", Canonical: "llama3.1:8b", BaseURL: "http://o/v1", Model: "llama3.1:8b"}

	// The operator's setting stands over everything, by either spelling.
	if w := r.Window(ctx, Target{Ref: "gpt-4o", Canonical: "remote:gpt-4o", Model: "gpt-4o"}, 4096); w.Tokens != 128000 || w.Source != SourceSetting {
		t.Errorf("set window = %+v", w)
	}
	// An agent's context: stands over discovery.
	if w := r.Window(ctx, ollama, 2048); w.Tokens != 2048 || w.Source != SourceAgent || asked != 0 {
		t.Errorf("agent window = %+v (asked %d)", w, asked)
	}
	// Discovery, asked once and kept while it is stated.
	for range 2 {
		if w := r.Window(ctx, ollama, 0); w != reply {
			t.Errorf("discovered window = %+v", w)
		}
	}
	if asked != 1 {
		t.Errorf("asked %d times; want once", asked)
	}
	now = now.Add(KeepStated + time.Second)
	r.Window(ctx, ollama, 0)
	if asked != 2 {
		t.Errorf("asked %d times after %s; want again", asked, KeepStated)
	}
	// An endpoint that does not say: the default, asked again soon.
	reply = Window{}
	other := Target{Ref: "m", BaseURL: "http://x/v1", Model: "m"}
	if w := r.Window(ctx, other, 0); w.Tokens != Default || !w.Guessed() {
		t.Errorf("undiscovered window = %+v", w)
	}
	now = now.Add(KeepGuess + time.Second)
	r.Window(ctx, other, 0)
	if asked != 4 {
		t.Errorf("asked %d times; want a guess asked again after %s", asked, KeepGuess)
	}
	// No resolver: the default.
	var none *Resolver
	if w := none.Window(ctx, ollama, 0); w.Tokens != Default {
		t.Errorf("nil resolver = %+v", w)
	}
}
