package contract

// IngestWorkflow is the name of the workflow that ingests one file into one
// vector store: extract its text, chunk it, embed the chunks in batches and
// write them to the document store, each step an activity with retries.
// The API starts it when a file is attached (POST
// /v1/vector_stores/{id}/files, a file batch, an Open WebUI file part) with
// the workflow id IngestWorkflowID gives, so attaching the same file again
// starts nothing new.
const IngestWorkflow = "IngestFile"

// IngestInput is IngestWorkflow's input.
type IngestInput struct {
	// Owner is the principal's key, as the document store scopes by it.
	Owner         string `json:"owner"`
	VectorStoreID string `json:"vector_store_id"`
	FileID        string `json:"file_id"`
	// Chunking is the static strategy's sizes in tokens; zero = OpenAI's
	// defaults (800 and 400).
	MaxChunkSizeTokens int `json:"max_chunk_size_tokens,omitempty"`
	ChunkOverlapTokens int `json:"chunk_overlap_tokens,omitempty"`
}

// IngestResult is what IngestWorkflow returns; a file that cannot be
// ingested (unsupported, malformed, empty) ends the workflow successfully
// with Status "failed" and the reason in Code and Message, recorded on the
// attachment too.
type IngestResult struct {
	Status  string `json:"status"`
	Chunks  int    `json:"chunks"`
	Tokens  int    `json:"tokens"`
	Pages   int    `json:"pages,omitempty"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// IngestWorkflowID is the workflow id of the ingestion of a file into a
// vector store.
func IngestWorkflowID(vectorStoreID, fileID string) string {
	return "ingest-" + vectorStoreID + "-" + fileID
}

// IngestRequest names the file to ingest into a vector store, and the
// static chunking strategy's sizes (zero: OpenAI's defaults).
type IngestRequest struct {
	Owner              string `json:"owner"`
	VectorStoreID      string `json:"vector_store_id"`
	FileID             string `json:"file_id"`
	MaxChunkSizeTokens int    `json:"max_chunk_size_tokens,omitempty"`
	ChunkOverlapTokens int    `json:"chunk_overlap_tokens,omitempty"`
}

// ChunkPart is one stored part of a file's chunks: chunks First to
// First+Count-1, in the blob Ref.
type ChunkPart struct {
	Ref   string `json:"ref"`
	First int    `json:"first"`
	Count int    `json:"count"`
}

// ChunkedFile is what ExtractChunks made of a file: its chunks' parts and
// counts, or, when the file cannot be ingested, OpenAI's error code
// (unsupported_file, invalid_file) and message; or Status cancelled when
// the attachment is gone.
type ChunkedFile struct {
	Parts   []ChunkPart `json:"parts,omitempty"`
	Chunks  int         `json:"chunks"`
	Tokens  int         `json:"tokens"`
	Pages   int         `json:"pages,omitempty"`
	Format  string      `json:"format,omitempty"`
	Status  string      `json:"status,omitempty"`
	Code    string      `json:"code,omitempty"`
	Message string      `json:"message,omitempty"`
}

// EmbedRequest asks for a file's chunks, stored in Parts, to be embedded
// and written to the document store.
type EmbedRequest struct {
	Owner         string      `json:"owner"`
	VectorStoreID string      `json:"vector_store_id"`
	FileID        string      `json:"file_id"`
	Chunks        int         `json:"chunks"`
	Parts         []ChunkPart `json:"parts"`
}

// EmbedResult counts the chunks EmbedChunks wrote, and those it found
// already written (by an earlier attempt).
type EmbedResult struct {
	Written int `json:"written"`
	Skipped int `json:"skipped"`
	// Vectors is false when the worker has no embedder
	// (LONGHAUL_EMBED_MODEL unset): the chunks are kept for full-text
	// search only.
	Vectors bool `json:"vectors"`
	// Detached is set when the attachment went away meanwhile.
	Detached bool `json:"detached,omitempty"`
}

// FinishRequest records how an ingestion ended: Status completed, or
// failed with OpenAI's Code and Message.
type FinishRequest struct {
	Owner         string `json:"owner"`
	VectorStoreID string `json:"vector_store_id"`
	FileID        string `json:"file_id"`
	Status        string `json:"status"`
	Code          string `json:"code,omitempty"`
	Message       string `json:"message,omitempty"`
}
