package documents

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
	"github.com/longhaul-dev/longhaul/internal/wire"
)

func noVectorStore(id string) string { return "no vector store " + strconv.Quote(id) }

// CreateVectorStore is POST /v1/vector_stores: name, metadata,
// expires_after, and file_ids attached at once with chunking_strategy.
func (h *Handlers) CreateVectorStore(c *fiber.Ctx) error {
	docs := h.Docs
	var req wire.CreateVectorStoreRequest
	if err := web.DecodeJSON(c.Body(), &req); err != nil {
		return err
	}
	if req.Description != nil {
		return web.BadRequest("description is not supported: a vector store here has a name and metadata")
	}
	exp, err := expiresAfter(req.ExpiresAfter)
	if err != nil {
		return web.BadRequest(err.Error())
	}
	strategy, err := chunking(req.ChunkingStrategy)
	if err != nil {
		return web.BadRequest(err.Error())
	}
	if req.ChunkingStrategy != nil && len(req.FileIDs) == 0 {
		return web.BadRequest("chunking_strategy: only with file_ids")
	}
	if len(req.FileIDs) > maxAttachAtOnce {
		return web.BadRequest(fmt.Sprintf("file_ids: at most %d files at once (add more with file batches)", maxAttachAtOnce))
	}
	ctx := c.UserContext()
	owner := web.Principal(c).User.Key()
	for _, id := range req.FileIDs {
		if _, err := docs.GetFile(ctx, owner, id); err != nil {
			return h.StoreError(err, "file_ids: no file "+strconv.Quote(id))
		}
	}
	if len(req.FileIDs) > 0 {
		if err := h.checkIngestions(ctx, owner, len(req.FileIDs)); err != nil {
			return err
		}
	}
	vs := docstore.VectorStore{Owner: owner, Metadata: req.Metadata, ExpiresAfter: exp}
	if req.Name != nil {
		vs.Name = *req.Name
	}
	vs, err = docs.CreateVectorStore(ctx, vs)
	if err != nil {
		return h.StoreError(err, "no vector store")
	}
	for _, id := range req.FileIDs {
		if _, err := h.AttachFile(ctx, owner, vs.ID, id, "", nil, strategy); err != nil {
			return err
		}
	}
	if len(req.FileIDs) > 0 {
		if vs, err = docs.GetVectorStore(ctx, owner, vs.ID); err != nil {
			return h.StoreError(err, noVectorStore(vs.ID))
		}
	}
	return c.JSON(vectorStoreObject(vs, time.Now()))
}

// ListVectorStores is GET /v1/vector_stores.
func (h *Handlers) ListVectorStores(c *fiber.Ctx) error {
	now := time.Now()
	return sendList(c, func(p docstore.Page) ([]docstore.VectorStore, bool, error) {
		list, more, err := h.Docs.ListVectorStores(c.UserContext(), web.Principal(c).User.Key(), p)
		if err != nil {
			return nil, false, h.StoreError(err, noVectorStore(p.After+p.Before))
		}
		return list, more, nil
	}, func(vs docstore.VectorStore) wire.VectorStoreObject { return vectorStoreObject(vs, now) },
		func(vs docstore.VectorStore) string { return vs.ID })
}

// GetVectorStore is GET /v1/vector_stores/{id}.
func (h *Handlers) GetVectorStore(c *fiber.Ctx) error {
	docs := h.Docs
	id := c.Params("id")
	vs, err := docs.GetVectorStore(c.UserContext(), web.Principal(c).User.Key(), id)
	if err != nil {
		return h.StoreError(err, noVectorStore(id))
	}
	return c.JSON(vectorStoreObject(vs, time.Now()))
}

// UpdateVectorStore is POST /v1/vector_stores/{id}: name, metadata,
// expires_after (null removes it).
func (h *Handlers) UpdateVectorStore(c *fiber.Ctx) error {
	docs := h.Docs
	var req wire.UpdateVectorStoreRequest
	if err := web.DecodeJSON(c.Body(), &req); err != nil {
		return err
	}
	u := docstore.VectorStoreUpdate{Name: req.Name, Metadata: req.Metadata}
	switch raw := bytes.TrimSpace(req.ExpiresAfter); {
	case len(raw) == 0:
	case bytes.Equal(raw, []byte("null")):
		u.ClearExpiry = true
	default:
		var e wire.ExpiresAfterObject
		if err := web.DecodeJSON(raw, &e); err != nil {
			return err
		}
		var err error
		if u.ExpiresAfter, err = expiresAfter(&e); err != nil {
			return web.BadRequest(err.Error())
		}
	}
	id := c.Params("id")
	vs, err := docs.UpdateVectorStore(c.UserContext(), web.Principal(c).User.Key(), id, u)
	if err != nil {
		return h.StoreError(err, noVectorStore(id))
	}
	return c.JSON(vectorStoreObject(vs, time.Now()))
}

