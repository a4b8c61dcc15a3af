// Package window knows how many tokens a model reads at once (its context
// window) and how many a request takes, so that every model call Longhaul
// makes fits before it is sent.
//
// The package exists because a model server does not refuse a request over
// its window the same way everywhere: OpenAI answers 400
// context_length_exceeded, while Ollama silently drops the oldest messages
// until the rest fits, so an engine that sends too much forgets without
// knowing. The window of a model reference comes, in this order, from the
// operator (LONGHAUL_LLM_CONTEXT, then an agent's context: frontmatter),
// from the endpoint itself (Resolver's Discover), else Default.
package window

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Default is the window assumed of a model nobody set and the endpoint did
// not tell: Ollama's own default on a GPU under 24 GiB (and without a GPU),
// the smallest window a user of the default stack meets.
const Default = 4096

// Min is the smallest window Longhaul accepts from a setting: below it no
// agent's prompt and tools fit at all.
const Min = 512

// Where a window came from, for the start banner, events and errors.
const (
	SourceSetting = "LONGHAUL_LLM_CONTEXT"
	SourceAgent   = "agent context:"
	SourceDefault = "default"
)

// Window is a model reference's effective input window.
type Window struct {
	// Tokens is the window: prompt and answer together.
	Tokens int `json:"tokens"`
	// Source says where it came from: a setting, the agent file, what the
	// endpoint reported ("ollama /api/ps", "ollama /api/show",
	// "vllm max_model_len"), or the default.
	Source string `json:"source"`
}

// Settings are the operator's windows by model reference
// (LONGHAUL_LLM_CONTEXT): "llama3.1:8b=8192,remote:gpt-4o=128000".
type Settings map[string]int

// ErrBadSetting marks an unreadable LONGHAUL_LLM_CONTEXT.
var ErrBadSetting = errors.New("bad context window setting")

// ParseSettings reads LONGHAUL_LLM_CONTEXT: comma-separated model=tokens
// pairs, where model is a model reference as written elsewhere ("model" or
// "endpoint:model"). The last '=' splits, so a reference may hold none.
func ParseSettings(s string) (Settings, error) {
	out := Settings{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		i := strings.LastIndex(item, "=")
		if i <= 0 {
			return nil, fmt.Errorf("%w: %q is not model=tokens", ErrBadSetting, item)
		}
		ref, num := strings.TrimSpace(item[:i]), strings.TrimSpace(item[i+1:])
		n, err := strconv.Atoi(num)
		if err != nil || n < Min {
			return nil, fmt.Errorf("%w: %q: tokens must be a whole number of at least %d", ErrBadSetting, item, Min)
		}
		if _, dup := out[ref]; dup {
			return nil, fmt.Errorf("%w: %q is given twice", ErrBadSetting, ref)
		}
		out[ref] = n
	}
	return out, nil
}

// Discoverer asks an endpoint for a model's window; ok is false when the
// endpoint does not say.
type Discoverer func(ctx context.Context, baseURL, apiKey, model string) (w Window, ok bool)

// Resolver finds model references' windows: the operator's setting, else
// what the endpoint reports (asked once per model and kept), else Default.
// It is safe for concurrent use.
type Resolver struct {
	settings Settings
	discover Discoverer

	// now is the clock the kept answers expire by.
	now func() time.Time

	mu    sync.Mutex
	found map[string]found
}

// found is what an endpoint reported, and until when it is kept.
type found struct {
	w     Window
	until time.Time
}

// How long a discovered window is kept: what the endpoint stated (a loaded
// runner's context, num_ctx, max_model_len) for a while, since a model may
// be reloaded with another window; a guess (the default, or an Ollama that
// has not loaded the model yet and so does not say) briefly, so the window
// the runner really gets is seen once it loads.
const (
	KeepStated = 5 * time.Minute
	KeepGuess  = 30 * time.Second
)

// NewResolver returns a Resolver over the operator's settings; discover
// may be nil (nothing is asked of endpoints).
func NewResolver(settings Settings, discover Discoverer) *Resolver {
	return &Resolver{settings: settings, discover: discover, now: time.Now, found: map[string]found{}}
}

// Target is one model as the resolver sees it: its reference as written,
// and the endpoint that serves it.
type Target struct {
	// Ref is the reference ("llama3.1:8b", "remote:gpt-4o"); Canonical is
	// the same with the endpoint spelled out when it has one, so either
	// spelling matches a setting.
	Ref, Canonical  string
	BaseURL, APIKey string
	// Model is the model id the endpoint knows.
	Model string
}

// Window is t's window. override, when positive, is the agent's own
// (context: in its file) and stands over discovery, not over the
// operator's setting.
func (r *Resolver) Window(ctx context.Context, t Target, override int) Window {
	if r == nil {
		if override > 0 {
			return Window{Tokens: override, Source: SourceAgent}
		}
		return Window{Tokens: Default, Source: SourceDefault}
	}
	for _, k := range []string{t.Ref, t.Canonical, t.Model} {
		if n, ok := r.settings[k]; ok && k != "" {
			return Window{Tokens: n, Source: SourceSetting}
		}
	}
	if override > 0 {
		return Window{Tokens: override, Source: SourceAgent}
	}
	key := t.BaseURL + "\x00" + t.Model
	now := r.now()
	r.mu.Lock()
	f, ok := r.found[key]
	r.mu.Unlock()
	if ok && now.Before(f.until) {
		return f.w
	}
	w := Window{Tokens: Default, Source: SourceDefault}
	if r.discover != nil {
		if d, ok := r.discover(ctx, t.BaseURL, t.APIKey, t.Model); ok && d.Tokens > 0 {
			w = d
		}
	}
	if ctx.Err() == nil {
		keep := KeepStated
		if w.Guessed() {
			keep = KeepGuess
		}
		r.mu.Lock()
		r.found[key] = found{w: w, until: now.Add(keep)}
		r.mu.Unlock()
	}
	return w
}

// Guessed reports whether w is an assumption rather than what the model's
// server or its operator said: the default, for an endpoint that did not
// tell or an Ollama server whose own default is not known.
func (w Window) Guessed() bool {
	return w.Source == SourceDefault || w.Source == SourceOllamaDefault
}

// Forget drops what was discovered, so the next call asks the endpoints
// again (a model reloaded with another num_ctx).
func (r *Resolver) Forget() {
	r.mu.Lock()
	clear(r.found)
	r.mu.Unlock()
}
