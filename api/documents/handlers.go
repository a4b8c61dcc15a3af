// Package documents serves OpenAI's files and vector stores APIs
// (/v1/files, /v1/vector_stores and their files, batches and search) over
// the document store. It is a package of its own so that these routes are
// read, changed and tested with a store and a fake ingester alone, without
// the chat engine: a file's ingestion, the one thing they start in the run
// engine, goes through the small Ingester interface, and the package
// imports no Temporal client. The server (package api) builds a Handlers
// and registers its methods in its routes table.
package documents

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/docstore"
	"github.com/longhaul-dev/longhaul/internal/memory"
)

// Ingester runs the ingestion of attached files (the IngestFile workflow).
type Ingester interface {
	// StartIngest starts the ingestion of in's file into its vector store.
	// fresh says the attachment is new: a run of an earlier attachment
	// under the same id is replaced; otherwise a running run is kept and
	// one that failed or never ran is started again. Its errors are the
	// API's (web.Error): a 503 when the run engine is unreachable.
	StartIngest(ctx context.Context, in contract.IngestInput, fresh bool) error
	// AwaitIngest waits for the ingestion run and returns its result.
	AwaitIngest(ctx context.Context, run string) (contract.IngestResult, error)
	// CancelIngest asks the run to stop; a run that is not there (ended,
	// or never started) is no error.
	CancelIngest(ctx context.Context, workflowID string) error
}

// Quotas bound what one principal stores and has being ingested; zero is
// no bound.
type Quotas struct {
	// Files is the most files a principal may store.
	Files int
	// FileBytes is the most bytes of files a principal may store.
	FileBytes int64
	// Ingestions is the most files a principal may have being ingested at
	// once.
	Ingestions int
}

// Handlers serves the documents routes.
type Handlers struct {
	// Docs keeps the files, vector stores and chunks; nil answers every
	// route 404 (see Require).
	Docs docstore.Store
	// Ingest starts, awaits and cancels the ingestion of attached files.
	Ingest Ingester
	// Embedder embeds search queries with the chunks' model; nil searches
	// by text only.
	Embedder memory.Embedder
	// MaxFileBytes bounds one uploaded file (LONGHAUL_MAX_FILE_BYTES).
	MaxFileBytes int64
	Quotas       Quotas
	// Log takes what the handlers log; nil is slog's default.
	Log *slog.Logger
}

// Require answers the documents' routes with a 404 on a server that keeps
// no documents, so that the handlers after it may use h.Docs.
func (h *Handlers) Require(c *fiber.Ctx) error {
	if _, err := h.docs(); err != nil {
		return err
	}
	return c.Next()
}

// Store is the document store, or the 404 of a server that has none.
func (h *Handlers) Store() (docstore.Store, error) { return h.docs() }

func (h *Handlers) docs() (docstore.Store, error) {
	if h.Docs == nil {
		return nil, web.NotFound("files and vector stores are off on this server (no document store)")
	}
	return h.Docs, nil
}

// StoreError translates a document store failure: not found is a 404 with
// notFound's message, the caller's bad input a 400 with the store's
// reason, a file over the limit a 413; anything else is the server's.
func (h *Handlers) StoreError(err error, notFound string) error {
	switch {
	case errors.Is(err, docstore.ErrNotFound):
		return web.NotFound(notFound)
	case errors.Is(err, docstore.ErrInvalid):
		return web.BadRequest(err.Error())
	case errors.Is(err, docstore.ErrTooLarge):
		return web.PayloadTooLarge(fmt.Sprintf("file is larger than the limit of %d bytes (LONGHAUL_MAX_FILE_BYTES)", h.MaxFileBytes))
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return web.Unavailable("the document store did not answer in time: " + err.Error())
	}
	return fmt.Errorf("document store: %w", err)
}

// log is h.Log, or slog's default when none is set.
func (h *Handlers) log() *slog.Logger {
	if h.Log == nil {
		return slog.Default()
	}
	return h.Log
}
