package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Flavour is which server the scripted model also pretends to be, beyond
// the OpenAI routes: the native endpoints a client asks for a model's
// window.
type Flavour int

const (
	// FlavourOpenAI, the default, serves only the OpenAI routes:
	// GET /v1/models lists SetModels's names and no window.
	FlavourOpenAI Flavour = iota
	// FlavourOllama adds Ollama's GET /api/ps and POST /api/show, shaped
	// as ollama v0.32.15 api/types.go ProcessResponse and ShowResponse.
	// Every model name is known (see OllamaModel for the defaults); a
	// model is loaded, and listed by /api/ps, once a chat request has
	// named it, as Ollama loads a model on its first request.
	FlavourOllama
	// FlavourVLLM makes GET /v1/models list vLLM's ModelCard
	// (vllm/entrypoints/openai/protocol.py) with max_model_len set to
	// the window: SetModels's names, else "llmtest" and every model a
	// chat request has named.
	FlavourVLLM
	// FlavourThinkTags is a server with no reasoning parser (vLLM or
	// llama.cpp started without one): a thinking model's reasoning
	// reaches the client as "<think>\n…\n</think>\n\n" at the start
	// of the content. It serves only the OpenAI routes.
	FlavourThinkTags
)

// OllamaModel is what a FlavourOllama server says of one model.
type OllamaModel struct {
	// Name is the model as requested ("llama3.1:8b").
	Name string
	// Arch is model_info's general.architecture; "llama" when empty.
	Arch string
	// Trained is model_info's "<arch>.context_length"; 131072 (Llama
	// 3.1's) when 0.
	Trained int
	// NumCtx is a Modelfile num_ctx, in /api/show's parameters; none when
	// 0. Without SetOllamaModel it is the window.
	NumCtx int
	// Loaded is /api/ps's context_length; not loaded when 0. Without
	// SetOllamaModel it is the window once a chat request named the
	// model.
	Loaded int
	// LoadDelay is how long Ollama takes to load the model: the first
	// chat request naming it gets nothing at all, not even headers,
	// for LoadDelay, as ChatHandler waits in scheduleRunner before it
	// writes anything (ollama v0.32.15 server/routes.go:2634).
	LoadDelay time.Duration
	// Thinking makes /api/show list "thinking" in the model's
	// capabilities, as Ollama does for a model whose template has
	// thinking tags, of the gpt-oss family or with a built-in parser that
	// thinks (qwen3, deepseek-r1, gpt-oss): ollama v0.32.15
	// types/model/capability.go CapabilityThinking, appended last by
	// server/images.go Model.Capabilities. It changes nothing else: a
	// model thinks when its reply has Reasoning.
	Thinking bool
}

// SetFlavour picks the native endpoints the server adds.
func (s *Server) SetFlavour(f Flavour) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flavour = f
}

// SetOllamaModel fixes what a FlavourOllama server says of m.Name,
// instead of the defaults that follow SetWindow.
func (s *Server) SetOllamaModel(m OllamaModel) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ollama == nil {
		s.ollama = map[string]OllamaModel{}
	}
	s.ollama[m.Name] = m
}

// ollamaModelLocked is what the server says of name; s.mu must be held.
func (s *Server) ollamaModelLocked(name string) OllamaModel {
	m, ok := s.ollama[name]
	if !ok {
		m = OllamaModel{Name: name, NumCtx: s.window}
		if slices.Contains(s.used, name) {
			m.Loaded = s.window
		}
	}
	if m.Arch == "" {
		m.Arch = "llama"
	}
	if m.Trained == 0 {
		m.Trained = 131072
	}
	return m
}

// serveNative answers the flavour's native routes and reports whether it
// did.
func (s *Server) serveNative(w http.ResponseWriter, r *http.Request, path string) bool {
	s.mu.Lock()
	flavour := s.flavour
	s.mu.Unlock()
	switch {
	case flavour == FlavourOllama && path == "/api/ps":
		if allow(w, r, http.MethodGet) {
			s.handlePS(w)
		}
	case flavour == FlavourOllama && path == "/api/tags":
		if allow(w, r, http.MethodGet) {
			s.handleTags(w)
		}
	case flavour == FlavourOllama && path == "/api/show":
		if allow(w, r, http.MethodPost) {
			s.handleShow(w, r)
		}
	case flavour == FlavourVLLM && path == "/v1/models":
		if allow(w, r, http.MethodGet) {
			s.handleVLLMModels(w)
		}
	default:
		return false
	}
	return true
}

