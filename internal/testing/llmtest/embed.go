package llmtest

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
)

// Embed returns the vector the server answers for the text input s with dim
// dimensions: a unit vector of normally distributed components seeded by a
// hash of s, so the same input always gives the same vector and different
// inputs give practically unrelated ones. Embed panics if dim is not
// positive.
func Embed(s string, dim int) []float32 {
	return embedKey("text:"+s, dim)
}

// embedTokens is Embed for a token-array input.
func embedTokens(tokens []int, dim int) []float32 {
	parts := make([]string, len(tokens))
	for i, t := range tokens {
		parts[i] = strconv.Itoa(t)
	}
	return embedKey("tokens:"+strings.Join(parts, ","), dim)
}

func embedKey(key string, dim int) []float32 {
	if dim <= 0 {
		panic("llmtest: embedding dimension must be positive")
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	seed := h.Sum64()
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	v := make([]float64, dim)
	var norm float64
	for i := range v {
		v[i] = rng.NormFloat64()
		norm += v[i] * v[i]
	}
	norm = math.Sqrt(norm)
	out := make([]float32, dim)
	for i := range v {
		out[i] = float32(v[i] / norm)
	}
	return out
}

type embeddingObject struct {
	Object    string `json:"object"`
	Embedding any    `json:"embedding"`
	Index     int    `json:"index"`
}

type embeddingUsage struct {
	Prompt int `json:"prompt_tokens"`
	Total  int `json:"total_tokens"`
}

type embeddingList struct {
	Object string            `json:"object"`
	Data   []embeddingObject `json:"data"`
	Model  string            `json:"model"`
	Usage  embeddingUsage    `json:"usage"`
}

func (s *Server) handleEmbeddings(w http.ResponseWriter, r *http.Request) {
	body, _, ok := readJSONBody(w, r)
	if !ok {
		return
	}
	var raw struct {
		Input          json.RawMessage `json:"input"`
		Model          string          `json:"model"`
		EncodingFormat string          `json:"encoding_format"`
		Dimensions     int             `json:"dimensions"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("llmtest: cannot decode embeddings request: %v", err),
			"invalid_request_error", nil)
		return
	}
	texts, tokens, err := decodeEmbeddingInput(raw.Input)
	if err == nil && raw.EncodingFormat != "" && raw.EncodingFormat != "float" && raw.EncodingFormat != "base64" {
		err = fmt.Errorf("llmtest: unsupported encoding_format %q", raw.EncodingFormat)
	}
	if err == nil && raw.Dimensions < 0 {
		err = errors.New("llmtest: dimensions must be positive")
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error(), "invalid_request_error", nil)
		return
	}

	s.mu.Lock()
	rec := EmbeddingRequest{
		N:              len(s.embReqs) + 1,
		Method:         r.Method,
		Path:           r.URL.Path,
		Header:         r.Header.Clone(),
		Body:           body,
		Model:          raw.Model,
		EncodingFormat: raw.EncodingFormat,
		Dimensions:     raw.Dimensions,
		Input:          texts,
		Tokens:         tokens,
	}
	s.embReqs = append(s.embReqs, rec)
	s.notifyLocked()
	dim := s.dim
	if raw.Dimensions > 0 {
		dim = raw.Dimensions
	}
	var vecs [][]float32
	n := 0
	for _, t := range texts {
		if v, ok := s.vectors[t]; ok && len(v) == dim {
			vecs = append(vecs, append([]float32(nil), v...))
		} else {
			vecs = append(vecs, Embed(t, dim))
		}
		n += CountTokens(t)
	}
	s.mu.Unlock()

	for _, t := range tokens {
		vecs = append(vecs, embedTokens(t, dim))
		n += len(t)
	}
	model := raw.Model
	if model == "" {
		model = defaultModel
	}
	out := embeddingList{Object: "list", Model: model, Usage: embeddingUsage{Prompt: n, Total: n}}
	for i, v := range vecs {
		var e any = v
		if raw.EncodingFormat == "base64" {
			b := make([]byte, 4*len(v))
			for j, f := range v {
				binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(f))
			}
			e = base64.StdEncoding.EncodeToString(b)
		}
		out.Data = append(out.Data, embeddingObject{Object: "embedding", Embedding: e, Index: i})
	}
	writeJSON(w, http.StatusOK, out)
}

// decodeEmbeddingInput accepts the input shapes of the embeddings API: a
// string, an array of strings, an array of tokens or an array of token
// arrays. Empty inputs are rejected, as the API does.
func decodeEmbeddingInput(raw json.RawMessage) ([]string, [][]int, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, errors.New("llmtest: embeddings request without input")
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if one == "" {
			return nil, nil, errors.New("llmtest: embeddings input must not be empty")
		}
		return []string{one}, nil, nil
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil {
		if len(many) == 0 {
			return nil, nil, errors.New("llmtest: embeddings input must not be empty")
		}
		for i, s := range many {
			if s == "" {
				return nil, nil, fmt.Errorf("llmtest: embeddings input %d is empty", i)
			}
		}
		return many, nil, nil
	}
	var tokens []int
	if json.Unmarshal(raw, &tokens) == nil {
		if len(tokens) == 0 {
			return nil, nil, errors.New("llmtest: embeddings input must not be empty")
		}
		return nil, [][]int{tokens}, nil
	}
	var batches [][]int
	if err := json.Unmarshal(raw, &batches); err != nil {
		return nil, nil, fmt.Errorf("llmtest: embeddings input must be a string, strings or token arrays: %w", err)
	}
	if len(batches) == 0 {
		return nil, nil, errors.New("llmtest: embeddings input must not be empty")
	}
	for i, b := range batches {
		if len(b) == 0 {
			return nil, nil, fmt.Errorf("llmtest: embeddings input %d is empty", i)
		}
	}
	return nil, batches, nil
}
