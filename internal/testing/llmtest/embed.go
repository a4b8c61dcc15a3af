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

// embeddingsRequest is the body of an embeddings request; texts and tokens
// are its decoded input.
type embeddingsRequest struct {
	Input          json.RawMessage `json:"input"`
	Model          string          `json:"model"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     int             `json:"dimensions"`

	texts  []string
	tokens [][]int
}

func (s *Server) handleEmbeddings(w http.ResponseWriter, r *http.Request) {
	body, _, ok := readJSONBody(w, r)
	if !ok {
		return
	}
	req, err := parseEmbeddingsRequest(body)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error(), "invalid_request_error", nil)
		return
	}
	vecs, n, dim := s.embedTexts(r, body, req)
	for _, t := range req.tokens {
		vecs = append(vecs, embedTokens(t, dim))
		n += len(t)
	}
	writeJSON(w, http.StatusOK, embeddingResponse(req, vecs, n))
}

// parseEmbeddingsRequest decodes and checks the body of an embeddings
// request; its errors are the messages of a 400 answer.
func parseEmbeddingsRequest(body []byte) (embeddingsRequest, error) {
	var req embeddingsRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return req, fmt.Errorf("llmtest: cannot decode embeddings request: %v", err)
	}
	texts, tokens, err := decodeEmbeddingInput(req.Input)
	if err == nil && req.EncodingFormat != "" && req.EncodingFormat != "float" && req.EncodingFormat != "base64" {
		err = fmt.Errorf("llmtest: unsupported encoding_format %q", req.EncodingFormat)
	}
	if err == nil && req.Dimensions < 0 {
		err = errors.New("llmtest: dimensions must be positive")
	}
	req.texts, req.tokens = texts, tokens
	return req, err
}

// embedTexts records the request and, under the same lock, answers its text
// inputs: the vector SetEmbedding gave a text, if it has the dimension
// asked for, or else Embed's. It returns the vectors, their token count and
// the dimension, which token inputs use too.
func (s *Server) embedTexts(r *http.Request, body []byte, req embeddingsRequest) (vecs [][]float32, n, dim int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.embReqs = append(s.embReqs, EmbeddingRequest{
		N:              len(s.embReqs) + 1,
		Method:         r.Method,
		Path:           r.URL.Path,
		Header:         r.Header.Clone(),
		Body:           body,
		Model:          req.Model,
		EncodingFormat: req.EncodingFormat,
		Dimensions:     req.Dimensions,
		Input:          req.texts,
		Tokens:         req.tokens,
	})
	s.notifyLocked()
	dim = s.dim
	if req.Dimensions > 0 {
		dim = req.Dimensions
	}
	for _, t := range req.texts {
		if v, ok := s.vectors[t]; ok && len(v) == dim {
			vecs = append(vecs, append([]float32(nil), v...))
		} else {
			vecs = append(vecs, Embed(t, dim))
		}
		n += CountTokens(t)
	}
	return vecs, n, dim
}

// embeddingResponse is the answer to req: vecs as floats or, when req asked
// for it, as base64 of little-endian float32s, with n prompt tokens.
func embeddingResponse(req embeddingsRequest, vecs [][]float32, n int) embeddingList {
	model := req.Model
	if model == "" {
		model = defaultModel
	}
	out := embeddingList{Object: "list", Model: model, Usage: embeddingUsage{Prompt: n, Total: n}}
	for i, v := range vecs {
		var e any = v
		if req.EncodingFormat == "base64" {
			b := make([]byte, 4*len(v))
			for j, f := range v {
				binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(f))
			}
			e = base64.StdEncoding.EncodeToString(b)
		}
		out.Data = append(out.Data, embeddingObject{Object: "embedding", Embedding: e, Index: i})
	}
	return out
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
