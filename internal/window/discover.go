package window

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// What Discover reports as a window's Source.
const (
	// SourceOllamaPS: the runner Ollama has loaded for the model, whose
	// context is the window every request gets until it unloads.
	SourceOllamaPS = "ollama /api/ps"
	// SourceOllamaShow: the model's Modelfile sets num_ctx, bounded by
	// the context it was trained for.
	SourceOllamaShow = "ollama /api/show"
	// SourceOllamaDefault: an Ollama whose model sets no num_ctx, so the
	// server's own default applies, which /api/show does not tell
	// (OLLAMA_CONTEXT_LENGTH, else 4,096 / 32,768 / 262,144 by VRAM);
	// Default is assumed. The start banner names OLLAMA_CONTEXT_LENGTH
	// for it.
	SourceOllamaDefault = "ollama default (OLLAMA_CONTEXT_LENGTH unknown)"
	// SourceVLLM: vLLM's --max-model-len, which it lists with the model.
	SourceVLLM = "vllm max_model_len"
)

// DiscoverTimeout bounds each request Discover makes.
const DiscoverTimeout = 2 * time.Second

// maxDiscoverBody bounds a discovery answer read: /api/show's model_info
// of a large model is tens of kilobytes.
const maxDiscoverBody = 4 << 20

// Discover returns a Discoverer that asks the endpoint itself, for a base
// URL such as "http://ollama:11434/v1":
//
//  1. Ollama's GET /api/ps at the same host: the context_length of the
//     runner loaded for the model (ollama v0.32.15 api/types.go
//     ProcessModelResponse "ContextLength int `json:\"context_length\"`",
//     filled in server/routes.go PsHandler from the scheduler's loaded
//     runner). It is what every request gets while the model is loaded.
//  2. Ollama's POST /api/show {"model": name}: a Modelfile num_ctx in
//     "parameters" (GetModelInfo writes each option as "%-30s %#v") and
//     the trained context in model_info["<arch>.context_length"]. Ollama
//     runs a model with num_ctx from the Modelfile, else
//     OLLAMA_CONTEXT_LENGTH, else its VRAM default (server/routes.go
//     modelOptions over api.DefaultOptions; "vram-based default
//     context": 4096 below 23 GiB), never over the trained context
//     (server/sched.go effectiveContext, llm/server.go NewLlamaServer
//     "requested context size too large for model"). /api/show does not
//     say the server's setting, so without num_ctx Default is assumed.
//  3. GET <base>/models, as vLLM serves it: each entry's max_model_len
//     (vllm/entrypoints/openai/protocol.py ModelCard,
//     "max_model_len: Optional[int] = None").
//
// Each request has DiscoverTimeout; an endpoint that answers none of them
// (OpenAI's own) gives ok false, and a failure never reaches the caller.
// client nil is http.DefaultClient.
func Discover(client *http.Client) Discoverer {
	if client == nil {
		client = http.DefaultClient
	}
	d := discoverer{client: client}
	return d.discover
}

type discoverer struct{ client *http.Client }

func (d discoverer) discover(ctx context.Context, baseURL, apiKey, model string) (Window, bool) {
	base, root, ok := roots(baseURL)
	if !ok || model == "" {
		return Window{}, false
	}
	if n, ollama := d.ollamaPS(ctx, root, apiKey, model); n > 0 {
		return Window{Tokens: n, Source: SourceOllamaPS}, true
	} else if ollama {
		if w, ok := d.ollamaShow(ctx, root, apiKey, model); ok {
			return w, true
		}
	}
	if n := d.vllmModels(ctx, base, apiKey, model); n > 0 {
		return Window{Tokens: n, Source: SourceVLLM}, true
	}
	return Window{}, false
}

// roots splits an OpenAI base URL into itself (no trailing slash) and the
// host's root, where Ollama's native API lives: the base less a final
// "/v1".
func roots(baseURL string) (base, root string, ok bool) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", "", false
	}
	base = u.String()
	u.Path = strings.TrimSuffix(u.Path, "/v1")
	u.RawPath = ""
	return base, strings.TrimRight(u.String(), "/"), true
}

