package bench

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-pdf/fpdf"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/docstore"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"go.temporal.io/sdk/client"
)

// benchWords make the corpus's prose: common English words, so the
// tokenizer sees ordinary text (about 1.3 tokens a word).
var benchWords = strings.Fields(`the of and to in is was that for it as with be on by at this from had not are but
which or have an they one were all their there been has when who will more no if out so said what up its about into
than them can only other new some could time these two may then do first any my now such like our over man me even most
made after also did many before must through back years where much your way well down should because each just those
people how too little state good very make world still own see men work long get here between both life being under never
day same another know while last might us great old year off come since against go came right used take three harbour
keeper lamp ship storm tide winter coast light engine river valley council market letter journey evening morning`)

// benchPage is a page of prose: paragraphs of sentences of 8 to 20 words.
func benchPage(r *rand.Rand) string {
	var b strings.Builder
	for range 5 {
		for range 6 {
			n := 8 + r.IntN(13)
			for i := range n {
				w := benchWords[r.IntN(len(benchWords))]
				if i == 0 {
					w = strings.ToUpper(w[:1]) + w[1:]
				}
				b.WriteString(w)
				if i < n-1 {
					b.WriteByte(' ')
				}
			}
			b.WriteString(". ")
		}
		b.WriteString("\n\n")
	}
	return b.String()
}

// benchPDF is a PDF of pages pages of generated prose (fpdf, compressed).
func benchPDF(b *testing.B, r *rand.Rand, pages int) []byte {
	f := fpdf.New("P", "mm", "A4", "")
	f.SetFont("Times", "", 11)
	for range pages {
		f.AddPage()
		f.MultiCell(0, 5, benchPage(r), "", "L", false)
	}
	var buf bytes.Buffer
	if err := f.Output(&buf); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkIngest ingests a generated corpus of PDFs
// (LONGHAUL_BENCH_INGEST_PAGES pages in all, default 1000, in
// LONGHAUL_BENCH_INGEST_FILES files, default 10) through the IngestFile
// workflow on the real embedded Temporal server, all files at once, with
// the scripted model's embeddings (64 dimensions, no model latency: the
// figures are the engine's), OpenAI's default chunking and the default
// batch, and prints pages and chunks per second and the history bytes of
// one file's ingestion.
func BenchmarkIngest(b *testing.B) {
	pages := intsEnv(b, "LONGHAUL_BENCH_INGEST_PAGES", []int{1000})[0]
	files := intsEnv(b, "LONGHAUL_BENCH_INGEST_FILES", []int{10})[0]
	if files > pages {
		files = pages
	}
	r := rand.New(rand.NewPCG(26, 1))
	corpus := make([][]byte, files)
	size := 0
	genStart := time.Now()
	for i := range corpus {
		n := pages / files
		if i < pages%files {
			n++
		}
		corpus[i] = benchPDF(b, r, n)
		size += len(corpus[i])
	}
	gen := time.Since(genStart)
	env := testenv.Start(b, testenv.Options{})
	ctx := context.Background()
	const owner = "user:bench"
	vs, err := env.Docs.CreateVectorStore(ctx, docstore.VectorStore{Owner: owner, Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	runs := make([]client.WorkflowRun, files)
	for i, data := range corpus {
		f, err := env.Docs.PutFile(ctx, docstore.File{Owner: owner, Filename: fmt.Sprintf("corpus-%02d.pdf", i), Purpose: "assistants", ContentType: "application/pdf"}, bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		id := contract.IngestWorkflowID(vs.ID, f.ID)
		if _, err := env.Docs.AttachFile(ctx, docstore.VectorStoreFile{VectorStoreID: vs.ID, FileID: f.ID, Owner: owner, Run: id}); err != nil {
			b.Fatal(err)
		}
		runs[i], err = env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: testenv.TaskQueue}, contract.IngestWorkflow,
			contract.IngestInput{Owner: owner, VectorStoreID: vs.ID, FileID: f.ID})
		if err != nil {
			b.Fatal(err)
		}
	}
	var chunks, gotPages, tokens int
	for _, run := range runs {
		var res contract.IngestResult
		if err := run.Get(ctx, &res); err != nil || res.Status != "completed" {
			b.Fatalf("ingestion %s: %+v, %v", run.GetID(), res, err)
		}
		chunks += res.Chunks
		gotPages += res.Pages
		tokens += res.Tokens
	}
	took := time.Since(start)
	b.StopTimer()
	var historyBytes, events int
	for _, run := range runs {
		it := env.Client.GetWorkflowHistory(ctx, run.GetID(), run.GetRunID(), false, 0)
		for it.HasNext() {
			e, err := it.Next()
			if err != nil {
				b.Fatal(err)
			}
			historyBytes += e.Size()
			events++
		}
	}
	table := fmt.Sprintf("| files | pages | PDF bytes | chunks (800/400) | tokens | wall | pages/s | chunks/s | history per file |\n|---|---|---|---|---|---|---|---|---|\n"+
		"| %d | %d | %d | %d | %d | %s | %.1f | %.1f | %d bytes, %d events |\n",
		files, gotPages, size, chunks, tokens, took.Round(10*time.Millisecond),
		float64(gotPages)/took.Seconds(), float64(chunks)/took.Seconds(), historyBytes/files, events/files)
	fmt.Printf("\ncorpus generated in %s\n%s", gen.Round(time.Millisecond), table)
	if out := os.Getenv("LONGHAUL_BENCH_OUT"); out != "" {
		if f, err := os.OpenFile(out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			fmt.Fprint(f, "\n"+table)
			f.Close()
		}
	}
}
