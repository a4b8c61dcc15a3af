package workflows

import (
	"errors"
	"fmt"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/contract"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Ingestion statuses and the error code of a failure that is not the
// file's (OpenAI's vector store file statuses and last_error codes).
const (
	ingestCompleted = "completed"
	ingestFailed    = "failed"
	ingestCancelled = "cancelled"
	codeServerError = "server_error"
)

// IngestWorkflow ingests one file into one vector store (see
// contract.IngestWorkflow): ExtractChunks extracts and chunks it into the
// blob store, EmbedChunks embeds and writes the chunks, FinishIngest
// records the attachment's status. A file that cannot be ingested ends the
// run successfully with Status failed; so does an embedding that fails
// after its retries (server_error): the attachment never stays
// in_progress. Its current details in the Temporal UI say where it is;
// the running activity's heartbeat says how far ("embedded 128/400
// chunks").
func IngestWorkflow(ctx workflow.Context, in contract.IngestInput) (contract.IngestResult, error) {
	var a *activities.Activities
	req := contract.IngestRequest{
		Owner: in.Owner, VectorStoreID: in.VectorStoreID, FileID: in.FileID,
		MaxChunkSizeTokens: in.MaxChunkSizeTokens, ChunkOverlapTokens: in.ChunkOverlapTokens,
	}
	finish := func(res contract.IngestResult) (contract.IngestResult, error) {
		fr := contract.FinishRequest{Owner: in.Owner, VectorStoreID: in.VectorStoreID, FileID: in.FileID,
			Status: res.Status, Code: res.Code, Message: res.Message}
		if err := workflow.ExecuteActivity(finishOptions(ctx), a.FinishIngest, fr).Get(ctx, nil); err != nil {
			return res, err
		}
		workflow.SetCurrentDetails(ctx, ingestDetails(res))
		return res, nil
	}
	failed := func(code, msg string) (contract.IngestResult, error) {
		return finish(contract.IngestResult{Status: ingestFailed, Code: code, Message: msg})
	}

	workflow.SetCurrentDetails(ctx, "extracting text and cutting it into chunks")
	var cf contract.ChunkedFile
	if err := workflow.ExecuteActivity(extractOptions(ctx), a.ExtractChunks, req).Get(ctx, &cf); err != nil {
		return failed(codeServerError, "extracting the file's text failed: "+cause(err))
	}
	switch {
	case cf.Status == ingestCancelled:
		return finish(contract.IngestResult{Status: ingestCancelled, Message: cf.Message})
	case cf.Code != "":
		return failed(cf.Code, cf.Message)
	}
	res := contract.IngestResult{Status: ingestCompleted, Chunks: cf.Chunks, Tokens: cf.Tokens, Pages: cf.Pages}

	workflow.SetCurrentDetails(ctx, fmt.Sprintf("embedding %d chunks (%d tokens, %d pages) in %d batches", cf.Chunks, cf.Tokens, cf.Pages, len(cf.Parts)))
	er := contract.EmbedRequest{Owner: in.Owner, VectorStoreID: in.VectorStoreID, FileID: in.FileID, Chunks: cf.Chunks, Parts: cf.Parts}
	var emb contract.EmbedResult
	summary := fmt.Sprintf("embed %d chunks in %d batches", cf.Chunks, len(cf.Parts))
	if err := workflow.ExecuteActivity(embedOptions(ctx, summary), a.EmbedChunks, er).Get(ctx, &emb); err != nil {
		return failed(codeServerError, "embedding the file's chunks failed: "+cause(err))
	}
	if emb.Detached {
		return finish(contract.IngestResult{Status: ingestCancelled, Message: "the file was detached from the vector store"})
	}
	return finish(res)
}

// ingestDetails is the current details of an ended ingestion.
func ingestDetails(r contract.IngestResult) string {
	switch r.Status {
	case ingestCompleted:
		return fmt.Sprintf("completed: %d chunks, %d tokens, %d pages", r.Chunks, r.Tokens, r.Pages)
	case ingestFailed:
		return "failed: " + r.Code + ": " + r.Message
	}
	return r.Status + ": " + r.Message
}

// cause is an activity failure's own message, without the SDK's wrapping.
func cause(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Message()
	}
	return err.Error()
}
