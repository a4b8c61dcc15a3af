package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/docstore"
)

var decodeJSON = web.DecodeJSON

func noVectorStore(id string) string { return "no vector store " + strconv.Quote(id) }

// createVectorStore is POST /v1/vector_stores: name, metadata,
// expires_after, and file_ids attached at once with chunking_strategy.
func (s *Server) createVectorStore(c *fiber.Ctx) error {
	docs := s.cfg.Docs
	var req CreateVectorStoreRequest
	if err := decodeJSON(c.Body(), &req); err != nil {
		return err
	}
	if req.Description != nil {
		return errBadRequest("description is not supported: a vector store here has a name and metadata")
	}
	exp, err := expiresAfter(req.ExpiresAfter)
	if err != nil {
		return errBadRequest(err.Error())
	}
	strategy, err := chunking(req.ChunkingStrategy)
	if err != nil {
		return errBadRequest(err.Error())
	}
	if req.ChunkingStrategy != nil && len(req.FileIDs) == 0 {
		return errBadRequest("chunking_strategy: only with file_ids")
	}
	if len(req.FileIDs) > maxAttachAtOnce {
		return errBadRequest(fmt.Sprintf("file_ids: at most %d files at once (add more with file batches)", maxAttachAtOnce))
	}
	ctx := c.UserContext()
	owner := principal(c).User.Key()
	for _, id := range req.FileIDs {
		if _, err := docs.GetFile(ctx, owner, id); err != nil {
			return s.docsError(err, "file_ids: no file "+strconv.Quote(id))
		}
	}
	if len(req.FileIDs) > 0 {
		if err := s.checkIngestions(ctx, owner, len(req.FileIDs)); err != nil {
			return err
		}
	}
	vs := docstore.VectorStore{Owner: owner, Metadata: req.Metadata, ExpiresAfter: exp}
	if req.Name != nil {
		vs.Name = *req.Name
	}
	vs, err = docs.CreateVectorStore(ctx, vs)
	if err != nil {
		return s.docsError(err, "no vector store")
	}
	for _, id := range req.FileIDs {
		if _, err := s.attachFile(ctx, owner, vs.ID, id, "", nil, strategy); err != nil {
			return err
		}
	}
	if len(req.FileIDs) > 0 {
		if vs, err = docs.GetVectorStore(ctx, owner, vs.ID); err != nil {
			return s.docsError(err, noVectorStore(vs.ID))
		}
	}
	return c.JSON(vectorStoreObject(vs, time.Now()))
}

// listVectorStores is GET /v1/vector_stores.
func (s *Server) listVectorStores(c *fiber.Ctx) error {
	now := time.Now()
	return sendList(c, func(p docstore.Page) ([]docstore.VectorStore, bool, error) {
		list, more, err := s.cfg.Docs.ListVectorStores(c.UserContext(), principal(c).User.Key(), p)
		if err != nil {
			return nil, false, s.docsError(err, noVectorStore(p.After+p.Before))
		}
		return list, more, nil
	}, func(vs docstore.VectorStore) VectorStoreObject { return vectorStoreObject(vs, now) },
		func(vs docstore.VectorStore) string { return vs.ID })
}

// getVectorStore is GET /v1/vector_stores/{id}.
func (s *Server) getVectorStore(c *fiber.Ctx) error {
	docs := s.cfg.Docs
	id := c.Params("id")
	vs, err := docs.GetVectorStore(c.UserContext(), principal(c).User.Key(), id)
	if err != nil {
		return s.docsError(err, noVectorStore(id))
	}
	return c.JSON(vectorStoreObject(vs, time.Now()))
}

