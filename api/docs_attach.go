package api

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/docstore"
)

// attachFile attaches the owner's file fileID to the owner's vector store
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
// (LONGHAUL_MAX_INGESTIONS) a 429, an unreachable Temporal a 503.
func (s *Server) attachFile(ctx context.Context, owner, vsID, fileID, batchID string, attrs map[string]any, chunking docstore.ChunkingStrategy) (docstore.VectorStoreFile, error) {
	docs, err := s.docs()
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
			return docstore.VectorStoreFile{}, s.docsError(err, "no vector store "+strconv.Quote(vsID))
		}
		if _, err := docs.GetFile(ctx, owner, fileID); err != nil {
			return docstore.VectorStoreFile{}, s.docsError(err, "no file "+strconv.Quote(fileID))
		}
		if err := s.checkIngestions(ctx, owner, 1); err != nil {
			return docstore.VectorStoreFile{}, err
		}
		vsf, err = docs.AttachFile(ctx, docstore.VectorStoreFile{
			VectorStoreID: vsID, FileID: fileID, Owner: owner, BatchID: batchID,
			Status: docstore.StatusInProgress, Attributes: attrs, Chunking: chunking,
			Run: contract.IngestWorkflowID(vsID, fileID),
		})
		if err != nil {
			return docstore.VectorStoreFile{}, s.docsError(err, "no vector store "+strconv.Quote(vsID)+" or file "+strconv.Quote(fileID))
		}
		fresh = true
	case err != nil:
		return docstore.VectorStoreFile{}, s.docsError(err, "no vector store "+strconv.Quote(vsID))
	}
	if vsf.Status != docstore.StatusInProgress {
		return vsf, nil
	}
	if err := s.startIngest(ctx, vsf, fresh); err != nil {
		return docstore.VectorStoreFile{}, err
	}
	return vsf, nil
}

// startIngest starts the ingestion run of an attachment in progress. A
// fresh attachment's run replaces any run under its id (one of an earlier
// attachment, detached since); an attachment found in progress gets its
// running run, or a new one if the last one failed or never ran
// (Temporal's ALLOW_DUPLICATE_FAILED_ONLY counts a terminated, cancelled
// or timed-out run as failed, and a completed run as done: the
// attachment's status is being recorded by it).
func (s *Server) startIngest(ctx context.Context, vsf docstore.VectorStoreFile, fresh bool) error {
	in := contract.IngestInput{
		Owner: vsf.Owner, VectorStoreID: vsf.VectorStoreID, FileID: vsf.FileID,
		MaxChunkSizeTokens: vsf.Chunking.MaxChunkSizeTokens, ChunkOverlapTokens: vsf.Chunking.ChunkOverlapTokens,
	}
	err := s.runs.StartIngest(ctx, in, fresh)
	switch {
	case err == nil:
		return nil
	case unreachable(err):
		return errUnavailable("could not start ingesting " + vsf.FileID + ": " + err.Error())
	default:
		s.log.ErrorContext(ctx, "start ingestion", "workflow", contract.IngestWorkflowID(vsf.VectorStoreID, vsf.FileID), "error", err)
		return errUnavailable("could not start ingesting " + vsf.FileID + ": " + err.Error())
	}
}

// docs is the document store, or the 404 of a server that has none.
// requireDocs answers the documents' routes with a 404 on a server that
// keeps no documents, so their handlers may use s.cfg.Docs.
func (s *Server) requireDocs(c *fiber.Ctx) error {
	if _, err := s.docs(); err != nil {
		return err
	}
	return c.Next()
}

func (s *Server) docs() (docstore.Store, error) {
	if s.cfg.Docs == nil {
		return nil, errNotFound("files and vector stores are off on this server (no document store)")
	}
	return s.cfg.Docs, nil
}

// docsError translates a document store failure: not found is a 404 with
// notFound's message, the caller's bad input a 400 with the store's
// reason, a file over the limit a 413; anything else is the server's.
func (s *Server) docsError(err error, notFound string) error {
	switch {
	case errors.Is(err, docstore.ErrNotFound):
		return errNotFound(notFound)
	case errors.Is(err, docstore.ErrInvalid):
		return errBadRequest(err.Error())
	case errors.Is(err, docstore.ErrTooLarge):
		return errPayloadTooLarge(fmt.Sprintf("file is larger than the limit of %d bytes (LONGHAUL_MAX_FILE_BYTES)", s.maxFileBytes()))
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return errUnavailable("the document store did not answer in time: " + err.Error())
	}
	return fmt.Errorf("document store: %w", err)
}

// maxFileBytes is the upload limit.
func (s *Server) maxFileBytes() int64 { return s.cfg.MaxFileBytes }
