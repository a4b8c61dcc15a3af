// Package docsearch is the document_search tool: the documents skill's
// search over the vector stores a run names (the agent's vector_stores:
// and the request's), in the document store, as the run's principal. It
// exists apart from the store so that the store knows nothing of tools and
// runs, and apart from the activities so that the worker's tool registry
// holds it like any other tool.
package docsearch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/internal/docstore"
	"github.com/longhaul-dev/longhaul/internal/textcut"
	"github.com/longhaul-dev/longhaul/internal/tools"
)

// Limits of one search.
const (
	// DefaultResults is max_num_results when the model gives none, and
	// MaxResults the most it may ask for (as OpenAI's file_search).
	DefaultResults = 10
	MaxResults     = 50
	// DefaultMaxChars bounds the text of all hits of one result together,
	// under the worker's default cap on a tool result (16000), so the model
	// reads whole JSON.
	DefaultMaxChars = 12000
	// minHitChars is the least text a hit keeps when many share the budget.
	minHitChars = 300
)

// Store is what the tool needs of the document store; docstore.Store is
// one.
type Store interface {
	GetVectorStore(ctx context.Context, owner, id string) (docstore.VectorStore, error)
	Search(ctx context.Context, q docstore.Query) ([]docstore.Hit, error)
	Touch(ctx context.Context, owner string, ids ...string) error
}

// Embedder embeds the query with the model the chunks were embedded with
// (LONGHAUL_EMBED_MODEL); memory.Embedder is one.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// Tool is document_search.
type Tool struct {
	store Store
	embed Embedder
	max   int
}

// New returns document_search on store. embed may be nil (no embedding
// model): the search is then full-text only. maxChars bounds the text of
// one result's hits together; zero is DefaultMaxChars.
func New(store Store, embed Embedder, maxChars int) *Tool {
	if maxChars <= 0 {
		maxChars = DefaultMaxChars
	}
	return &Tool{store: store, embed: embed, max: maxChars}
}

// Result is what the model reads: the hits, best first. Message, when
// set, says why there are none or which stores were not searched.
type Result struct {
	Results []Hit  `json:"results"`
	Message string `json:"message,omitempty"`
}

// Hit is one chunk found. Chunk is the chunk's index in its file, from 0:
// what a citation [filename, chunk N] names.
type Hit struct {
	FileID        string         `json:"file_id"`
	Filename      string         `json:"filename"`
	VectorStoreID string         `json:"vector_store_id"`
	Chunk         int            `json:"chunk"`
	Score         float64        `json:"score"`
	Text          string         `json:"text"`
	Attributes    map[string]any `json:"attributes"`
}

type args struct {
	Query         string `json:"query"`
	MaxNumResults *int   `json:"max_num_results"`
}

// Name implements tools.Tool.
func (*Tool) Name() string { return longhaul.DocumentSearchTool }

// Description implements tools.Tool.
func (*Tool) Description() string {
	return "Search the documents of this conversation (files the user attached or uploaded, the agent's document collections) by meaning and by words. " +
		"Returns JSON {\"results\":[{file_id, filename, vector_store_id, chunk, score, text, attributes}]}, best first (score 1 = closest). " +
		"Cite what you use as [filename, chunk N], e.g. [report.pdf, chunk 3]."
}