// updateVectorStore is POST /v1/vector_stores/{id}: name, metadata,
// expires_after (null removes it).
func (s *Server) updateVectorStore(c *fiber.Ctx) error {
	docs := s.cfg.Docs
	var req UpdateVectorStoreRequest
	if err := decodeJSON(c.Body(), &req); err != nil {
		return err
	}
	u := docstore.VectorStoreUpdate{Name: req.Name, Metadata: req.Metadata}
	switch raw := bytes.TrimSpace(req.ExpiresAfter); {
	case len(raw) == 0:
	case bytes.Equal(raw, []byte("null")):
		u.ClearExpiry = true
	default:
		var e ExpiresAfterObject
		if err := decodeJSON(raw, &e); err != nil {
			return err
		}
		var err error
		if u.ExpiresAfter, err = expiresAfter(&e); err != nil {
			return errBadRequest(err.Error())
		}
	}
	id := c.Params("id")
	vs, err := docs.UpdateVectorStore(c.UserContext(), principal(c).User.Key(), id, u)
	if err != nil {
		return s.docsError(err, noVectorStore(id))
	}
	return c.JSON(vectorStoreObject(vs, time.Now()))
}

// deleteVectorStore is DELETE /v1/vector_stores/{id}: the store, its
// attachments and chunks; the files stay.
func (s *Server) deleteVectorStore(c *fiber.Ctx) error {
	docs := s.cfg.Docs
	id := c.Params("id")
	if err := docs.DeleteVectorStore(c.UserContext(), principal(c).User.Key(), id); err != nil {
		return s.docsError(err, noVectorStore(id))
	}
	return c.JSON(DeletedObject{ID: id, Object: "vector_store.deleted", Deleted: true})
}

// attachVectorStoreFile is POST /v1/vector_stores/{id}/files: attach a
// file and start its ingestion (attaching it again changes nothing).
func (s *Server) attachVectorStoreFile(c *fiber.Ctx) error {
	var req AttachFileRequest
	if err := decodeJSON(c.Body(), &req); err != nil {
		return err
	}
	if req.FileID == "" {
		return errBadRequest("file_id: required")
	}
	strategy, err := chunking(req.ChunkingStrategy)
	if err != nil {
		return errBadRequest(err.Error())
	}
	f, err := s.attachFile(c.UserContext(), principal(c).User.Key(), c.Params("id"), req.FileID, "", req.Attributes, strategy)
	if err != nil {
		return err
	}
	return c.JSON(vectorStoreFileObject(f))
}

// statusFilter reads a file list's filter: a status or nothing.
func statusFilter(c *fiber.Ctx) (string, error) {
	switch f := c.Query("filter"); f {
	case "", docstore.StatusInProgress, docstore.StatusCompleted, docstore.StatusFailed, docstore.StatusCancelled:
		return f, nil
	default:
		return "", errBadRequest("filter: must be in_progress, completed, failed or cancelled, got " + strconv.Quote(f))
	}
}

// listVectorStoreFiles is GET /v1/vector_stores/{id}/files, and with a
// batch GET …/file_batches/{batch_id}/files.
func (s *Server) listVectorStoreFiles(c *fiber.Ctx) error {
	return sendList(c, func(p docstore.Page) ([]docstore.VectorStoreFile, bool, error) {
		return s.vectorStoreFiles(c, p)
	}, vectorStoreFileObject, func(f docstore.VectorStoreFile) string { return f.FileID })
}

// vectorStoreFiles lists page p of the files of the request's vector
// store (or of its batch), filtered by status.
func (s *Server) vectorStoreFiles(c *fiber.Ctx, p docstore.Page) ([]docstore.VectorStoreFile, bool, error) {
	docs := s.cfg.Docs
	status, err := statusFilter(c)
	if err != nil {
		return nil, false, err
	}
	ctx := c.UserContext()
	owner := principal(c).User.Key()
	vsID, batchID := c.Params("id"), c.Params("batch_id")
	if _, err := docs.GetVectorStore(ctx, owner, vsID); err != nil {
		return nil, false, s.docsError(err, noVectorStore(vsID))
	}
	if batchID != "" {
		if _, err := docs.GetBatch(ctx, owner, vsID, batchID); err != nil {
			return nil, false, s.docsError(err, noFileBatch(vsID, batchID))
		}
	}
	list, more, err := docs.ListVectorStoreFiles(ctx, owner, vsID, status, batchID, p)
	if err != nil {
		return nil, false, s.docsError(err, noVectorStore(vsID))
	}
	return list, more, nil
}

