package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/chunk"
	"github.com/longhaul-dev/longhaul/internal/docstore"
	"github.com/longhaul-dev/longhaul/internal/extract"
	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/sashabaranov/go-openai"
	"go.temporal.io/sdk/activity"
)

// Ingestion (the IngestFile workflow) is three activities: ExtractChunks
// reads the file from the document store, extracts its text and cuts it
// into chunks, which it writes to the blob store in parts of one embedding
// batch each; EmbedChunks embeds the parts' chunks batch by batch and
// writes them to the document store, skipping those already there; and
// FinishIngest records the attachment's status. Workflow history holds
// only the parts' references and counts, never a file's text or vectors.

// DefaultEmbedBatch is the most texts one embeddings call sends when
// EmbedBatch is zero (LONGHAUL_EMBED_BATCH's default).
const DefaultEmbedBatch = 64

// IngestChunksKind is the blob kind of the parts of a file's chunks.
const IngestChunksKind = "ingest_chunks"

// maxPartBytes bounds the text of one part of a file's chunks (and so of
// one embeddings request): a part holds fewer chunks than the batch size
// when its chunks are long.
const maxPartBytes = 4 << 20

// embedBatch is the batch size of the embeddings calls.
func (a *Activities) embedBatch() int {
	if a.EmbedBatch > 0 {
		return a.EmbedBatch
	}
	return DefaultEmbedBatch
}

// defaultExtractor is the extractor of Activities without one: its
// default limits, and its children, are the process's.
var defaultExtractor extract.Child

func (a *Activities) extractor() *extract.Child {
	if a.Extractor != nil {
		return a.Extractor
	}
	return &defaultExtractor
}

// docsOff is the failure of an ingestion activity on a worker without the
// document store or the blob store.
func (a *Activities) docsOff() error {
	switch {
	case a.Docs == nil:
		return nonRetryable(longhaul.ErrTypeNoDocStore, errors.New("this worker has no document store"))
	case a.Blobs == nil:
		return nonRetryable(longhaul.ErrTypeNoStore, errors.New("this worker has no blob store"))
	}
	return nil
}

// partChunk is one chunk as a part stores it.
type partChunk struct {
	Index  int    `json:"i"`
	Text   string `json:"t"`
	Tokens int    `json:"n"`
}

// progress holds the details an activity's heartbeats record, set as it
// goes: what the Temporal UI shows of a running activity, and what a retry
// may go on from.
type progress[T any] struct {
	mu      sync.Mutex
	details T
}

func (p *progress[T]) set(v T) {
	p.mu.Lock()
	p.details = v
	p.mu.Unlock()
}

func (p *progress[T]) get() T {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.details
}

// heartbeatDetails is get, as heartbeatWith takes it.
func (p *progress[T]) heartbeatDetails() any { return p.get() }

// heartbeatProgress heartbeats initial now and then, every
// HeartbeatInterval until the returned stop, the details last set.
func (a *Activities) heartbeatProgress(ctx context.Context, initial string) (*progress[string], func()) {
	p := &progress[string]{details: initial}
	activity.RecordHeartbeat(ctx, initial)
	return p, a.heartbeatWith(ctx, p.heartbeatDetails)
}