// DeleteVectorStore is DELETE /v1/vector_stores/{id}: the store, its
// attachments and chunks; the files stay.
func (h *Handlers) DeleteVectorStore(c *fiber.Ctx) error {
	docs := h.Docs
	id := c.Params("id")
	if err := docs.DeleteVectorStore(c.UserContext(), web.Principal(c).User.Key(), id); err != nil {
		return h.StoreError(err, noVectorStore(id))
	}
	return c.JSON(wire.DeletedObject{ID: id, Object: "vector_store.deleted", Deleted: true})
}

// AttachVectorStoreFile is POST /v1/vector_stores/{id}/files: attach a
// file and start its ingestion (attaching it again changes nothing).
func (h *Handlers) AttachVectorStoreFile(c *fiber.Ctx) error {
	var req wire.AttachFileRequest
	if err := web.DecodeJSON(c.Body(), &req); err != nil {
		return err
	}
	if req.FileID == "" {
		return web.BadRequest("file_id: required")
	}
	strategy, err := chunking(req.ChunkingStrategy)
	if err != nil {
		return web.BadRequest(err.Error())
	}
	f, err := h.AttachFile(c.UserContext(), web.Principal(c).User.Key(), c.Params("id"), req.FileID, "", req.Attributes, strategy)
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
		return "", web.BadRequest("filter: must be in_progress, completed, failed or cancelled, got " + strconv.Quote(f))
	}
}

// ListVectorStoreFiles is GET /v1/vector_stores/{id}/files, and with a
// batch GET …/file_batches/{batch_id}/files.
func (h *Handlers) ListVectorStoreFiles(c *fiber.Ctx) error {
	return sendList(c, func(p docstore.Page) ([]docstore.VectorStoreFile, bool, error) {
		return h.vectorStoreFiles(c, p)
	}, vectorStoreFileObject, func(f docstore.VectorStoreFile) string { return f.FileID })
}

// vectorStoreFiles lists page p of the files of the request's vector
// store (or of its batch), filtered by status.
func (h *Handlers) vectorStoreFiles(c *fiber.Ctx, p docstore.Page) ([]docstore.VectorStoreFile, bool, error) {
	docs := h.Docs
	status, err := statusFilter(c)
	if err != nil {
		return nil, false, err
	}
	ctx := c.UserContext()
	owner := web.Principal(c).User.Key()
	vsID, batchID := c.Params("id"), c.Params("batch_id")
	if _, err := docs.GetVectorStore(ctx, owner, vsID); err != nil {
		return nil, false, h.StoreError(err, noVectorStore(vsID))
	}
	if batchID != "" {
		if _, err := docs.GetBatch(ctx, owner, vsID, batchID); err != nil {
			return nil, false, h.StoreError(err, noFileBatch(vsID, batchID))
		}
	}
	list, more, err := docs.ListVectorStoreFiles(ctx, owner, vsID, status, batchID, p)
	if err != nil {
		return nil, false, h.StoreError(err, noVectorStore(vsID))
	}
	return list, more, nil
}

func noVectorStoreFile(vsID, fileID string) string {
	return "no file " + strconv.Quote(fileID) + " in vector store " + strconv.Quote(vsID)
}

func noFileBatch(vsID, batchID string) string {
	return "no file batch " + strconv.Quote(batchID) + " in vector store " + strconv.Quote(vsID)
}