func noVectorStoreFile(vsID, fileID string) string {
	return "no file " + strconv.Quote(fileID) + " in vector store " + strconv.Quote(vsID)
}

func noFileBatch(vsID, batchID string) string {
	return "no file batch " + strconv.Quote(batchID) + " in vector store " + strconv.Quote(vsID)
}

// getVectorStoreFile is GET /v1/vector_stores/{id}/files/{file_id}.
func (s *Server) getVectorStoreFile(c *fiber.Ctx) error {
	docs := s.cfg.Docs
	vsID, fileID := c.Params("id"), c.Params("file_id")
	f, err := docs.GetVectorStoreFile(c.UserContext(), principal(c).User.Key(), vsID, fileID)
	if err != nil {
		return s.docsError(err, noVectorStoreFile(vsID, fileID))
	}
	pollAfter(c, f.Status)
	return c.JSON(vectorStoreFileObject(f))
}

// pollAfterMs is the poll interval a file or batch still in progress
// suggests: an ingestion of a few pages takes about a second.
const pollAfterMs = "500"

// pollAfter tells a client polling an ingestion when to ask again:
// openai-node's poll helpers (createAndPoll, uploadAndPoll, …) wait the
// openai-poll-after-ms header's milliseconds, else five seconds
// (openai 7.57.0 lib/polling.js:93-118).
func pollAfter(c *fiber.Ctx, status string) {
	if status == docstore.StatusInProgress {
		c.Set("openai-poll-after-ms", pollAfterMs)
	}
}

// updateVectorStoreFile is POST /v1/vector_stores/{id}/files/{file_id}:
// replace the attributes.
func (s *Server) updateVectorStoreFile(c *fiber.Ctx) error {
	docs := s.cfg.Docs
	var req UpdateAttributesRequest
	if err := decodeJSON(c.Body(), &req); err != nil {
		return err
	}
	vsID, fileID := c.Params("id"), c.Params("file_id")
	f, err := docs.UpdateAttributes(c.UserContext(), principal(c).User.Key(), vsID, fileID, req.Attributes)
	if err != nil {
		return s.docsError(err, noVectorStoreFile(vsID, fileID))
	}
	return c.JSON(vectorStoreFileObject(f))
}

// detachVectorStoreFile is DELETE /v1/vector_stores/{id}/files/{file_id}:
// the attachment and its chunks go (the file stays), and an ingestion
// still running is cancelled.
func (s *Server) detachVectorStoreFile(c *fiber.Ctx) error {
	docs := s.cfg.Docs
	ctx := c.UserContext()
	owner := principal(c).User.Key()
	vsID, fileID := c.Params("id"), c.Params("file_id")
	f, err := docs.GetVectorStoreFile(ctx, owner, vsID, fileID)
	if err != nil {
		return s.docsError(err, noVectorStoreFile(vsID, fileID))
	}
	if f.Status == docstore.StatusInProgress {
		s.cancelIngest(ctx, vsID, fileID)
	}
	if err := docs.DetachFile(ctx, owner, vsID, fileID); err != nil {
		return s.docsError(err, noVectorStoreFile(vsID, fileID))
	}
	return c.JSON(DeletedObject{ID: fileID, Object: "vector_store.file.deleted", Deleted: true})
}

// cancelIngest asks the ingestion run of a file to stop; a run already
// ended (or never started) is no error.
func (s *Server) cancelIngest(ctx context.Context, vsID, fileID string) {
	id := contract.IngestWorkflowID(vsID, fileID)
	if err := s.runs.CancelIngest(ctx, id); err != nil {
		s.log.WarnContext(ctx, "cancel an ingestion", "workflow", id, "error", err)
	}
}

