package activities_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/docstore"
	"github.com/longhaul-dev/longhaul/internal/memory"
	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"go.temporal.io/sdk/testsuite"
)

// ingestFixture is the activities of ingestion on real SQLite stores, with
// one text file attached to one vector store.
type ingestFixture struct {
	acts  *activities.Activities
	docs  docstore.Store
	blobs store.Store
	model *llmtest.Server
	req   contract.IngestRequest
}

func newIngestFixture(t *testing.T, text string, vectors bool) *ingestFixture {
	t.Helper()
	ctx := context.Background()
	url := "sqlite://" + filepath.Join(t.TempDir(), "db.sqlite")
	docs, err := docstore.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = docs.Close() })
	blobs, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = blobs.Close() })
	fx := &ingestFixture{docs: docs, blobs: blobs, model: llmtest.New(t)}
	fx.acts = &activities.Activities{Docs: docs, Blobs: blobs, EmbedBatch: 2}
	if vectors {
		fx.acts.Embedder = memory.NewOpenAIEmbedder(fx.model.URL(), "", "embed", nil)
	}
	f, err := docs.PutFile(ctx, docstore.File{Owner: "u", Filename: "notes.txt", Purpose: "assistants", ContentType: "text/plain"}, strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	vs, err := docs.CreateVectorStore(ctx, docstore.VectorStore{Owner: "u", Name: "n"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := docs.AttachFile(ctx, docstore.VectorStoreFile{VectorStoreID: vs.ID, FileID: f.ID, Owner: "u", Run: "ingest-test"}); err != nil {
		t.Fatal(err)
	}
	fx.req = contract.IngestRequest{Owner: "u", VectorStoreID: vs.ID, FileID: f.ID, MaxChunkSizeTokens: 100, ChunkOverlapTokens: 20}
	return fx
}

func (fx *ingestFixture) env() *testsuite.TestActivityEnvironment {
	env := quietSuite().NewTestActivityEnvironment()
	env.RegisterActivity(fx.acts)
	return env
}

func (fx *ingestFixture) extract(t *testing.T) contract.ChunkedFile {
	t.Helper()
	cf, err := execute[contract.ChunkedFile](t, fx.env(), fx.acts.ExtractChunks, fx.req)
	if err != nil {
		t.Fatal(err)
	}
	return cf
}

func (fx *ingestFixture) embed(t *testing.T, cf contract.ChunkedFile) contract.EmbedResult {
	t.Helper()
	res, err := execute[contract.EmbedResult](t, fx.env(), fx.acts.EmbedChunks, contract.EmbedRequest{
		Owner: fx.req.Owner, VectorStoreID: fx.req.VectorStoreID, FileID: fx.req.FileID, Chunks: cf.Chunks, Parts: cf.Parts})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func longText() string {
	var b bytes.Buffer
	for i := range 60 {
		b.WriteString(strings.Repeat("word ", 10))
		b.WriteString("line ")
		b.WriteString(strings.Repeat("x", i%7+1))
		b.WriteString(".\n")
	}
	return b.String()
}

// TestExtractChunksParts: the chunks are stored in parts of the batch size,
// in order, and only references reach the result.
func TestExtractChunksParts(t *testing.T) {
	fx := newIngestFixture(t, longText(), true)
	cf := fx.extract(t)
	if cf.Code != "" || cf.Chunks < 5 || cf.Format != "text" {
		t.Fatalf("result %+v", cf)
	}
	next := 0
	for _, p := range cf.Parts {
		if p.First != next || p.Count < 1 || p.Count > 2 || !strings.HasPrefix(p.Ref, "sha256:") {
			t.Errorf("part %+v after chunk %d", p, next)
		}
		next += p.Count
	}
	if next != cf.Chunks {
		t.Errorf("parts hold %d chunks of %d", next, cf.Chunks)
	}
	// A second attempt stores the same parts.
	if again := fx.extract(t); len(again.Parts) != len(cf.Parts) || again.Parts[0] != cf.Parts[0] {
		t.Errorf("second attempt %+v", again.Parts)
	}
}

// TestEmbedChunksSkipsStored: chunks already written are neither embedded
// nor written again; the rest are, batch by batch.
func TestEmbedChunksSkipsStored(t *testing.T) {
	fx := newIngestFixture(t, longText(), true)
	cf := fx.extract(t)
	ctx := context.Background()
	// An earlier attempt wrote the first part (and one chunk of the second).
	pre := []docstore.Chunk{}
	for i := range cf.Parts[0].Count + 1 {
		pre = append(pre, docstore.Chunk{VectorStoreID: fx.req.VectorStoreID, FileID: fx.req.FileID, Index: i, Text: "old", Tokens: 1, Vector: llmtest.Embed("old", 64)})
	}
	if err := fx.docs.PutChunks(ctx, "u", pre); err != nil {
		t.Fatal(err)
	}
	res := fx.embed(t, cf)
	if res.Written != cf.Chunks-len(pre) || res.Skipped != len(pre) || !res.Vectors {
		t.Errorf("result %+v for %d chunks, %d stored", res, cf.Chunks, len(pre))
	}
	inputs := 0
	for _, r := range fx.model.EmbeddingRequests() {
		inputs += len(r.Input)
		if len(r.Input) > 2 {
			t.Errorf("a request of %d inputs, batch 2", len(r.Input))
		}
	}
	if inputs != res.Written {
		t.Errorf("%d texts embedded, %d written", inputs, res.Written)
	}
	chunks, err := fx.docs.Chunks(ctx, "u", fx.req.VectorStoreID, fx.req.FileID)
	if err != nil || len(chunks) != cf.Chunks {
		t.Fatalf("%d chunks, %v", len(chunks), err)
	}
	if chunks[0].Text != "old" || chunks[len(pre)].Text == "old" {
		t.Error("a stored chunk was rewritten, or a new one was not written")
	}
}

// TestIngestWithoutEmbedder: without an embedder the chunks are stored
// without vectors and full-text search finds them.
func TestIngestWithoutEmbedder(t *testing.T) {
	fx := newIngestFixture(t, "The harbour master keeps the tide tables.\n\n"+longText(), false)
	cf := fx.extract(t)
	res := fx.embed(t, cf)
	if res.Vectors || res.Written != cf.Chunks {
		t.Fatalf("result %+v", res)
	}
	ctx := context.Background()
	if _, err := fx.env().ExecuteActivity(fx.acts.FinishIngest, contract.FinishRequest{Owner: "u", VectorStoreID: fx.req.VectorStoreID, FileID: fx.req.FileID, Status: "completed"}); err != nil {
		t.Fatal(err)
	}
	hits, err := fx.docs.Search(ctx, docstore.Query{Owner: "u", VectorStoreIDs: []string{fx.req.VectorStoreID}, Text: "harbour tide", Mode: "text"})
	if err != nil || len(hits) == 0 || !strings.Contains(hits[0].Text, "harbour master") {
		t.Fatalf("search %+v, %v", hits, err)
	}
	if n := len(fx.model.EmbeddingRequests()); n != 0 {
		t.Errorf("%d embeddings requests without an embedder", n)
	}
}

// TestFinishIngestFailed: a failed ingestion records its error and keeps
// no chunks.
func TestFinishIngestFailed(t *testing.T) {
	fx := newIngestFixture(t, longText(), true)
	cf := fx.extract(t)
	fx.embed(t, cf)
	if _, err := fx.env().ExecuteActivity(fx.acts.FinishIngest, contract.FinishRequest{Owner: "u", VectorStoreID: fx.req.VectorStoreID, FileID: fx.req.FileID,
		Status: "failed", Code: "server_error", Message: "embedding failed"}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	vf, err := fx.docs.GetVectorStoreFile(ctx, "u", fx.req.VectorStoreID, fx.req.FileID)
	if err != nil || vf.Status != "failed" || vf.LastError == nil || vf.LastError.Code != "server_error" {
		t.Fatalf("attachment %+v, %v", vf, err)
	}
	if chunks, err := fx.docs.Chunks(ctx, "u", fx.req.VectorStoreID, fx.req.FileID); err != nil || len(chunks) != 0 {
		t.Errorf("%d chunks left, %v", len(chunks), err)
	}
}
