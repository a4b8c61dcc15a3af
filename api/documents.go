package api

import (
	"github.com/longhaul-dev/longhaul/api/documents"
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