// vectorStoreFileContent is GET
// /v1/vector_stores/{id}/files/{file_id}/content: the file's chunks' text,
// in order.
func (s *Server) vectorStoreFileContent(c *fiber.Ctx) error {
	docs := s.cfg.Docs
	ctx := c.UserContext()
	owner := principal(c).User.Key()
	vsID, fileID := c.Params("id"), c.Params("file_id")
	if _, err := docs.GetVectorStoreFile(ctx, owner, vsID, fileID); err != nil {
		return s.docsError(err, noVectorStoreFile(vsID, fileID))
	}
	chunks, err := docs.Chunks(ctx, owner, vsID, fileID)
	if err != nil {
		return s.docsError(err, noVectorStoreFile(vsID, fileID))
	}
	out := ContentPage{Object: "vector_store.file_content.page", Data: []TextContent{}}
	for _, ch := range chunks {
		out.Data = append(out.Data, TextContent{Type: "text", Text: ch.Text})
	}
	return c.JSON(out)
}

// createFileBatch is POST /v1/vector_stores/{id}/file_batches: file_ids
// (with attributes and chunking_strategy for all) or files (each with its
// own).
func (s *Server) createFileBatch(c *fiber.Ctx) error {
	docs := s.cfg.Docs
	var req CreateBatchRequest
	if err := decodeJSON(c.Body(), &req); err != nil {
		return err
	}
	var files []BatchFile
	switch {
	case len(req.FileIDs) > 0 && len(req.Files) > 0:
		return errBadRequest("file_ids and files: give one of them")
	case len(req.FileIDs) > 0:
		for _, id := range req.FileIDs {
			files = append(files, BatchFile{FileID: id, Attributes: req.Attributes, ChunkingStrategy: req.ChunkingStrategy})
		}
	case len(req.Files) > 0:
		if req.Attributes != nil || req.ChunkingStrategy != nil {
			return errBadRequest("attributes and chunking_strategy: with files, give them for each file")
		}
		files = req.Files
	default:
		return errBadRequest("file_ids or files: required")
	}
	if len(files) > maxAttachAtOnce {
		return errBadRequest(fmt.Sprintf("a batch has at most %d files", maxAttachAtOnce))
	}
	ctx := c.UserContext()
	owner := principal(c).User.Key()
	vsID := c.Params("id")
	if _, err := docs.GetVectorStore(ctx, owner, vsID); err != nil {
		return s.docsError(err, noVectorStore(vsID))
	}
	strategies := make([]docstore.ChunkingStrategy, len(files))
	seen := map[string]bool{}
	for i, f := range files {
		if f.FileID == "" {
			return errBadRequest(fmt.Sprintf("files[%d].file_id: required", i))
		}
		if seen[f.FileID] {
			return errBadRequest("file " + strconv.Quote(f.FileID) + " is in the batch twice")
		}
		seen[f.FileID] = true
		var err error
		if strategies[i], err = chunking(f.ChunkingStrategy); err != nil {
			return errBadRequest(err.Error())
		}
		if _, err := docs.GetFile(ctx, owner, f.FileID); err != nil {
			return s.docsError(err, "no file "+strconv.Quote(f.FileID))
		}
	}
	// The whole batch within the ingestions quota, or none of it.
	if err := s.checkIngestions(ctx, owner, len(files)); err != nil {
		return err
	}
	b, err := docs.CreateBatch(ctx, docstore.FileBatch{VectorStoreID: vsID, Owner: owner, Status: docstore.StatusInProgress})
	if err != nil {
		return s.docsError(err, noVectorStore(vsID))
	}
	for i, f := range files {
		if _, err := s.attachFile(ctx, owner, vsID, f.FileID, b.ID, f.Attributes, strategies[i]); err != nil {
			return err
		}
	}
	if b, err = docs.GetBatch(ctx, owner, vsID, b.ID); err != nil {
		return s.docsError(err, "no file batch "+strconv.Quote(b.ID))
	}
	return c.JSON(fileBatchObject(b))
}

