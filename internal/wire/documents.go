package wire

import "encoding/json"

// The wire types of /v1/files and /v1/vector_stores, as openai-node 7.57.0
// (test/conformance's pin) types them: resources/files.d.ts (FileObject,
// FileDeleted, FileCreateParams), resources/vector-stores/vector-stores.d.ts
// (VectorStore, VectorStoreDeleted, VectorStoreSearchResponse, the create,
// update and search params, the chunking strategies),
// resources/vector-stores/files.d.ts (VectorStoreFile and its params,
// FileContentResponse), resources/vector-stores/file-batches.d.ts
// (VectorStoreFileBatch, FileBatchCreateParams) and resources/shared.d.ts
// (ComparisonFilter, CompoundFilter). Lists are CursorPage's shape
// (core/pagination.js: data, has_more; the next page is after the last
// item's id).

// FileObject is OpenAI's File.
type FileObject struct {
	ID        string `json:"id"`
	Object    string `json:"object"`
	Bytes     int64  `json:"bytes"`
	CreatedAt int64  `json:"created_at"`
	ExpiresAt *int64 `json:"expires_at,omitempty"`
	Filename  string `json:"filename"`
	Purpose   string `json:"purpose"`
	// Status is deprecated by OpenAI and always "processed" here: a file
	// is stored whole before it is answered.
	Status string `json:"status"`
}

// FileList answers GET /v1/files.
type FileList = CursorPage[FileObject]

// DeletedObject answers the DELETE routes: object is "file",
// "vector_store.deleted" or "vector_store.file.deleted".
type DeletedObject = Deleted

// FileCountsObject counts files by status.
type FileCountsObject struct {
	InProgress int `json:"in_progress"`
	Completed  int `json:"completed"`
	Failed     int `json:"failed"`
	Cancelled  int `json:"cancelled"`
	Total      int `json:"total"`
}

// ExpiresAfterObject is a vector store's expiration policy.
type ExpiresAfterObject struct {
	Anchor string `json:"anchor"`
	Days   int    `json:"days"`
}

// VectorStoreObject is OpenAI's VectorStore.
type VectorStoreObject struct {
	ID           string              `json:"id"`
	Object       string              `json:"object"`
	CreatedAt    int64               `json:"created_at"`
	Name         string              `json:"name"`
	UsageBytes   int64               `json:"usage_bytes"`
	FileCounts   FileCountsObject    `json:"file_counts"`
	Status       string              `json:"status"`
	ExpiresAfter *ExpiresAfterObject `json:"expires_after,omitempty"`
	ExpiresAt    *int64              `json:"expires_at"`
	LastActiveAt *int64              `json:"last_active_at"`
	Metadata     map[string]string   `json:"metadata"`
}

// VectorStoreList answers GET /v1/vector_stores.
type VectorStoreList = CursorPage[VectorStoreObject]

// StaticChunking is the static strategy's sizes.
type StaticChunking struct {
	MaxChunkSizeTokens int `json:"max_chunk_size_tokens"`
	ChunkOverlapTokens int `json:"chunk_overlap_tokens"`
}

// ChunkingObject is a chunking strategy: {"type":"auto"} or
// {"type":"static","static":{…}} in a request; always static in an answer.
type ChunkingObject struct {
	Type   string          `json:"type"`
	Static *StaticChunking `json:"static,omitempty"`
}

// LastErrorObject is why a file's ingestion failed.
type LastErrorObject struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// VectorStoreFileObject is OpenAI's VectorStoreFile.
type VectorStoreFileObject struct {
	ID               string           `json:"id"`
	Object           string           `json:"object"`
	UsageBytes       int64            `json:"usage_bytes"`
	CreatedAt        int64            `json:"created_at"`
	VectorStoreID    string           `json:"vector_store_id"`
	Status           string           `json:"status"`
	LastError        *LastErrorObject `json:"last_error"`
	ChunkingStrategy *ChunkingObject  `json:"chunking_strategy,omitempty"`
	Attributes       map[string]any   `json:"attributes"`
}

// VectorStoreFileList answers the list routes of a store's or a batch's
// files.
type VectorStoreFileList = CursorPage[VectorStoreFileObject]

