package workflows_test

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-pdf/fpdf"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/docstore"
	"github.com/longhaul-dev/longhaul/internal/memory"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"go.temporal.io/sdk/client"
)

// ingestOwner is the principal the ingestion tests' files belong to.
const ingestOwner = "user:ingest"

// logbookPDF is a real PDF (fpdf) of pages pages, each a few paragraphs of
// distinct sentences, so no two chunks have the same text.
func logbookPDF(t testing.TB, pages int) []byte {
	t.Helper()
	f := fpdf.New("P", "mm", "A4", "")
	f.SetFont("Helvetica", "", 11)
	for p := range pages {
		f.AddPage()
		var b strings.Builder
		for s := range 30 {
			fmt.Fprintf(&b, "Entry %d.%d: the keeper noted %d ships passing the cape, wind from the %s, and lamp oil at %d gallons. ",
				p+1, s+1, (p*31+s*7)%23, []string{"north", "east", "south", "west"}[(p+s)%4], 40+(p*13+s)%50)
		}
		f.MultiCell(0, 5, b.String(), "", "L", false)
	}
	var buf bytes.Buffer
	if err := f.Output(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// attach stores data as a file of the owner, attaches it to a new vector
// store and starts its ingestion as the API does; it returns the run.
func attach(t *testing.T, env *testenv.Env, name, contentType string, data []byte, in contract.IngestInput) (client.WorkflowRun, contract.IngestInput) {
	t.Helper()
	ctx := context.Background()
	f, err := env.Docs.PutFile(ctx, docstore.File{Owner: ingestOwner, Filename: name, Purpose: "assistants", ContentType: contentType}, bytes.NewReader(data))
	if err != nil {
		t.Fatalf("put file: %v", err)
	}
	vs, err := env.Docs.CreateVectorStore(ctx, docstore.VectorStore{Owner: ingestOwner, Name: "test"})
	if err != nil {
		t.Fatalf("create vector store: %v", err)
	}
	in.Owner, in.VectorStoreID, in.FileID = ingestOwner, vs.ID, f.ID
	id := contract.IngestWorkflowID(vs.ID, f.ID)
	if _, err := env.Docs.AttachFile(ctx, docstore.VectorStoreFile{VectorStoreID: vs.ID, FileID: f.ID, Owner: ingestOwner, Run: id}); err != nil {
		t.Fatalf("attach: %v", err)
	}
	run, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: testenv.TaskQueue}, contract.IngestWorkflow, in)
	if err != nil {
		t.Fatalf("start ingestion: %v", err)
	}
	return run, in
}

func ingestResult(t *testing.T, run client.WorkflowRun) contract.IngestResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var res contract.IngestResult
	if err := run.Get(ctx, &res); err != nil {
		t.Fatalf("ingestion: %v", err)
	}
	return res
}

// checkChunks checks the attachment holds chunks 0..n-1, each once, and
// returns them.
func checkChunks(t *testing.T, env *testenv.Env, in contract.IngestInput, n int) []docstore.Chunk {
	t.Helper()
	chunks, err := env.Docs.Chunks(context.Background(), in.Owner, in.VectorStoreID, in.FileID)
	if err != nil {
		t.Fatal(err)
	}
	if len(chunks) != n {
		t.Fatalf("%d chunks stored, want %d", len(chunks), n)
	}
	for i, c := range chunks {
		if c.Index != i {
			t.Fatalf("chunk %d has index %d", i, c.Index)
		}
	}
	return chunks
}

// checkEmbeddedOnce checks the scripted model embedded the text of each
// of chunks once, and nothing else.
func checkEmbeddedOnce(t *testing.T, env *testenv.Env, chunks []docstore.Chunk) {
	t.Helper()
	seen := map[string]int{}
	total := 0
	for _, r := range env.Model.EmbeddingRequests() {
		for _, in := range r.Input {
			seen[in]++
			total++
		}
	}
	if total != len(chunks) {
		t.Errorf("%d texts embedded for %d chunks, want each once", total, len(chunks))
	}
	for _, c := range chunks {
		if seen[c.Text] != 1 {
			t.Errorf("chunk %d embedded %d times", c.Index, seen[c.Text])
		}
	}
}

// TestIngestEndToEnd: a PDF attached to a vector store is extracted,
// chunked, embedded in batches and written on the real embedded Temporal;
// the attachment completes, its chunks are searchable, no file text went
// into history and the run's stored parts are gone.
func TestIngestEndToEnd(t *testing.T) {
	env := testenv.Start(t, testenv.Options{EmbedBatch: 4})
	run, in := attach(t, env, "logbook.pdf", "application/pdf", logbookPDF(t, 4), contract.IngestInput{MaxChunkSizeTokens: 200, ChunkOverlapTokens: 50})
	res := ingestResult(t, run)
	if res.Status != "completed" || res.Pages != 4 || res.Chunks < 8 || res.Tokens < 1000 {
		t.Fatalf("result %+v", res)
	}
	chunks := checkChunks(t, env, in, res.Chunks)
	checkEmbeddedOnce(t, env, chunks)
	for _, c := range chunks {
		if c.Tokens <= 0 || c.Tokens > 200 {
			t.Errorf("chunk %d has %d tokens", c.Index, c.Tokens)
		}
	}
	for _, r := range env.Model.EmbeddingRequests() {
		if len(r.Input) > 4 {
			t.Errorf("an embeddings request of %d inputs, batch 4", len(r.Input))
		}
	}
	ctx := context.Background()
	vf, err := env.Docs.GetVectorStoreFile(ctx, in.Owner, in.VectorStoreID, in.FileID)
	if err != nil || vf.Status != docstore.StatusCompleted || vf.LastError != nil || vf.UsageBytes == 0 {
		t.Fatalf("attachment %+v, %v", vf, err)
	}
	hits, err := env.Docs.Search(ctx, docstore.Query{Owner: in.Owner, VectorStoreIDs: []string{in.VectorStoreID}, Text: "Entry 3.7",
		Vector: embedText(t, env, "Entry 3.7"), K: 3})
	if err != nil || len(hits) == 0 || hits[0].Filename != "logbook.pdf" {
		t.Fatalf("search: %+v, %v", hits, err)
	}
	blobs, err := env.Blobs.List(ctx, run.GetID())
	if err != nil || len(blobs) != 0 {
		t.Errorf("the run's stored parts after it ended: %d, %v", len(blobs), err)
	}
	h := fetchHistory(t, env, run)
	raw, err := h.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte("lamp oil")) {
		t.Error("the file's text is in the workflow history")
	}
	t.Logf("%d chunks, %d tokens, %d history events, %d bytes of history", res.Chunks, res.Tokens, len(h.Events), len(raw))
}