// handlePS answers GET /api/ps: the loaded models.
func (s *Server) handlePS(w http.ResponseWriter) {
	type details struct {
		Format            string `json:"format"`
		Family            string `json:"family"`
		ParameterSize     string `json:"parameter_size"`
		QuantizationLevel string `json:"quantization_level"`
	}
	type entry struct {
		Name          string    `json:"name"`
		Model         string    `json:"model"`
		Size          int64     `json:"size"`
		Digest        string    `json:"digest"`
		Details       details   `json:"details"`
		ExpiresAt     time.Time `json:"expires_at"`
		SizeVRAM      int64     `json:"size_vram"`
		ContextLength int       `json:"context_length"`
	}
	s.mu.Lock()
	names := append([]string(nil), s.used...)
	for n := range s.ollama {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	models := []entry{}
	for _, n := range names {
		m := s.ollamaModelLocked(n)
		if m.Loaded <= 0 {
			continue
		}
		models = append(models, entry{
			Name: n, Model: n, Size: 6_654_289_920, Digest: "46e0c10c039e",
			Details:   details{Format: "gguf", Family: m.Arch, ParameterSize: "8.0B", QuantizationLevel: "Q4_K_M"},
			ExpiresAt: s.started.Add(5 * time.Minute), SizeVRAM: 6_654_289_920, ContextLength: m.Loaded,
		})
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"models": models})
}

// handleShow answers POST /api/show {"model": name}.
func (s *Server) handleShow(w http.ResponseWriter, r *http.Request) {
	_, fields, ok := readJSONBody(w, r)
	if !ok {
		return
	}
	var name string
	_ = json.Unmarshal(fields["model"], &name)
	if name == "" {
		_ = json.Unmarshal(fields["name"], &name)
	}
	if name == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "model is required"})
		return
	}
	s.mu.Lock()
	m := s.ollamaModelLocked(name)
	pulled := s.pulledLocked(name)
	s.mu.Unlock()
	if !pulled {
		// ShowHandler (ollama v0.32.15 server/routes.go:1367).
		writeJSON(w, http.StatusNotFound, map[string]string{"error": ollamaNotFound(name)})
		return
	}
	// GetModelInfo writes each option as fmt.Sprintf("%-*s %#v", 30, k, v).
	params := []string{fmt.Sprintf("%-*s %#v", 30, "stop", "<|eot_id|>")}
	if m.NumCtx > 0 {
		params = append(params, fmt.Sprintf("%-*s %#v", 30, "num_ctx", m.NumCtx))
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"modelfile":  "# Modelfile generated by \"ollama show\"\nFROM " + name + "\n",
		"parameters": strings.Join(params, "\n"),
		"template":   "{{- range .Messages }}<|start_header_id|>{{ .Role }}<|end_header_id|>\n\n{{ .Content }}<|eot_id|>\n{{- end }}<|start_header_id|>assistant<|end_header_id|>\n\n",
		"details": map[string]any{"parent_model": "", "format": "gguf", "family": m.Arch,
			"families": []string{m.Arch}, "parameter_size": "8.0B", "quantization_level": "Q4_K_M"},
		"model_info": map[string]any{
			"general.architecture":              m.Arch,
			"general.parameter_count":           8030261248,
			m.Arch + ".context_length":          m.Trained,
			m.Arch + ".block_count":             32,
			m.Arch + ".attention.head_count_kv": 8,
		},
		"capabilities": capabilities(m),
		"modified_at":  s.started.UTC(),
	})
}

// capabilities is what /api/show says m can do (api/types.go
// ShowResponse.Capabilities): completion and tools, as a llama3.1 template
// has, then thinking for a model that thinks, in the order
// server/images.go Model.Capabilities appends them.
func capabilities(m OllamaModel) []string {
	caps := []string{"completion", "tools"}
	if m.Thinking {
		caps = append(caps, "thinking")
	}
	return caps
}

// handleVLLMModels answers GET /v1/models as vLLM does.
func (s *Server) handleVLLMModels(w http.ResponseWriter) {
	s.mu.Lock()
	names := s.models
	if names == nil {
		names = []string{defaultModel}
		for _, n := range s.used {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	window := s.window
	s.mu.Unlock()
	type card struct {
		ID          string `json:"id"`
		Object      string `json:"object"`
		Created     int64  `json:"created"`
		OwnedBy     string `json:"owned_by"`
		Root        string `json:"root"`
		Parent      any    `json:"parent"`
		MaxModelLen *int   `json:"max_model_len"`
		Permission  []any  `json:"permission"`
	}
	data := make([]card, 0, len(names))
	for _, n := range names {
		c := card{ID: n, Object: "model", Created: s.started.Unix(), OwnedBy: "vllm", Root: n, Permission: []any{}}
		if window > 0 {
			c.MaxModelLen = &window
		}
		data = append(data, c)
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}
