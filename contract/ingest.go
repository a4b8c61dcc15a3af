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