// FileBatchObject is OpenAI's VectorStoreFileBatch.
type FileBatchObject struct {
	ID            string           `json:"id"`
	Object        string           `json:"object"`
	CreatedAt     int64            `json:"created_at"`
	VectorStoreID string           `json:"vector_store_id"`
	Status        string           `json:"status"`
	FileCounts    FileCountsObject `json:"file_counts"`
}

// TextContent is one piece of text in a search result or a file's
// content page.
type TextContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// SearchResult is OpenAI's VectorStoreSearchResponse.
type SearchResult struct {
	FileID     string         `json:"file_id"`
	Filename   string         `json:"filename"`
	Score      float64        `json:"score"`
	Attributes map[string]any `json:"attributes"`
	Content    []TextContent  `json:"content"`
}

// SearchPage answers POST /v1/vector_stores/{id}/search (openai-node reads
// it as a Page: data and object).
type SearchPage struct {
	Object      string         `json:"object"`
	SearchQuery []string       `json:"search_query"`
	Data        []SearchResult `json:"data"`
	HasMore     bool           `json:"has_more"`
	NextPage    *string        `json:"next_page"`
}

// ContentPage answers GET /v1/vector_stores/{id}/files/{file_id}/content.
type ContentPage struct {
	Object   string        `json:"object"`
	Data     []TextContent `json:"data"`
	HasMore  bool          `json:"has_more"`
	NextPage *string       `json:"next_page"`
}

// CreateVectorStoreRequest is POST /v1/vector_stores's body.
type CreateVectorStoreRequest struct {
	Name             *string             `json:"name"`
	Metadata         map[string]string   `json:"metadata"`
	ExpiresAfter     *ExpiresAfterObject `json:"expires_after"`
	FileIDs          []string            `json:"file_ids"`
	ChunkingStrategy *ChunkingObject     `json:"chunking_strategy"`
	// Description is OpenAI's, refused: the store keeps none.
	Description *string `json:"description"`
}

// UpdateVectorStoreRequest is POST /v1/vector_stores/{id}'s body; an
// explicit null expires_after removes the policy.
type UpdateVectorStoreRequest struct {
	Name         *string           `json:"name"`
	Metadata     map[string]string `json:"metadata"`
	ExpiresAfter json.RawMessage   `json:"expires_after"`
}

// AttachFileRequest is POST /v1/vector_stores/{id}/files's body.
type AttachFileRequest struct {
	FileID           string          `json:"file_id"`
	Attributes       map[string]any  `json:"attributes"`
	ChunkingStrategy *ChunkingObject `json:"chunking_strategy"`
}

// UpdateAttributesRequest is POST
// /v1/vector_stores/{id}/files/{file_id}'s body.
type UpdateAttributesRequest struct {
	Attributes map[string]any `json:"attributes"`
}

// BatchFile is one entry of a batch's files.
type BatchFile struct {
	FileID           string          `json:"file_id"`
	Attributes       map[string]any  `json:"attributes"`
	ChunkingStrategy *ChunkingObject `json:"chunking_strategy"`
}

// CreateBatchRequest is POST /v1/vector_stores/{id}/file_batches's body:
// file_ids or files, not both.
type CreateBatchRequest struct {
	FileIDs          []string        `json:"file_ids"`
	Files            []BatchFile     `json:"files"`
	Attributes       map[string]any  `json:"attributes"`
	ChunkingStrategy *ChunkingObject `json:"chunking_strategy"`
}

// RankingOptions are a search's ranking options.
type RankingOptions struct {
	Ranker         string   `json:"ranker"`
	ScoreThreshold *float64 `json:"score_threshold"`
}

// SearchRequest is POST /v1/vector_stores/{id}/search's body.
type SearchRequest struct {
	// Query is a string or an array of strings.
	Query          json.RawMessage `json:"query"`
	MaxNumResults  *int            `json:"max_num_results"`
	Filters        json.RawMessage `json:"filters"`
	RankingOptions *RankingOptions `json:"ranking_options"`
	RewriteQuery   *bool           `json:"rewrite_query"`
}
