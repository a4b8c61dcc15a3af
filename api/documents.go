package api

import (
	"context"

	"github.com/longhaul-dev/longhaul/api/documents"
	"github.com/longhaul-dev/longhaul/internal/docstore"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// documents is the documents routes' handlers (package documents) over
// the server's document store, ingesting through the runs service.
func (s *Server) documents() *documents.Handlers {
	return &documents.Handlers{
		Docs: s.cfg.Docs, Ingest: s.runs, Embedder: s.cfg.DocsEmbedder, MaxFileBytes: s.cfg.MaxFileBytes,
		Quotas: documents.Quotas{Files: s.cfg.Limits.Files, FileBytes: s.cfg.Limits.FileBytes, Ingestions: s.cfg.Limits.Ingestions},
		Log:    s.log,
	}
}

// What the chat and Responses handlers use of the documents package: a
// chat's file parts are stored, attached and ingested as uploads are, and
// a file_search tool names stores the caller must have.

// RankingOptions are a file_search tool's ranking options.
type RankingOptions = wire.RankingOptions

// OpenAI's default static chunking (see documents.DefaultChunkTokens).
const (
	defaultChunkTokens   = documents.DefaultChunkTokens
	defaultOverlapTokens = documents.DefaultOverlapTokens
)

var checkRanking = documents.CheckRanking

func (s *Server) docs() (docstore.Store, error) { return s.documents().Store() }

func (s *Server) docsError(err error, notFound string) error {
	return s.documents().StoreError(err, notFound)
}

func (s *Server) maxFileBytes() int64 { return s.cfg.MaxFileBytes }

func (s *Server) attachFile(ctx context.Context, owner, vsID, fileID, batchID string, attrs map[string]any, chunking docstore.ChunkingStrategy) (docstore.VectorStoreFile, error) {
	return s.documents().AttachFile(ctx, owner, vsID, fileID, batchID, attrs, chunking)
}

func (s *Server) fileRoom(ctx context.Context, owner string, adding int64) (int64, error) {
	return s.documents().FileRoom(ctx, owner, adding)
}

func (s *Server) storedWithin(ctx context.Context, owner string, f docstore.File) error {
	return s.documents().StoredWithin(ctx, owner, f)
}

func (s *Server) checkVectorStores(ctx context.Context, owner string, ids []string) error {
	return s.documents().CheckVectorStores(ctx, owner, ids)
}
