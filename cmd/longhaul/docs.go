package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/longhaul-dev/longhaul/internal/config"
	"github.com/longhaul-dev/longhaul/internal/docstore"
	"github.com/longhaul-dev/longhaul/internal/memory"
	"github.com/longhaul-dev/longhaul/internal/redact"
	"github.com/longhaul-dev/longhaul/internal/toolset"
	"github.com/longhaul-dev/longhaul/skills"
)

// openDocs opens the document store (files, vector stores and their
// chunks) on LONGHAUL_DATABASE_URL, beside the other stores.
func openDocs(ctx context.Context, cfg config.Config, log *slog.Logger) (docstore.Store, error) {
	docs, err := docstore.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, fmt.Errorf("LONGHAUL_DATABASE_URL (documents): %w", err)
	}
	if cfg.EmbedModel == "" {
		log.Info("documents are ingested without vectors: LONGHAUL_EMBED_MODEL is not set (file search is full-text only)", "store", docs.Backend())
	} else {
		base, _ := cfg.Embedder()
		log.Info("documents are ingested with vectors", "store", docs.Backend(), "embed_model", cfg.EmbedModel,
			"embed_url", redact.URLs(base), "embed_batch", cfg.EmbedBatch)
	}
	return docs, nil
}

// docEmbedder embeds documents' chunks with LONGHAUL_EMBED_MODEL, the
// model queries are embedded with; nil when it is not set.
func docEmbedder(cfg config.Config) memory.Embedder {
	if cfg.EmbedModel == "" {
		return nil
	}
	base, key := cfg.Embedder()
	return memory.NewOpenAIEmbedder(base, key, cfg.EmbedModel, nil)
}

// docSearch gives the worker's tools document_search on docs, its queries
// embedded with the chunks' model, its hits bounded under the model's cap
// on a tool result.
func docSearch(topts *toolset.Options, cfg config.Config, docs docstore.Store) {
	topts.Docs = docs
	if e := docEmbedder(cfg); e != nil {
		topts.DocsEmbedder = e
	}
	topts.DocsMaxChars = cfg.MaxToolChars * 3 / 4
}

// openTools opens the document store, points topts' document search at it
// (docSearch) and builds the tool set of cat; closeTools closes the set,
// then the store.
func openTools(ctx context.Context, cfg config.Config, cat *skills.Catalog, topts *toolset.Options, log *slog.Logger) (docstore.Store, *toolset.Set, func(), error) {
	docs, err := openDocs(ctx, cfg, log)
	if err != nil {
		return nil, nil, nil, err
	}
	docSearch(topts, cfg, docs)
	set, err := toolset.Build(ctx, cat, *topts, log)
	if err != nil {
		docs.Close()
		return nil, nil, nil, err
	}
	return docs, set, func() {
		set.Close()
		docs.Close()
	}, nil
}
