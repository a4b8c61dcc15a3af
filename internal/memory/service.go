package memory

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/sashabaranov/go-openai"
)

// Defaults of recall.
const (
	// DefaultK is how many memories a recall or a search returns at most.
	DefaultK = 5
	// DefaultThreshold is the cosine similarity a memory must reach to be
	// recalled into a turn.
	DefaultThreshold = 0.6
)

// ErrEmbed is matched (errors.Is) by the errors of the embedder a Service
// calls: the embedding endpoint's failure, neither the store's nor the
// caller's.
var ErrEmbed = errors.New("embedding failed")

// embedFailure marks an embedder's error as ErrEmbed, keeping its message.
type embedFailure struct{ err error }

func (e embedFailure) Error() string        { return e.err.Error() }
func (e embedFailure) Unwrap() error        { return e.err }
func (e embedFailure) Is(target error) bool { return target == ErrEmbed }

// embed is s.Embedder.Embed with its failure marked ErrEmbed.
func (s *Service) embed(ctx context.Context, texts []string) ([][]float32, error) {
	vecs, err := s.Embedder.Embed(ctx, texts)
	if err != nil {
		return nil, embedFailure{err}
	}
	return vecs, nil
}

// Embedder turns texts into vectors, one per text, in order.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// OpenAIEmbedder embeds through an OpenAI-compatible /v1/embeddings (the
// model endpoint's, or an embedder of its own). It does not retry: the
// activity that calls it does.
type OpenAIEmbedder struct {
	client *openai.Client
	model  string
}

// NewOpenAIEmbedder returns an embedder of model at baseURL (ending in
// /v1) with the bearer key apiKey; hc nil is http.DefaultClient.
func NewOpenAIEmbedder(baseURL, apiKey, model string, hc *http.Client) *OpenAIEmbedder {
	cfg := openai.DefaultConfig(apiKey)
	cfg.BaseURL = baseURL
	if hc != nil {
		cfg.HTTPClient = hc
	}
	return &OpenAIEmbedder{client: openai.NewClientWithConfig(cfg), model: model}
}

// Embed implements Embedder.
func (e *OpenAIEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	resp, err := e.client.CreateEmbeddings(ctx, openai.EmbeddingRequestStrings{
		Input: texts, Model: openai.EmbeddingModel(e.model),
	})
	if err != nil {
		return nil, fmt.Errorf("embed with %s: %w", e.model, err)
	}
	if len(resp.Data) != len(texts) {
		return nil, fmt.Errorf("embed with %s: %d vectors for %d texts", e.model, len(resp.Data), len(texts))
	}
	out := make([][]float32, len(texts))
	for _, d := range resp.Data {
		if d.Index < 0 || d.Index >= len(texts) || out[d.Index] != nil {
			return nil, fmt.Errorf("embed with %s: bad index %d in the answer", e.model, d.Index)
		}
		out[d.Index] = d.Embedding
	}
	return out, nil
}

// Service is memory as runs and the API use it: a store, the embedder that
// turns texts and queries into vectors, and the recall settings.
type Service struct {
	Store    Store
	Embedder Embedder
	// K bounds a recall or a search (DefaultK when zero); Threshold is the
	// similarity a memory needs to be recalled into a turn.
	K         int
	Threshold float64
	// Max is the most memories one user keeps (LONGHAUL_MAX_MEMORIES):
	// after a save, the least recently saved or updated beyond it are
	// deleted. Zero keeps them all.
	Max int
}

func (s *Service) k() int {
	if s.K > 0 {
		return s.K
	}
	return DefaultK
}

// Recall returns the user's memories closest to query at or above the
// recall threshold, at most K.
func (s *Service) Recall(ctx context.Context, user, query string) ([]Memory, error) {
	return s.search(ctx, user, query, s.k(), s.Threshold)
}

// Search returns the user's memories closest to query, at most limit (K
// when zero), however far: a person or a model who searches judges the
// scores.
func (s *Service) Search(ctx context.Context, user, query string, limit int) ([]Memory, error) {
	if limit <= 0 {
		limit = s.k()
	}
	return s.search(ctx, user, query, limit, -1)
}

func (s *Service) search(ctx context.Context, user, query string, k int, threshold float64) ([]Memory, error) {
	query = strings.TrimSpace(query)
	if query == "" {
		return nil, fmt.Errorf("search memories: %w: empty query", ErrInvalid)
	}
	vecs, err := s.embed(ctx, []string{query})
	if err != nil {
		return nil, err
	}
	return s.Store.Search(ctx, user, vecs[0], k, threshold)
}

// Remember saves texts as the user's memories learned in chat by run,
// embedding them in one request; a near-duplicate updates the memory it
// restates.
func (s *Service) Remember(ctx context.Context, user, chat, run string, texts []string) ([]Saved, error) {
	var clean []string
	for _, t := range texts {
		if t = strings.TrimSpace(t); t != "" {
			clean = append(clean, t)
		}
	}
	if len(clean) == 0 {
		return nil, nil
	}
	for _, t := range clean {
		if len(t) > MaxTextBytes {
			return nil, fmt.Errorf("save memory: %w: text of %d bytes is over %d", ErrInvalid, len(t), MaxTextBytes)
		}
	}
	vecs, err := s.embed(ctx, clean)
	if err != nil {
		return nil, err
	}
	var out []Saved
	for i, t := range clean {
		sv, err := s.Store.Save(ctx, Memory{User: user, Text: t, ChatID: chat, Run: run, Vector: vecs[i]})
		if err != nil {
			return out, err
		}
		out = append(out, sv)
	}
	if s.Max > 0 {
		// Counting first keeps a save under the cap to one index scan.
		n, err := s.Store.Count(ctx, user)
		if err != nil {
			return out, err
		}
		if n > s.Max {
			if _, err := s.Store.Trim(ctx, user, s.Max); err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

// IsInvalid reports whether err is the caller's fault (ErrInvalid), which
// retrying cannot fix.
func IsInvalid(err error) bool { return errors.Is(err, ErrInvalid) }