// getFileBatch is GET /v1/vector_stores/{id}/file_batches/{batch_id}.
func (s *Server) getFileBatch(c *fiber.Ctx) error {
	docs := s.cfg.Docs
	vsID, batchID := c.Params("id"), c.Params("batch_id")
	b, err := docs.GetBatch(c.UserContext(), principal(c).User.Key(), vsID, batchID)
	if err != nil {
		return s.docsError(err, noFileBatch(vsID, batchID))
	}
	pollAfter(c, b.Status)
	return c.JSON(fileBatchObject(b))
}

// cancelFileBatch is POST
// /v1/vector_stores/{id}/file_batches/{batch_id}/cancel: each file of the
// batch still in progress has its ingestion cancelled and is marked
// cancelled, its chunks dropped; a file whose ingestion ends first keeps
// the status it ended with.
func (s *Server) cancelFileBatch(c *fiber.Ctx) error {
	docs := s.cfg.Docs
	ctx := c.UserContext()
	owner := principal(c).User.Key()
	vsID, batchID := c.Params("id"), c.Params("batch_id")
	if _, err := docs.GetBatch(ctx, owner, vsID, batchID); err != nil {
		return s.docsError(err, noFileBatch(vsID, batchID))
	}
	var pending []string
	for p := (docstore.Page{Limit: 100, Ascending: true}); ; {
		list, more, err := docs.ListVectorStoreFiles(ctx, owner, vsID, docstore.StatusInProgress, batchID, p)
		if err != nil {
			return s.docsError(err, noVectorStore(vsID))
		}
		for _, f := range list {
			pending = append(pending, f.FileID)
		}
		if !more || len(list) == 0 {
			break
		}
		p.After = list[len(list)-1].FileID
	}
	for _, fileID := range pending {
		s.cancelIngest(ctx, vsID, fileID)
		err := docs.SetStatus(ctx, owner, vsID, fileID, docstore.StatusCancelled, nil)
		if err == nil {
			err = docs.DeleteChunks(ctx, owner, vsID, fileID, 0)
		}
		if err != nil && !errors.Is(err, docstore.ErrNotFound) {
			return s.docsError(err, noVectorStoreFile(vsID, fileID))
		}
	}
	b, err := docs.GetBatch(ctx, owner, vsID, batchID)
	if err != nil {
		return s.docsError(err, "no file batch "+strconv.Quote(batchID))
	}
	return c.JSON(fileBatchObject(b))
}

// searchVectorStore is POST /v1/vector_stores/{id}/search.
func (s *Server) searchVectorStore(c *fiber.Ctx) error {
	var req SearchRequest
	if err := decodeJSON(c.Body(), &req); err != nil {
		return err
	}
	queries, err := searchQueries(req.Query)
	if err != nil {
		return errBadRequest(err.Error())
	}
	q := docstore.Query{Owner: principal(c).User.Key(), VectorStoreIDs: []string{c.Params("id")}, K: 10}
	if req.MaxNumResults != nil {
		if *req.MaxNumResults < 1 || *req.MaxNumResults > 50 {
			return errBadRequest("max_num_results: must be from 1 to 50")
		}
		q.K = *req.MaxNumResults
	}
	if q.Filter, err = parseFilter(req.Filters); err != nil {
		return errBadRequest(err.Error())
	}
	if req.RewriteQuery != nil && *req.RewriteQuery {
		return errBadRequest("rewrite_query is not supported: the query is searched as written")
	}
	if ro := req.RankingOptions; ro != nil {
		if err := checkRanking(ro.Ranker); err != nil {
			return err
		}
		if ro.ScoreThreshold != nil {
			if *ro.ScoreThreshold < 0 || *ro.ScoreThreshold > 1 {
				return errBadRequest("ranking_options.score_threshold: must be from 0 to 1")
			}
			q.ScoreThreshold = *ro.ScoreThreshold
		}
	}
	hits, err := s.searchDocs(c.UserContext(), q, queries)
	if err != nil {
		return err
	}
	out := SearchPage{Object: "vector_store.search_results.page", SearchQuery: queries, Data: []SearchResult{}}
	for _, h := range hits {
		out.Data = append(out.Data, SearchResult{FileID: h.FileID, Filename: h.Filename, Score: h.Score, Attributes: h.Attributes,
			Content: []TextContent{{Type: "text", Text: h.Text}}})
	}
	return c.JSON(out)
}