// ExtractChunks clears the attachment's chunks (an ingestion started over
// writes a clean slate), extracts the file's text, cuts it into chunks by
// the strategy and stores them in parts of one embedding batch each. A file
// that cannot be read is no error: the result says why (Code, Message).
func (a *Activities) ExtractChunks(ctx context.Context, req contract.IngestRequest) (contract.ChunkedFile, error) {
	if err := a.docsOff(); err != nil {
		return contract.ChunkedFile{}, err
	}
	strategy, err := chunk.Resolve(req.MaxChunkSizeTokens, req.ChunkOverlapTokens)
	if err != nil {
		return contract.ChunkedFile{}, nonRetryable(longhaul.ErrTypeBadInput, err)
	}
	p, stop := a.heartbeatProgress(ctx, "reading the file")
	defer stop()
	if err := a.Docs.DeleteChunks(ctx, req.Owner, req.VectorStoreID, req.FileID, 0); err != nil {
		if errors.Is(err, docstore.ErrNotFound) {
			return detached(), nil
		}
		return contract.ChunkedFile{}, fmt.Errorf("clear chunks: %w", err)
	}
	f, err := a.Docs.GetFile(ctx, req.Owner, req.FileID)
	if errors.Is(err, docstore.ErrNotFound) {
		return contract.ChunkedFile{Code: extract.CodeInvalid, Message: "the file no longer exists"}, nil
	} else if err != nil {
		return contract.ChunkedFile{}, fmt.Errorf("get file: %w", err)
	}
	rc, err := a.Docs.OpenFile(ctx, req.Owner, req.FileID)
	if errors.Is(err, docstore.ErrNotFound) {
		return contract.ChunkedFile{Code: extract.CodeInvalid, Message: "the file no longer exists"}, nil
	} else if err != nil {
		return contract.ChunkedFile{}, fmt.Errorf("open file: %w", err)
	}
	p.set(fmt.Sprintf("extracting the text of %s (%d bytes)", f.Filename, f.Bytes))
	// A file the extraction refuses, or that kills its child process
	// (out of memory, out of time), is the file's failure, recorded
	// once: no attempt of this activity would fare better.
	doc, err := a.extractor().Extract(ctx, rc, f.Filename, f.ContentType)
	_ = rc.Close()
	if e, ok := extract.AsError(err); ok {
		return contract.ChunkedFile{Code: e.Code, Message: e.Message}, nil
	} else if err != nil {
		return contract.ChunkedFile{}, fmt.Errorf("extract: %w", err)
	}
	p.set(fmt.Sprintf("cutting %s into chunks", f.Filename))
	chunks, tokens, err := chunk.Split(doc.Text(), strategy)
	if err != nil {
		return contract.ChunkedFile{}, nonRetryable(longhaul.ErrTypeBadInput, err)
	}
	if len(chunks) == 0 {
		return contract.ChunkedFile{Code: extract.CodeInvalid, Message: "no text found in the file"}, nil
	}
	for i, c := range chunks {
		if len(c.Text) > docstore.MaxChunkBytes {
			return contract.ChunkedFile{Code: extract.CodeInvalid, Message: fmt.Sprintf(
				"chunk %d is %d bytes, over the limit of %d (the file's text is not prose: try a smaller max_chunk_size_tokens)", i, len(c.Text), docstore.MaxChunkBytes)}, nil
		}
	}
	out := contract.ChunkedFile{Chunks: len(chunks), Tokens: tokens, Pages: doc.PageCount(), Format: doc.Format}
	run := activity.GetInfo(ctx).WorkflowExecution.ID
	batch := a.embedBatch()
	for first := 0; first < len(chunks); {
		var part []partChunk
		size := 0
		for i := first; i < len(chunks) && len(part) < batch; i++ {
			if len(part) > 0 && size+len(chunks[i].Text) > maxPartBytes {
				break
			}
			part = append(part, partChunk{Index: i, Text: chunks[i].Text, Tokens: chunks[i].Tokens})
			size += len(chunks[i].Text)
		}
		data, err := json.Marshal(part)
		if err != nil {
			return contract.ChunkedFile{}, err
		}
		ref, err := a.Blobs.Put(ctx, store.Blob{Run: run, Kind: IngestChunksKind, Name: fmt.Sprintf("part-%06d", first), Data: data})
		if err != nil {
			return contract.ChunkedFile{}, fmt.Errorf("store chunks %d-%d: %w", first, first+len(part)-1, err)
		}
		out.Parts = append(out.Parts, contract.ChunkPart{Ref: ref, First: first, Count: len(part)})
		first += len(part)
		p.set(fmt.Sprintf("stored %d/%d chunks", first, len(chunks)))
	}
	return out, nil
}

func detached() contract.ChunkedFile {
	return contract.ChunkedFile{Status: docstore.StatusCancelled, Message: "the file was detached from the vector store"}
}

// EmbedChunks embeds the chunks of req's parts, one embeddings call per
// part, and writes them to the document store. Chunks an earlier attempt
// already wrote are skipped, so a worker that dies mid-file costs at most
// the batch it was embedding. It heartbeats its progress ("embedded
// 128/400 chunks").
func (a *Activities) EmbedChunks(ctx context.Context, req contract.EmbedRequest) (contract.EmbedResult, error) {
	if err := a.docsOff(); err != nil {
		return contract.EmbedResult{}, err
	}
	res := contract.EmbedResult{Vectors: a.Embedder != nil}
	p, stop := a.heartbeatProgress(ctx, fmt.Sprintf("embedded 0/%d chunks", req.Chunks))
	defer stop()
	stored, err := a.storedChunks(ctx, req)
	if errors.Is(err, docstore.ErrNotFound) {
		return contract.EmbedResult{Detached: true}, nil
	} else if err != nil {
		return contract.EmbedResult{}, err
	}
	done := 0
	for _, part := range req.Parts {
		written, err := a.embedPart(ctx, req, part, stored)
		if errors.Is(err, docstore.ErrNotFound) {
			return contract.EmbedResult{Detached: true}, nil
		} else if err != nil {
			return res, err
		}
		res.Written += written
		res.Skipped += part.Count - written
		done += part.Count
		p.set(fmt.Sprintf("embedded %d/%d chunks", done, req.Chunks))
	}
	return res, nil
}

