// Package endpoints resolves model references to the OpenAI-compatible
// endpoints that serve them.
//
// The package exists because a model reference is written in several places
// (LONGHAUL_LLM_MODEL, an agent's model: and models:, a skill's model:) and
// read in two (the start-up check and the model activity), and all of them
// must agree on one rule. Beside the default endpoint (LONGHAUL_LLM_BASE_URL)
// an operator names more in LONGHAUL_LLM_ENDPOINTS ("remote=https://…/v1,…")
// with their keys in LONGHAUL_LLM_KEYS ("remote=sk-…,…").
//
// A reference is "model" (the default endpoint) or "endpoint:model". Model
// ids may have a ':' of their own (Ollama's "llama3.1:8b"), so:
//
//   - "endpoint:model" names an endpoint only when the part before the first
//     ':' is a configured endpoint name: "remote:gpt-4o" with remote
//     configured is gpt-4o on remote.
//   - Otherwise, a reference whose part after the first ':' reads as an
//     Ollama tag (a size or version such as "8b" or "v1.5", or a common word
//     tag such as "latest",
//     "instruct" or "mini": "llama3.1:8b", "nomic-embed-text:v1.5",
//     "mistral:instruct", "mistral:latest") is a model id of the default
//     endpoint.
//   - Any other "name:model" names an endpoint that is not configured: a
//     start-up error (ErrUnknownEndpoint), so a typo in an endpoint name
//     never silently sends a request to the default endpoint.
//   - A leading ':' names the default endpoint explicitly, for a model id of
//     its own whose tag reads otherwise (":my-model:custom").
package endpoints

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/internal/redact"
)

// Endpoint is one OpenAI-compatible endpoint.
type Endpoint struct {
	// Name is the endpoint's name in references; empty for the default.
	Name    string
	BaseURL string
	// APIKey is its bearer key (never logged).
	APIKey string
}

// String names the endpoint for messages: its name, or "default".
func (e Endpoint) String() string {
	if e.Name == "" {
		return "default"
	}
	return e.Name
}

// ErrUnknownEndpoint marks a reference to an endpoint that is not configured.
var ErrUnknownEndpoint = errors.New("unknown model endpoint")

// reName is what an endpoint name may be.
var reName = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

// Parse reads LONGHAUL_LLM_ENDPOINTS ("name=url,…") and LONGHAUL_LLM_KEYS
// ("name=key,…") into the named endpoints, in the order written. A name
// given twice, a name that is not [a-z][a-z0-9_-]*, a URL that is not
// http(s), and a key for an endpoint not in the list are errors; messages
// never quote a key.
func Parse(list, keys string) ([]Endpoint, error) {
	var (
		out  []Endpoint
		errs []error
	)
	seen := map[string]int{}
	for _, item := range splitList(list) {
		name, raw, ok := strings.Cut(item, "=")
		name, raw = strings.TrimSpace(name), strings.TrimSpace(raw)
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("LONGHAUL_LLM_ENDPOINTS: %q is not name=url", redact.URLs(item)))
			continue
		case !reName.MatchString(name):
			errs = append(errs, fmt.Errorf("LONGHAUL_LLM_ENDPOINTS: endpoint name %q is invalid: use a-z first, then a-z 0-9 _ - (at most 32)", name))
			continue
		}
		if _, dup := seen[name]; dup {
			errs = append(errs, fmt.Errorf("LONGHAUL_LLM_ENDPOINTS: endpoint %q is named twice", name))
			continue
		}
		if u, err := url.Parse(raw); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("LONGHAUL_LLM_ENDPOINTS: endpoint %q: %q is not an http(s) URL", name, redact.URLs(raw)))
			continue
		}
		seen[name] = len(out)
		out = append(out, Endpoint{Name: name, BaseURL: strings.TrimRight(raw, "/")})
	}
	keyed := map[string]bool{}
	for _, item := range splitList(keys) {
		name, key, ok := strings.Cut(item, "=")
		name = strings.TrimSpace(name)
		switch {
		case !ok || name == "":
			// The item may be a bare key: never quote it.
			errs = append(errs, errors.New("LONGHAUL_LLM_KEYS: an entry is not name=key"))
			continue
		case keyed[name]:
			errs = append(errs, fmt.Errorf("LONGHAUL_LLM_KEYS: endpoint %q has two keys", name))
			continue
		}
		keyed[name] = true
		i, ok := seen[name]
		if !ok {
			errs = append(errs, fmt.Errorf("LONGHAUL_LLM_KEYS: a key is given for endpoint %q, which LONGHAUL_LLM_ENDPOINTS does not name (named: %s)", name, names(out)))
			continue
		}
		out[i].APIKey = strings.TrimSpace(key)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if strings.TrimSpace(item) != "" {
			out = append(out, item)
		}
	}
	return out
}