// checkRanking accepts the rankers that mean this server's one ranking:
// none (no re-ranker) and auto (the server's choice). A named re-ranker
// model is refused: none runs here.
func checkRanking(ranker string) error {
	switch ranker {
	case "", "none", "auto":
		return nil
	}
	return errBadRequest("ranking_options.ranker: " + strconv.Quote(ranker) + " is not supported; this server ranks by hybrid search without a re-ranker (none or auto)")
}

// searchDocs runs q for each query (embedded with the documents' model
// when there is one, else full text only), keeps each chunk's best score,
// and returns the K best, most relevant first. The stores searched are
// touched (their expiry is counted from now).
func (s *Server) searchDocs(ctx context.Context, q docstore.Query, queries []string) ([]docstore.Hit, error) {
	docs := s.cfg.Docs
	for _, id := range q.VectorStoreIDs {
		if _, err := docs.GetVectorStore(ctx, q.Owner, id); err != nil {
			return nil, s.docsError(err, noVectorStore(id))
		}
	}
	var vectors [][]float32
	q.Mode = "text"
	if s.cfg.DocsEmbedder != nil {
		v, err := s.cfg.DocsEmbedder.Embed(ctx, queries)
		if err != nil {
			return nil, errUpstream("could not embed the query: " + err.Error())
		}
		if len(v) != len(queries) {
			return nil, errUpstream(fmt.Sprintf("the embedder answered %d vectors for %d queries", len(v), len(queries)))
		}
		vectors, q.Mode = v, "hybrid"
	}
	type key struct {
		vs, file string
		index    int
	}
	best := map[key]docstore.Hit{}
	for i, text := range queries {
		qi := q
		qi.Text = text
		if vectors != nil {
			qi.Vector = vectors[i]
		}
		hits, err := docs.Search(ctx, qi)
		if err != nil {
			return nil, s.docsError(err, noVectorStore(fmt.Sprint(q.VectorStoreIDs)))
		}
		for _, h := range hits {
			k := key{h.VectorStoreID, h.FileID, h.Index}
			if old, ok := best[k]; !ok || h.Score > old.Score {
				best[k] = h
			}
		}
	}
	out := make([]docstore.Hit, 0, len(best))
	for _, h := range best {
		out = append(out, h)
	}
	slices.SortFunc(out, func(a, b docstore.Hit) int {
		switch {
		case a.Score != b.Score:
			if a.Score > b.Score {
				return -1
			}
			return 1
		case a.FileID != b.FileID:
			if a.FileID < b.FileID {
				return -1
			}
			return 1
		}
		return a.Index - b.Index
	})
	if len(out) > q.K {
		out = out[:q.K]
	}
	if err := docs.Touch(ctx, q.Owner, q.VectorStoreIDs...); err != nil {
		s.log.WarnContext(ctx, "touch vector stores after a search", "error", err)
	}
	return out, nil
}

// checkVectorStores checks that the owner has each of the stores a
// request names (a file_search tool's): another's, or an unknown one, is
// a 404.
func (s *Server) checkVectorStores(ctx context.Context, owner string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	docs, err := s.docs()
	if err != nil {
		return err
	}
	for _, id := range ids {
		if _, err := docs.GetVectorStore(ctx, owner, id); err != nil {
			return s.docsError(err, "file_search: "+noVectorStore(id))
		}
	}
	return nil
}