// GetVectorStoreFile is GET /v1/vector_stores/{id}/files/{file_id}.
func (h *Handlers) GetVectorStoreFile(c *fiber.Ctx) error {
	docs := h.Docs
	vsID, fileID := c.Params("id"), c.Params("file_id")
	f, err := docs.GetVectorStoreFile(c.UserContext(), web.Principal(c).User.Key(), vsID, fileID)
	if err != nil {
		return h.StoreError(err, noVectorStoreFile(vsID, fileID))
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

// UpdateVectorStoreFile is POST /v1/vector_stores/{id}/files/{file_id}:
// replace the attributes.
func (h *Handlers) UpdateVectorStoreFile(c *fiber.Ctx) error {
	docs := h.Docs
	var req wire.UpdateAttributesRequest
	if err := web.DecodeJSON(c.Body(), &req); err != nil {
		return err
	}
	vsID, fileID := c.Params("id"), c.Params("file_id")
	f, err := docs.UpdateAttributes(c.UserContext(), web.Principal(c).User.Key(), vsID, fileID, req.Attributes)
	if err != nil {
		return h.StoreError(err, noVectorStoreFile(vsID, fileID))
	}
	return c.JSON(vectorStoreFileObject(f))
}

// DetachVectorStoreFile is DELETE /v1/vector_stores/{id}/files/{file_id}:
// the attachment and its chunks go (the file stays), and an ingestion
// still running is cancelled.
func (h *Handlers) DetachVectorStoreFile(c *fiber.Ctx) error {
	docs := h.Docs
	ctx := c.UserContext()
	owner := web.Principal(c).User.Key()
	vsID, fileID := c.Params("id"), c.Params("file_id")
	f, err := docs.GetVectorStoreFile(ctx, owner, vsID, fileID)
	if err != nil {
		return h.StoreError(err, noVectorStoreFile(vsID, fileID))
	}
	if f.Status == docstore.StatusInProgress {
		h.cancelIngest(ctx, vsID, fileID)
	}
	if err := docs.DetachFile(ctx, owner, vsID, fileID); err != nil {
		return h.StoreError(err, noVectorStoreFile(vsID, fileID))
	}
	return c.JSON(wire.DeletedObject{ID: fileID, Object: "vector_store.file.deleted", Deleted: true})
}

// cancelIngest asks the ingestion run of a file to stop; a run already
// ended (or never started) is no error to the Ingester, and any other
// failure is logged, not answered: the detach or cancel goes on.
func (h *Handlers) cancelIngest(ctx context.Context, vsID, fileID string) {
	id := contract.IngestWorkflowID(vsID, fileID)
	if err := h.Ingest.CancelIngest(ctx, id); err != nil {
		h.log().WarnContext(ctx, "cancel an ingestion", "workflow", id, "error", err)
	}
}

// VectorStoreFileContent is GET
// /v1/vector_stores/{id}/files/{file_id}/content: the file's chunks' text,
// in order.
func (h *Handlers) VectorStoreFileContent(c *fiber.Ctx) error {
	docs := h.Docs
	ctx := c.UserContext()
	owner := web.Principal(c).User.Key()
	vsID, fileID := c.Params("id"), c.Params("file_id")
	if _, err := docs.GetVectorStoreFile(ctx, owner, vsID, fileID); err != nil {
		return h.StoreError(err, noVectorStoreFile(vsID, fileID))
	}
	chunks, err := docs.Chunks(ctx, owner, vsID, fileID)
	if err != nil {
		return h.StoreError(err, noVectorStoreFile(vsID, fileID))
	}
	out := wire.ContentPage{Object: "vector_store.file_content.page", Data: []wire.TextContent{}}
	for _, ch := range chunks {
		out.Data = append(out.Data, wire.TextContent{Type: "text", Text: ch.Text})
	}
	return c.JSON(out)
}

// CreateFileBatch is POST /v1/vector_stores/{id}/file_batches: file_ids
// (with attributes and chunking_strategy for all) or files (each with its
// own).
func (h *Handlers) CreateFileBatch(c *fiber.Ctx) error {
	docs := h.Docs
	var req wire.CreateBatchRequest
	if err := web.DecodeJSON(c.Body(), &req); err != nil {
		return err
	}
	var files []wire.BatchFile
	switch {
	case len(req.FileIDs) > 0 && len(req.Files) > 0:
		return web.BadRequest("file_ids and files: give one of them")
	case len(req.FileIDs) > 0:
		for _, id := range req.FileIDs {
			files = append(files, wire.BatchFile{FileID: id, Attributes: req.Attributes, ChunkingStrategy: req.ChunkingStrategy})
		}
	case len(req.Files) > 0:
		if req.Attributes != nil || req.ChunkingStrategy != nil {
			return web.BadRequest("attributes and chunking_strategy: with files, give them for each file")
		}
		files = req.Files
	default:
		return web.BadRequest("file_ids or files: required")
	}
	if len(files) > maxAttachAtOnce {
		return web.BadRequest(fmt.Sprintf("a batch has at most %d files", maxAttachAtOnce))
	}
	ctx := c.UserContext()
	owner := web.Principal(c).User.Key()
	vsID := c.Params("id")
	if _, err := docs.GetVectorStore(ctx, owner, vsID); err != nil {
		return h.StoreError(err, noVectorStore(vsID))
	}
	strategies := make([]docstore.ChunkingStrategy, len(files))
	seen := map[string]bool{}
	for i, f := range files {
		if f.FileID == "" {
			return web.BadRequest(fmt.Sprintf("files[%d].file_id: required", i))
		}
		if seen[f.FileID] {
			return web.BadRequest("file " + strconv.Quote(f.FileID) + " is in the batch twice")
		}
		seen[f.FileID] = true
		var err error
		if strategies[i], err = chunking(f.ChunkingStrategy); err != nil {
			return web.BadRequest(err.Error())
		}
		if _, err := docs.GetFile(ctx, owner, f.FileID); err != nil {
			return h.StoreError(err, "no file "+strconv.Quote(f.FileID))
		}
	}
	// The whole batch within the ingestions quota, or none of it.
	if err := h.checkIngestions(ctx, owner, len(files)); err != nil {
		return err
	}
	b, err := docs.CreateBatch(ctx, docstore.FileBatch{VectorStoreID: vsID, Owner: owner, Status: docstore.StatusInProgress})
	if err != nil {
		return h.StoreError(err, noVectorStore(vsID))
	}
	for i, f := range files {
		if _, err := h.AttachFile(ctx, owner, vsID, f.FileID, b.ID, f.Attributes, strategies[i]); err != nil {
			return err
		}
	}
	if b, err = docs.GetBatch(ctx, owner, vsID, b.ID); err != nil {
		return h.StoreError(err, "no file batch "+strconv.Quote(b.ID))
	}
	return c.JSON(fileBatchObject(b))
}

// GetFileBatch is GET /v1/vector_stores/{id}/file_batches/{batch_id}.
func (h *Handlers) GetFileBatch(c *fiber.Ctx) error {
	docs := h.Docs
	vsID, batchID := c.Params("id"), c.Params("batch_id")
	b, err := docs.GetBatch(c.UserContext(), web.Principal(c).User.Key(), vsID, batchID)
	if err != nil {
		return h.StoreError(err, noFileBatch(vsID, batchID))
	}
	pollAfter(c, b.Status)
	return c.JSON(fileBatchObject(b))
}

// CancelFileBatch is POST
// /v1/vector_stores/{id}/file_batches/{batch_id}/cancel: each file of the
// batch still in progress has its ingestion cancelled and is marked
// cancelled, its chunks dropped; a file whose ingestion ends first keeps
// the status it ended with.
func (h *Handlers) CancelFileBatch(c *fiber.Ctx) error {
	docs := h.Docs
	ctx := c.UserContext()
	owner := web.Principal(c).User.Key()
	vsID, batchID := c.Params("id"), c.Params("batch_id")
	if _, err := docs.GetBatch(ctx, owner, vsID, batchID); err != nil {
		return h.StoreError(err, noFileBatch(vsID, batchID))
	}
	var pending []string
	for p := (docstore.Page{Limit: 100, Ascending: true}); ; {
		list, more, err := docs.ListVectorStoreFiles(ctx, owner, vsID, docstore.StatusInProgress, batchID, p)
		if err != nil {
			return h.StoreError(err, noVectorStore(vsID))
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
		h.cancelIngest(ctx, vsID, fileID)
		err := docs.SetStatus(ctx, owner, vsID, fileID, docstore.StatusCancelled, nil)
		if err == nil {
			err = docs.DeleteChunks(ctx, owner, vsID, fileID, 0)
		}
		if err != nil && !errors.Is(err, docstore.ErrNotFound) {
			return h.StoreError(err, noVectorStoreFile(vsID, fileID))
		}
	}
	b, err := docs.GetBatch(ctx, owner, vsID, batchID)
	if err != nil {
		return h.StoreError(err, "no file batch "+strconv.Quote(batchID))
	}
	return c.JSON(fileBatchObject(b))
}

// SearchVectorStore is POST /v1/vector_stores/{id}/search.
func (h *Handlers) SearchVectorStore(c *fiber.Ctx) error {
	var req wire.SearchRequest
	if err := web.DecodeJSON(c.Body(), &req); err != nil {
		return err
	}
	queries, err := searchQueries(req.Query)
	if err != nil {
		return web.BadRequest(err.Error())
	}
	q := docstore.Query{Owner: web.Principal(c).User.Key(), VectorStoreIDs: []string{c.Params("id")}, K: 10}
	if req.MaxNumResults != nil {
		if *req.MaxNumResults < 1 || *req.MaxNumResults > 50 {
			return web.BadRequest("max_num_results: must be from 1 to 50")
		}
		q.K = *req.MaxNumResults
	}
	if q.Filter, err = parseFilter(req.Filters); err != nil {
		return web.BadRequest(err.Error())
	}
	if req.RewriteQuery != nil && *req.RewriteQuery {
		return web.BadRequest("rewrite_query is not supported: the query is searched as written")
	}
	if ro := req.RankingOptions; ro != nil {
		if err := CheckRanking(ro.Ranker); err != nil {
			return err
		}
		if ro.ScoreThreshold != nil {
			if *ro.ScoreThreshold < 0 || *ro.ScoreThreshold > 1 {
				return web.BadRequest("ranking_options.score_threshold: must be from 0 to 1")
			}
			q.ScoreThreshold = *ro.ScoreThreshold
		}
	}
	hits, err := h.searchDocs(c.UserContext(), q, queries)
	if err != nil {
		return err
	}
	out := wire.SearchPage{Object: "vector_store.search_results.page", SearchQuery: queries, Data: []wire.SearchResult{}}
	for _, h := range hits {
		out.Data = append(out.Data, wire.SearchResult{FileID: h.FileID, Filename: h.Filename, Score: h.Score, Attributes: h.Attributes,
			Content: []wire.TextContent{{Type: "text", Text: h.Text}}})
	}
	return c.JSON(out)
}

// CheckRanking accepts the rankers that mean this server's one ranking:
// none (no re-ranker) and auto (the server's choice). A named re-ranker
// model is refused: none runs here.
func CheckRanking(ranker string) error {
	switch ranker {
	case "", "none", "auto":
		return nil
	}
	return web.BadRequest("ranking_options.ranker: " + strconv.Quote(ranker) + " is not supported; this server ranks by hybrid search without a re-ranker (none or auto)")
}

// searchDocs runs q for each query (embedded with the documents' model
// when there is one, else full text only), keeps each chunk's best score,
// and returns the K best, most relevant first. The stores searched are
// touched (their expiry is counted from now).
func (h *Handlers) searchDocs(ctx context.Context, q docstore.Query, queries []string) ([]docstore.Hit, error) {
	docs := h.Docs
	for _, id := range q.VectorStoreIDs {
		if _, err := docs.GetVectorStore(ctx, q.Owner, id); err != nil {
			return nil, h.StoreError(err, noVectorStore(id))
		}
	}
	var vectors [][]float32
	q.Mode = "text"
	if h.Embedder != nil {
		v, err := h.Embedder.Embed(ctx, queries)
		if err != nil {
			return nil, web.Upstream("could not embed the query: " + err.Error())
		}
		if len(v) != len(queries) {
			return nil, web.Upstream(fmt.Sprintf("the embedder answered %d vectors for %d queries", len(v), len(queries)))
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
			return nil, h.StoreError(err, noVectorStore(fmt.Sprint(q.VectorStoreIDs)))
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
		h.log().WarnContext(ctx, "touch vector stores after a search", "error", err)
	}
	return out, nil
}

// CheckVectorStores checks that the owner has each of the stores a
// request names (a file_search tool's): another's, or an unknown one, is
// a 404.
func (h *Handlers) CheckVectorStores(ctx context.Context, owner string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	docs, err := h.docs()
	if err != nil {
		return err
	}
	for _, id := range ids {
		if _, err := docs.GetVectorStore(ctx, owner, id); err != nil {
			return h.StoreError(err, "file_search: "+noVectorStore(id))
		}
	}
	return nil
}