// get does one discovery request and decodes a 200's JSON into v.
func (d discoverer) get(ctx context.Context, method, u, apiKey string, body []byte, v any) bool {
	ctx, cancel := context.WithTimeout(ctx, DiscoverTimeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return false
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDiscoverBody))
		return false
	}
	dec := json.NewDecoder(io.LimitReader(resp.Body, maxDiscoverBody))
	dec.UseNumber()
	return dec.Decode(v) == nil
}

// ollamaPS returns the loaded runner's context for model (0 when it is
// not loaded), and whether the endpoint answered as an Ollama.
func (d discoverer) ollamaPS(ctx context.Context, root, apiKey, model string) (int, bool) {
	var ps struct {
		Models *[]struct {
			Name          string `json:"name"`
			Model         string `json:"model"`
			ContextLength int    `json:"context_length"`
		} `json:"models"`
	}
	if !d.get(ctx, http.MethodGet, root+"/api/ps", apiKey, nil, &ps) || ps.Models == nil {
		return 0, false
	}
	want := ollamaName(model)
	for _, m := range *ps.Models {
		if ollamaName(m.Name) == want || ollamaName(m.Model) == want {
			return m.ContextLength, true
		}
	}
	return 0, true
}

// ollamaShow reads the model's num_ctx and trained context.
func (d discoverer) ollamaShow(ctx context.Context, root, apiKey, model string) (Window, bool) {
	body, _ := json.Marshal(map[string]string{"model": model})
	var show struct {
		Parameters string         `json:"parameters"`
		ModelInfo  map[string]any `json:"model_info"`
	}
	if !d.get(ctx, http.MethodPost, root+"/api/show", apiKey, body, &show) {
		return Window{}, false
	}
	trained := trainedContext(show.ModelInfo)
	w := Window{Tokens: numCtx(show.Parameters), Source: SourceOllamaShow}
	if w.Tokens <= 0 {
		w = Window{Tokens: Default, Source: SourceOllamaDefault}
	}
	if trained > 0 && w.Tokens > trained {
		w.Tokens = trained
	}
	return w, true
}

// trainedContext is model_info's "<arch>.context_length", the
// architecture named by "general.architecture"; else any
// "*.context_length".
func trainedContext(info map[string]any) int {
	if arch, ok := info["general.architecture"].(string); ok {
		if n := number(info[arch+".context_length"]); n > 0 {
			return n
		}
	}
	for k, v := range info {
		if strings.HasSuffix(k, ".context_length") {
			if n := number(v); n > 0 {
				return n
			}
		}
	}
	return 0
}

// numCtx finds "num_ctx <value>" among /api/show's parameter lines.
func numCtx(params string) int {
	for line := range strings.Lines(params) {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "num_ctx" {
			if n, err := strconv.ParseFloat(strings.Trim(f[1], `"`), 64); err == nil && n > 0 {
				return int(n)
			}
		}
	}
	return 0
}

// vllmModels returns model's max_model_len from GET <base>/models.
func (d discoverer) vllmModels(ctx context.Context, base, apiKey, model string) int {
	var list struct {
		Data []struct {
			ID          string `json:"id"`
			MaxModelLen any    `json:"max_model_len"`
		} `json:"data"`
	}
	if !d.get(ctx, http.MethodGet, base+"/models", apiKey, nil, &list) {
		return 0
	}
	for _, m := range list.Data {
		if m.ID == model {
			return number(m.MaxModelLen)
		}
	}
	return 0
}

func number(v any) int {
	n, ok := v.(json.Number)
	if !ok {
		return 0
	}
	f, err := n.Float64()
	if err != nil || f <= 0 || f > 1<<40 {
		return 0
	}
	return int(f)
}

// ollamaName is a model name as Ollama lists it: without the default
// registry and namespace, with a tag (":latest" when none), lower case
// (model names are case-insensitive: types/model/name.go).
func ollamaName(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.TrimPrefix(s, "registry.ollama.ai/")
	s = strings.TrimPrefix(s, "library/")
	if i := strings.LastIndex(s, "/"); !strings.Contains(s[i+1:], ":") {
		s += ":latest"
	}
	return s
}
