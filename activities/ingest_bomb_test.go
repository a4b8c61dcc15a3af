package activities_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/docstore"
	"github.com/longhaul-dev/longhaul/internal/extract"
	"github.com/longhaul-dev/longhaul/internal/testing/pdftest"
)

// TestExtractChunksPDFBomb: a 39 KB PDF, which took a worker to
// 3.3 GB, ends ExtractChunks as the file's invalid_file (which the
// ingestion records as failed, without retrying), the worker's memory
// staying within 256 MiB of idle: refused by the parser's bounds, or,
// with those off, by the child process's hard memory limit (the 8 KB
// PDF, which needs 430 MB, keeps that case quick under the race
// detector).
func TestExtractChunksPDFBomb(t *testing.T) {
	for _, tc := range []struct {
		name      string
		data      []byte
		extractor *extract.Child
		message   string
	}{
		{"default", pdftest.OperandBomb(t, 20<<20), nil, "stacks over 100000 operands without an operator"},
		{"child out of memory", pdftest.OperandBomb(t, 4<<20), &extract.Child{Memory: 128 << 20, Limits: extract.Limits{MaxOperands: 1 << 30, MaxPageContent: 1 << 30}},
			"needed more than 128 MiB of memory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newIngestFixture(t, "placeholder", false)
			data := tc.data
			fx.acts.Extractor = tc.extractor
			ctx := context.Background()
			f, err := fx.docs.PutFile(ctx, docstore.File{Owner: "u", Filename: "bomb.pdf", Purpose: "assistants", ContentType: "application/pdf"}, bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := fx.docs.AttachFile(ctx, docstore.VectorStoreFile{VectorStoreID: fx.req.VectorStoreID, FileID: f.ID, Owner: "u", Run: "ingest-bomb"}); err != nil {
				t.Fatal(err)
			}
			fx.req.FileID = f.ID
			above := pdftest.WatchRSS(t)
			start := time.Now()
			// fx.extract fails the test on an activity error: a retry.
			cf := fx.extract(t)
			peak, _ := above()
			t.Logf("%d-byte PDF: %s: %s in %v; the worker's memory peaked %d MiB above idle", len(data), cf.Code, cf.Message, time.Since(start), peak>>20)
			if cf.Code != extract.CodeInvalid || !strings.Contains(cf.Message, tc.message) || len(cf.Parts) != 0 {
				t.Errorf("result %+v, want invalid_file containing %q", cf, tc.message)
			}
			if peak > 256<<20 {
				t.Errorf("the worker's memory peaked %d MiB above idle, want under 256 MiB", peak>>20)
			}
		})
	}
}