func embedText(t *testing.T, env *testenv.Env, s string) []float32 {
	t.Helper()
	v, err := memory.NewOpenAIEmbedder(env.Model.URL(), "", "llmtest-embed", nil).Embed(context.Background(), []string{s})
	if err != nil {
		t.Fatal(err)
	}
	return v[0]
}

// gate holds the second embeddings call until the worker running it is
// stopped (its context ends), once; every other call goes through.
type gate struct {
	inner   memory.Embedder
	mu      sync.Mutex
	calls   int
	reached chan struct{}
}

func (g *gate) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	g.mu.Lock()
	g.calls++
	hold := g.calls == 2
	g.mu.Unlock()
	if hold {
		close(g.reached)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return g.inner.Embed(ctx, texts)
}

// TestIngestWorkerKilled: the worker is stopped while it embeds the
// second batch of a file (the first is written); another worker finishes
// the file. Every chunk exists exactly once, with indices 0..n-1, and no
// chunk already written was embedded again.
func TestIngestWorkerKilled(t *testing.T) {
	g := &gate{reached: make(chan struct{})}
	env := testenv.Start(t, testenv.Options{EmbedBatch: 3, DocEmbedder: func(e memory.Embedder) memory.Embedder {
		g.inner = e
		return g
	}})
	run, in := attach(t, env, "logbook.pdf", "", logbookPDF(t, 3), contract.IngestInput{MaxChunkSizeTokens: 150, ChunkOverlapTokens: 30})
	select {
	case <-g.reached:
	case <-time.After(2 * time.Minute):
		t.Fatal("the second embeddings call never came")
	}
	written := checkChunks(t, env, in, 3) // the first batch, and no more
	env.StopWorker()
	env.StartWorker()
	res := ingestResult(t, run)
	if res.Status != "completed" || res.Chunks <= 6 {
		t.Fatalf("result %+v", res)
	}
	chunks := checkChunks(t, env, in, res.Chunks)
	checkEmbeddedOnce(t, env, chunks) // a written batch is not embedded again
	for i, c := range written {
		if chunks[i].Text != c.Text {
			t.Errorf("chunk %d changed after the restart", i)
		}
	}
}

// TestIngestBadFiles: a malformed PDF, an empty file, a zip bomb and a
// DOCX each end the ingestion with the attachment failed, a clear
// last_error and no chunks, without an embeddings call.
func TestIngestBadFiles(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	pdf := logbookPDF(t, 1)
	for _, tc := range []struct {
		name, filename string
		data           []byte
		code, message  string
	}{
		{"malformed pdf", "broken.pdf", append(append([]byte{}, pdf[:len(pdf)/2]...), pdf[len(pdf)/2+40:]...), "invalid_file", "malformed PDF"},
		{"empty file", "empty.txt", nil, "invalid_file", "the file is empty"},
		{"zip bomb", "bomb.zip", zipOfZeros(t, 64<<20), "unsupported_file", "zip archives are not supported"},
		{"docx bomb", "report.docx", zipOfZeros(t, 16<<20), "unsupported_file", "DOCX are not supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run, in := attach(t, env, tc.filename, "", tc.data, contract.IngestInput{})
			res := ingestResult(t, run)
			if res.Status != "failed" || res.Code != tc.code || !strings.Contains(res.Message, tc.message) {
				t.Fatalf("result %+v, want failed %s %q", res, tc.code, tc.message)
			}
			vf, err := env.Docs.GetVectorStoreFile(context.Background(), in.Owner, in.VectorStoreID, in.FileID)
			if err != nil || vf.Status != docstore.StatusFailed || vf.LastError == nil || vf.LastError.Code != tc.code || vf.LastError.Message != res.Message {
				t.Fatalf("attachment %+v (last error %+v), %v", vf, vf.LastError, err)
			}
			checkChunks(t, env, in, 0)
		})
	}
	if n := len(env.Model.EmbeddingRequests()); n != 0 {
		t.Errorf("%d embeddings requests for files without text", n)
	}
}

// zipOfZeros is a zip archive whose one entry inflates to n zero bytes.
func zipOfZeros(t *testing.T, n int64) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	// Zeros deflate as well at the fastest level, which keeps the test
	// quick under the race detector.
	zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) { return flate.NewWriter(w, flate.BestSpeed) })
	w, err := zw.Create("word/document.xml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(w, zeroReader{}, n); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }
