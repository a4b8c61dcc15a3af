package documents

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/longhaul-dev/longhaul/internal/docstore"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// Bounds of the documents routes' input.
const (
	// maxSearchQueries and maxSearchQuery bound a search's queries.
	maxSearchQueries = 10
	maxSearchQuery   = 4096
	// maxAttachAtOnce bounds the files a store creation or a batch
	// attaches in one request (each is an ingestion run started).
	maxAttachAtOnce = 100
	// maxFilterBytes bounds a filter's JSON.
	maxFilterBytes = 16 << 10
)

// unix is t in seconds, or nil when t is zero.
func unix(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	u := t.Unix()
	return &u
}

func fileObject(f docstore.File) wire.FileObject {
	return wire.FileObject{ID: f.ID, Object: "file", Bytes: f.Bytes, CreatedAt: f.CreatedAt.Unix(), ExpiresAt: unix(f.ExpiresAt),
		Filename: f.Filename, Purpose: f.Purpose, Status: "processed"}
}

func fileCounts(c docstore.FileCounts) wire.FileCountsObject {
	return wire.FileCountsObject{InProgress: c.InProgress, Completed: c.Completed, Failed: c.Failed, Cancelled: c.Cancelled, Total: c.Total}
}

// vectorStoreObject renders vs as of now: expired once its ExpiresAt has
// passed, in progress while a file is, completed otherwise.
func vectorStoreObject(vs docstore.VectorStore, now time.Time) wire.VectorStoreObject {
	o := wire.VectorStoreObject{ID: vs.ID, Object: "vector_store", CreatedAt: vs.CreatedAt.Unix(), Name: vs.Name, UsageBytes: vs.UsageBytes,
		FileCounts: fileCounts(vs.FileCounts), Status: "completed", ExpiresAt: unix(vs.ExpiresAt), LastActiveAt: unix(vs.LastActiveAt),
		Metadata: vs.Metadata}
	if o.Metadata == nil {
		o.Metadata = map[string]string{}
	}
	if vs.ExpiresAfter != nil {
		o.ExpiresAfter = &wire.ExpiresAfterObject{Anchor: vs.ExpiresAfter.Anchor, Days: vs.ExpiresAfter.Days}
	}
	switch {
	case !vs.ExpiresAt.IsZero() && !now.Before(vs.ExpiresAt):
		o.Status = "expired"
	case vs.FileCounts.InProgress > 0:
		o.Status = "in_progress"
	}
	return o
}

func vectorStoreFileObject(f docstore.VectorStoreFile) wire.VectorStoreFileObject {
	o := wire.VectorStoreFileObject{ID: f.FileID, Object: "vector_store.file", UsageBytes: f.UsageBytes, CreatedAt: f.CreatedAt.Unix(),
		VectorStoreID: f.VectorStoreID, Status: f.Status, Attributes: f.Attributes,
		ChunkingStrategy: &wire.ChunkingObject{Type: "static", Static: &wire.StaticChunking{MaxChunkSizeTokens: f.Chunking.MaxChunkSizeTokens, ChunkOverlapTokens: f.Chunking.ChunkOverlapTokens}}}
	if f.LastError != nil {
		o.LastError = &wire.LastErrorObject{Code: f.LastError.Code, Message: f.LastError.Message}
	}
	return o
}

func fileBatchObject(b docstore.FileBatch) wire.FileBatchObject {
	return wire.FileBatchObject{ID: b.ID, Object: "vector_store.files_batch", CreatedAt: b.CreatedAt.Unix(), VectorStoreID: b.VectorStoreID,
		Status: b.Status, FileCounts: fileCounts(b.FileCounts)}
}

// OpenAI's static chunking bounds and defaults (vector-stores.d.ts,
// StaticFileChunkingStrategy: max 100 to 4096, default 800; the overlap
// at most half of it, default 400).
const (
	DefaultChunkTokens   = 800
	DefaultOverlapTokens = 400
	minChunkTokens       = 100
	maxChunkTokens       = 4096
)

// chunking turns a request's strategy (nil or auto: OpenAI's defaults)
// into the store's.
func chunking(c *wire.ChunkingObject) (docstore.ChunkingStrategy, error) {
	def := docstore.ChunkingStrategy{Type: "static", MaxChunkSizeTokens: DefaultChunkTokens, ChunkOverlapTokens: DefaultOverlapTokens}
	if c == nil {
		return def, nil
	}
	switch c.Type {
	case "auto":
		if c.Static != nil {
			return def, fmt.Errorf("chunking_strategy: type auto takes no static")
		}
		return def, nil
	case "static":
		if c.Static == nil {
			return def, fmt.Errorf("chunking_strategy: type static needs static {max_chunk_size_tokens, chunk_overlap_tokens}")
		}
		s := *c.Static
		if s.MaxChunkSizeTokens < minChunkTokens || s.MaxChunkSizeTokens > maxChunkTokens {
			return def, fmt.Errorf("chunking_strategy.static.max_chunk_size_tokens: must be from %d to %d, got %d", minChunkTokens, maxChunkTokens, s.MaxChunkSizeTokens)
		}
		if s.ChunkOverlapTokens < 0 || s.ChunkOverlapTokens > s.MaxChunkSizeTokens/2 {
			return def, fmt.Errorf("chunking_strategy.static.chunk_overlap_tokens: must be from 0 to half of max_chunk_size_tokens (%d), got %d", s.MaxChunkSizeTokens/2, s.ChunkOverlapTokens)
		}
		return docstore.ChunkingStrategy{Type: "static", MaxChunkSizeTokens: s.MaxChunkSizeTokens, ChunkOverlapTokens: s.ChunkOverlapTokens}, nil
	}
	return def, fmt.Errorf("chunking_strategy.type: must be auto or static, got %q", c.Type)
}

// expiresAfter checks a vector store's expiration policy.
func expiresAfter(e *wire.ExpiresAfterObject) (*docstore.ExpiresAfter, error) {
	if e == nil {
		return nil, nil
	}
	if e.Anchor != "last_active_at" {
		return nil, fmt.Errorf("expires_after.anchor: must be last_active_at, got %q", e.Anchor)
	}
	if e.Days < 1 || e.Days > 365 {
		return nil, fmt.Errorf("expires_after.days: must be from 1 to 365, got %d", e.Days)
	}
	return &docstore.ExpiresAfter{Anchor: e.Anchor, Days: e.Days}, nil
}

// searchQueries reads a search's query: a non-empty string, or an array
// of them.
func searchQueries(raw json.RawMessage) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, fmt.Errorf("query: required, a string or an array of strings")
	}
	var qs []string
	if raw[0] == '"' {
		var q string
		if err := json.Unmarshal(raw, &q); err != nil {
			return nil, fmt.Errorf("query: %v", err)
		}
		qs = []string{q}
	} else if err := json.Unmarshal(raw, &qs); err != nil {
		return nil, fmt.Errorf("query: must be a string or an array of strings")
	}
	if len(qs) == 0 || len(qs) > maxSearchQueries {
		return nil, fmt.Errorf("query: from 1 to %d queries, got %d", maxSearchQueries, len(qs))
	}
	for i, q := range qs {
		if len(bytes.TrimSpace([]byte(q))) == 0 {
			return nil, fmt.Errorf("query[%d]: must not be empty", i)
		}
		if len(q) > maxSearchQuery {
			return nil, fmt.Errorf("query[%d]: at most %d bytes", i, maxSearchQuery)
		}
	}
	return qs, nil
}

// wireFilter is a filter as sent: a comparison (key, type, value) or a
// compound (type and/or, filters).
type wireFilter struct {
	Type    string            `json:"type"`
	Key     *string           `json:"key"`
	Value   json.RawMessage   `json:"value"`
	Filters []json.RawMessage `json:"filters"`
}

// parseFilter reads a request's filters (nil when absent) into the store's
// Filter; the store checks depth, counts and key lengths (ErrInvalid).
func parseFilter(raw json.RawMessage) (*docstore.Filter, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	if len(raw) > maxFilterBytes {
		return nil, fmt.Errorf("filters: at most %d bytes of JSON", maxFilterBytes)
	}
	f, err := filterAt(raw, "filters", 0)
	if err != nil {
		return nil, err
	}
	return &f, nil
}

func filterAt(raw json.RawMessage, path string, depth int) (docstore.Filter, error) {
	if depth > 8 {
		return docstore.Filter{}, fmt.Errorf("%s: nested more than 8 deep", path)
	}
	var w wireFilter
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(&w); err != nil {
		return docstore.Filter{}, fmt.Errorf("%s: must be a comparison {key, type, value} or a compound {type, filters}: %v", path, err)
	}
	switch w.Type {
	case "and", "or":
		if w.Key != nil || len(w.Value) > 0 {
			return docstore.Filter{}, fmt.Errorf("%s: a compound filter (%s) takes filters, not key or value", path, w.Type)
		}
		if len(w.Filters) == 0 {
			return docstore.Filter{}, fmt.Errorf("%s.filters: a compound filter needs at least one filter", path)
		}
		f := docstore.Filter{Type: w.Type}
		for i, sub := range w.Filters {
			sf, err := filterAt(sub, path+".filters["+strconv.Itoa(i)+"]", depth+1)
			if err != nil {
				return docstore.Filter{}, err
			}
			f.Filters = append(f.Filters, sf)
		}
		return f, nil
	case "eq", "ne", "gt", "gte", "lt", "lte", "in", "nin":
		if w.Filters != nil {
			return docstore.Filter{}, fmt.Errorf("%s: a comparison (%s) takes key and value, not filters", path, w.Type)
		}
		if w.Key == nil || *w.Key == "" {
			return docstore.Filter{}, fmt.Errorf("%s.key: required", path)
		}
		v, err := filterValue(w.Value, w.Type == "in" || w.Type == "nin")
		if err != nil {
			return docstore.Filter{}, fmt.Errorf("%s.value: %v", path, err)
		}
		return docstore.Filter{Type: w.Type, Key: *w.Key, Value: v}, nil
	}
	return docstore.Filter{}, fmt.Errorf("%s.type: must be eq, ne, gt, gte, lt, lte, in, nin, and or or, got %q", path, w.Type)
}

// filterValue reads a comparison's value: a string, number or boolean, or
// for in and nin an array of strings and numbers (shared.d.ts).
func filterValue(raw json.RawMessage, list bool) (any, error) {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, fmt.Errorf("required")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	scalar := func(v any, bools bool) (any, error) {
		switch x := v.(type) {
		case string:
			return x, nil
		case json.Number:
			f, err := x.Float64()
			if err != nil {
				return nil, err
			}
			return f, nil
		case bool:
			if bools {
				return x, nil
			}
		}
		return nil, fmt.Errorf("must be a string or a number%s", map[bool]string{true: " or a boolean", false: ""}[bools])
	}
	if arr, ok := v.([]any); ok {
		if !list {
			return nil, fmt.Errorf("an array is for in and nin only")
		}
		out := make([]any, 0, len(arr))
		for _, e := range arr {
			s, err := scalar(e, false)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	}
	if list {
		return nil, fmt.Errorf("in and nin take an array")
	}
	return scalar(v, true)
}