func names(eps []Endpoint) string {
	if len(eps) == 0 {
		return "none"
	}
	out := make([]string, len(eps))
	for i, e := range eps {
		out[i] = e.Name
	}
	return strings.Join(out, ", ")
}

// Set is the default endpoint and the named ones.
type Set struct {
	def   Endpoint
	named []Endpoint
}

// NewSet returns the set of def (whose Name is ignored) and named.
func NewSet(def Endpoint, named []Endpoint) *Set {
	def.Name = ""
	return &Set{def: def, named: slices.Clone(named)}
}

// Default is the default endpoint.
func (s *Set) Default() Endpoint { return s.def }

// Named are the named endpoints, in the order configured.
func (s *Set) Named() []Endpoint { return slices.Clone(s.named) }

func (s *Set) lookup(name string) (Endpoint, bool) {
	for _, e := range s.named {
		if e.Name == name {
			return e, true
		}
	}
	return Endpoint{}, false
}

// Resolve returns the endpoint of ref and the model id to send it (see the
// package comment for the rule). An empty ref is the default endpoint with
// an empty model.
func (s *Set) Resolve(ref string) (Endpoint, string, error) {
	if rest, ok := strings.CutPrefix(ref, ":"); ok {
		return s.def, rest, nil
	}
	prefix, model, ok := strings.Cut(ref, ":")
	if !ok {
		return s.def, ref, nil
	}
	if e, ok := s.lookup(prefix); ok {
		if model == "" {
			return Endpoint{}, "", fmt.Errorf("model reference %q names endpoint %q but no model", ref, prefix)
		}
		return e, model, nil
	}
	if isTag(model) || !reName.MatchString(prefix) {
		return s.def, ref, nil
	}
	return Endpoint{}, "", fmt.Errorf("%w %q in model reference %q: LONGHAUL_LLM_ENDPOINTS names %s (a model id of the default endpoint with a ':' of its own is written with a leading ':', %q)",
		ErrUnknownEndpoint, prefix, ref, names(s.named), ":"+ref)
}

// Check reports whether ref resolves (see Resolve). A fallback list
// ("remote:big-model,llama3.1:8b", longhaul.ModelList) is checked model by
// model; a list with an empty entry is refused, as a stray comma is a typo.
func (s *Set) Check(ref string) error {
	if !strings.Contains(ref, longhaul.ModelListSep) {
		_, _, err := s.Resolve(ref)
		return err
	}
	parts := strings.Split(ref, longhaul.ModelListSep)
	for _, m := range parts {
		if strings.TrimSpace(m) == "" {
			return fmt.Errorf("model list %q has an empty entry", ref)
		}
		if _, _, err := s.Resolve(strings.TrimSpace(m)); err != nil {
			return err
		}
	}
	return nil
}

// Ref is the reference of model on the endpoint named name ("" the
// default): what Resolve takes back to the same endpoint and model.
func (s *Set) Ref(name, model string) string {
	if name != "" {
		return name + ":" + model
	}
	if e, m, err := s.Resolve(model); err != nil || e.Name != "" || m != model {
		return ":" + model
	}
	return model
}

// Canonical is the one reference of what ref resolves to (see Ref):
// ":gpt-4o" and "gpt-4o" on the default endpoint are both "gpt-4o". A
// fallback list is its first model's; a ref that does not resolve is
// itself. Prices and metrics key on it, never on the string as typed.
func (s *Set) Canonical(ref string) string {
	ref = longhaul.PrimaryModel(ref)
	e, m, err := s.Resolve(ref)
	if err != nil || ref == "" {
		return ref
	}
	return s.Ref(e.Name, m)
}

// wordTags are Ollama tags without a digit that its library uses widely
// ("mistral:instruct", "phi3:mini", "codellama:code").
var wordTags = []string{"latest", "instruct", "chat", "text", "code", "python", "mini", "small", "medium", "large", "vision", "embed"}

// isTag reports whether s reads as an Ollama tag: a size or a version, which
// starts with a digit or with one letter and a digit ("8b",
// "7b-instruct-q4_K_M", "v1.5", "e2b", "q4_0"), or one of wordTags, alone or
// leading a longer tag ("instruct-fp16"). A remote model id ("gpt-4o",
// "big-model") does not read as a tag, so "openrouter:gpt-4o" with no
// endpoint openrouter is an unknown endpoint, not a default-endpoint model.
func isTag(s string) bool {
	r := []rune(s)
	if len(r) > 0 && unicode.IsDigit(r[0]) || len(r) > 1 && unicode.IsLetter(r[0]) && unicode.IsDigit(r[1]) {
		return true
	}
	for _, w := range wordTags {
		if s == w || strings.HasPrefix(s, w+"-") {
			return true
		}
	}
	return false
}
