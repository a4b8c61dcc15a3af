package documents

import (
	"context"
	"errors"
	"strconv"

	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/docstore"
)

// AttachFile attaches the owner's file fileID to the owner's vector store
// vsID (in the batch batchID, when not empty) and starts its ingestion,
// the IngestFile workflow, which sets the attachment's status when it
// ends. It is idempotent: attaching a file that is attached already
// returns that attachment as it is and starts no new run — except when
// the attachment is still in progress and its run never started or ended
// without recording a status (a start Temporal refused, a run
// terminated): that run is started again, under the same workflow id.
// A file attached anew after a detach gets a fresh run (a run of the
// earlier attachment still going is terminated: its chunks went with the
// detach).
//
// The errors are the API's: a store or file the owner lacks is a 404, bad
// attributes a 400, a new attachment past the owner's ingestions at once
// (LONGHAUL_MAX_INGESTIONS) a 429; a failed start is the Ingester's
// error (a 503 when the run engine is unreachable).
func (h *Handlers) AttachFile(ctx context.Context, owner, vsID, fileID, batchID string, attrs map[string]any, chunking docstore.ChunkingStrategy) (docstore.VectorStoreFile, error) {
	docs, err := h.docs()
	if err != nil {
		return docstore.VectorStoreFile{}, err
	}
	fresh := false
	vsf, err := docs.GetVectorStoreFile(ctx, owner, vsID, fileID)
	switch {
	case errors.Is(err, docstore.ErrNotFound):
		// The store and the file must both be the owner's; AttachFile
		// says which is missing no better than a lookup does.
		if _, err := docs.GetVectorStore(ctx, owner, vsID); err != nil {
			return docstore.VectorStoreFile{}, h.StoreError(err, "no vector store "+strconv.Quote(vsID))
		}
		if _, err := docs.GetFile(ctx, owner, fileID); err != nil {
			return docstore.VectorStoreFile{}, h.StoreError(err, "no file "+strconv.Quote(fileID))
		}
		if err := h.checkIngestions(ctx, owner, 1); err != nil {
			return docstore.VectorStoreFile{}, err
		}
		vsf, err = docs.AttachFile(ctx, docstore.VectorStoreFile{
			VectorStoreID: vsID, FileID: fileID, Owner: owner, BatchID: batchID,
			Status: docstore.StatusInProgress, Attributes: attrs, Chunking: chunking,
			Run: contract.IngestWorkflowID(vsID, fileID),
		})
		if err != nil {
			return docstore.VectorStoreFile{}, h.StoreError(err, "no vector store "+strconv.Quote(vsID)+" or file "+strconv.Quote(fileID))
		}
		fresh = true
	case err != nil:
		return docstore.VectorStoreFile{}, h.StoreError(err, "no vector store "+strconv.Quote(vsID))
	}
	if vsf.Status != docstore.StatusInProgress {
		return vsf, nil
	}
	in := contract.IngestInput{
		Owner: vsf.Owner, VectorStoreID: vsf.VectorStoreID, FileID: vsf.FileID,
		MaxChunkSizeTokens: vsf.Chunking.MaxChunkSizeTokens, ChunkOverlapTokens: vsf.Chunking.ChunkOverlapTokens,
	}
	if err := h.Ingest.StartIngest(ctx, in, fresh); err != nil {
		return docstore.VectorStoreFile{}, err
	}
	return vsf, nil
}