// storedChunks are the indexes of the file's chunks already in the
// document store: an earlier attempt's. docstore.ErrNotFound says the file
// left the vector store.
func (a *Activities) storedChunks(ctx context.Context, req contract.EmbedRequest) (map[int]bool, error) {
	have, err := a.Docs.Chunks(ctx, req.Owner, req.VectorStoreID, req.FileID)
	if errors.Is(err, docstore.ErrNotFound) {
		return nil, err
	} else if err != nil {
		return nil, fmt.Errorf("read stored chunks: %w", err)
	}
	stored := make(map[int]bool, len(have))
	for _, c := range have {
		stored[c.Index] = true
	}
	return stored, nil
}

// embedPart embeds the chunks of part not yet stored, in one embeddings
// call, and writes them to the document store. It returns how many it
// wrote; docstore.ErrNotFound says the file left the vector store.
func (a *Activities) embedPart(ctx context.Context, req contract.EmbedRequest, part contract.ChunkPart, stored map[int]bool) (int, error) {
	missing := 0
	for i := part.First; i < part.First+part.Count; i++ {
		if !stored[i] {
			missing++
		}
	}
	if missing == 0 {
		return 0, nil
	}
	span := fmt.Sprintf("%d-%d", part.First, part.First+part.Count-1)
	b, err := a.Blobs.Get(ctx, part.Ref)
	if errors.Is(err, store.ErrNotFound) {
		return 0, nonRetryable(longhaul.ErrTypeLostBlob, fmt.Errorf("chunks %s: %w", span, err))
	} else if err != nil {
		return 0, fmt.Errorf("read chunks %s: %w", span, err)
	}
	var all []partChunk
	if err := json.Unmarshal(b.Data, &all); err != nil {
		return 0, nonRetryable(longhaul.ErrTypeLostBlob, fmt.Errorf("chunks %s: %w", span, err))
	}
	var todo []partChunk
	texts := []string{}
	for _, c := range all {
		if !stored[c.Index] {
			todo = append(todo, c)
			texts = append(texts, c.Text)
		}
	}
	var vecs [][]float32
	if a.Embedder != nil {
		if vecs, err = a.Embedder.Embed(ctx, texts); err != nil {
			return 0, a.embedError(ctx, err)
		}
		if len(vecs) != len(texts) {
			return 0, fmt.Errorf("embed: %d vectors for %d texts", len(vecs), len(texts))
		}
	}
	out := make([]docstore.Chunk, len(todo))
	for i, c := range todo {
		out[i] = docstore.Chunk{VectorStoreID: req.VectorStoreID, FileID: req.FileID, Index: c.Index, Text: c.Text, Tokens: c.Tokens}
		if vecs != nil {
			out[i].Vector = vecs[i]
		}
	}
	if err := a.Docs.PutChunks(ctx, req.Owner, out); err != nil {
		if errors.Is(err, docstore.ErrNotFound) {
			return 0, err
		}
		if errors.Is(err, docstore.ErrInvalid) {
			return 0, nonRetryable(longhaul.ErrTypeBadInput, fmt.Errorf("write chunks %s: %w", span, err))
		}
		return 0, fmt.Errorf("write chunks %s: %w", span, err)
	}
	return len(todo), nil
}

// embedError classifies an embedder's failure like a model call's: a 4xx
// answer is not retried, the rest is.
func (a *Activities) embedError(ctx context.Context, err error) error {
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	if errors.As(err, &apiErr) || errors.As(err, &reqErr) {
		return classifyModelError(ctx, err)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("embed: %w", err)
}

// FinishIngest sets the attachment's status; a failed ingestion leaves no
// chunks behind. It deletes the run's stored parts either way. An
// attachment that is gone (detached meanwhile) is no error.
func (a *Activities) FinishIngest(ctx context.Context, req contract.FinishRequest) error {
	if err := a.docsOff(); err != nil {
		return err
	}
	var lastErr *docstore.FileError
	if req.Status == docstore.StatusFailed {
		lastErr = &docstore.FileError{Code: req.Code, Message: req.Message}
		if err := a.Docs.DeleteChunks(ctx, req.Owner, req.VectorStoreID, req.FileID, 0); err != nil && !errors.Is(err, docstore.ErrNotFound) {
			return fmt.Errorf("clear chunks: %w", err)
		}
	}
	if err := a.Docs.SetStatus(ctx, req.Owner, req.VectorStoreID, req.FileID, req.Status, lastErr); err != nil && !errors.Is(err, docstore.ErrNotFound) {
		return fmt.Errorf("set status: %w", err)
	}
	if err := a.Blobs.DeleteRun(ctx, activity.GetInfo(ctx).WorkflowExecution.ID); err != nil {
		return fmt.Errorf("delete stored chunks: %w", err)
	}
	return nil
}