// Parameters implements tools.Tool.
func (*Tool) Parameters() json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{`+
		`"query":{"type":"string","minLength":1,"maxLength":2000,"description":"what to look for, in a few words or a question"},`+
		`"max_num_results":{"type":"integer","minimum":1,"maximum":%d,"description":"how many chunks to return (default %d)"}},`+
		`"required":["query"],"additionalProperties":false}`, MaxResults, DefaultResults))
}

// Target implements tools.Targeter: the query.
func (*Tool) Target(raw json.RawMessage) string {
	var a args
	_ = json.Unmarshal(raw, &a)
	return textcut.Ellipsis(strings.Join(strings.Fields(a.Query), " "), 41)
}

// Call implements tools.Tool. It searches the stores the engine names in
// call.VectorStores, as call.User: never stores the model names. A store
// the user does not own is reported as not found, as one that does not
// exist; a run without stores gets a message, not an error.
func (t *Tool) Call(ctx context.Context, call tools.Call) (tools.Result, error) {
	if call.User == "" {
		return tools.Result{}, fmt.Errorf("document_search needs the run's user: %w", tools.ErrPermanent)
	}
	var a args
	if err := json.Unmarshal(call.Arguments, &a); err != nil {
		return tools.Result{}, fmt.Errorf("%w: %v", tools.ErrInvalidArguments, err)
	}
	query := strings.TrimSpace(a.Query)
	if query == "" {
		return tools.Result{}, fmt.Errorf("%w: query is empty", tools.ErrInvalidArguments)
	}
	k := DefaultResults
	if a.MaxNumResults != nil {
		k = *a.MaxNumResults
		if k < 1 || k > MaxResults {
			return tools.Result{}, fmt.Errorf("%w: max_num_results must be between 1 and %d, got %d", tools.ErrInvalidArguments, MaxResults, k)
		}
	}
	target := t.Target(call.Arguments)
	if len(call.VectorStores) == 0 {
		return t.result(Result{Results: []Hit{}, Message: "There are no documents to search in this conversation: no file is attached and no vector store is named. Answer without them, and say so if the user expected you to read a document."}, target)
	}
	var found, missing []string
	for _, id := range call.VectorStores {
		if slices.Contains(found, id) || slices.Contains(missing, id) {
			continue
		}
		_, err := t.store.GetVectorStore(ctx, call.User, id)
		switch {
		case errors.Is(err, docstore.ErrNotFound), errors.Is(err, docstore.ErrInvalid):
			missing = append(missing, id)
		case err != nil:
			return tools.Result{}, fmt.Errorf("read vector store %s: %w", id, err)
		default:
			found = append(found, id)
		}
	}
	var note string
	if len(missing) > 0 {
		note = "Vector store not found: " + strings.Join(missing, ", ") + "."
	}
	if len(found) == 0 {
		return t.result(Result{Results: []Hit{}, Message: note + " There are no documents to search."}, target)
	}
	q := docstore.Query{Owner: call.User, VectorStoreIDs: found, Text: query, K: k, Mode: "text"}
	if t.embed != nil {
		vecs, err := t.embed.Embed(ctx, []string{query})
		if err != nil {
			return tools.Result{}, fmt.Errorf("embed the query: %w", err)
		}
		if len(vecs) != 1 || len(vecs[0]) == 0 {
			return tools.Result{}, fmt.Errorf("embed the query: the embedder returned %d vectors for 1 text", len(vecs))
		}
		q.Vector, q.Mode = vecs[0], "hybrid"
	}
	hits, err := t.store.Search(ctx, q)
	if err != nil {
		if errors.Is(err, docstore.ErrInvalid) {
			return tools.Result{}, fmt.Errorf("%w: %v", tools.ErrInvalidArguments, err)
		}
		return tools.Result{}, fmt.Errorf("search: %w", err)
	}
	// A search keeps the stores alive (their expiry counts from it); a
	// failure to note it costs the user nothing now.
	_ = t.store.Touch(ctx, call.User, found...)
	res := Result{Results: t.bound(hits), Message: note}
	if len(res.Results) == 0 {
		res.Message = strings.TrimSpace(note + " Nothing in the documents matches this query; try other words.")
	}
	return t.result(res, target)
}

// bound converts hits, cutting each one's text so that all of them
// together stay within the tool's budget: an equal share each, no less
// than minHitChars.
func (t *Tool) bound(hits []docstore.Hit) []Hit {
	out := make([]Hit, 0, len(hits))
	share := t.max
	if len(hits) > 0 {
		share = max(t.max/len(hits), minHitChars)
	}
	used := 0
	for _, h := range hits {
		if used >= t.max {
			break
		}
		text := h.Text
		if utf8.RuneCountInString(text) > share {
			text = textcut.Ellipsis(text, share)
		}
		used += utf8.RuneCountInString(text)
		attrs := h.Attributes
		if attrs == nil {
			attrs = map[string]any{}
		}
		out = append(out, Hit{
			FileID: h.FileID, Filename: h.Filename, VectorStoreID: h.VectorStoreID,
			Chunk: h.Index, Score: h.Score, Text: text, Attributes: attrs,
		})
	}
	return out
}

func (t *Tool) result(r Result, target string) (tools.Result, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return tools.Result{}, fmt.Errorf("%w: encode the results: %v", tools.ErrPermanent, err)
	}
	return tools.Result{Content: string(b), Target: target}, nil
}
