package activities_test

import (
	"bytes"
	"compress/zlib"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/docstore"
	"github.com/longhaul-dev/longhaul/internal/extract"
)

// operandBomb is issue 36's PDF: one page whose content stream is "BT 1 1
// 1 … ET", n operands without an operator, compressed about 1000:1 (39 KB
// for 20 million operands).
func operandBomb(t testing.TB, n int) []byte {
	t.Helper()
	var z bytes.Buffer
	w, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	run := bytes.Repeat([]byte("1 "), 1<<16)
	_, _ = w.Write([]byte("BT "))
	for i := 0; i < n; i += 1 << 16 {
		_, _ = w.Write(run[:2*min(1<<16, n-i)])
	}
	_, _ = w.Write([]byte("ET"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
		fmt.Sprintf("<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream", z.Len(), z.String()),
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offs := make([]int, len(objs))
	for i, o := range objs {
		offs[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, o := range offs {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.Bytes()
}

// rss is the process's resident memory now.
func rss(t testing.TB) int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skipf("no /proc/self/statm: %v", err)
	}
	pages, err := strconv.ParseInt(strings.Fields(string(b))[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return pages * int64(os.Getpagesize())
}

// watchRSS samples the process's resident memory every few milliseconds
// until the returned function is called, which returns the peak above
// what it was when the watch began.
func watchRSS(t testing.TB) func() int64 {
	idle := rss(t)
	peak := idle
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				peak = max(peak, rss(t))
			}
		}
	})
	return func() int64 {
		close(done)
		wg.Wait()
		return peak - idle
	}
}

// TestExtractChunksPDFBomb: issue 36's 39 KB PDF, which took a worker to
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
		{"default", operandBomb(t, 20<<20), nil, "stacks over 100000 operands without an operator"},
		{"child out of memory", operandBomb(t, 4<<20), &extract.Child{Memory: 128 << 20, Limits: extract.Limits{MaxOperands: 1 << 30, MaxPageContent: 1 << 30}},
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
			above := watchRSS(t)
			start := time.Now()
			// fx.extract fails the test on an activity error: a retry.
			cf := fx.extract(t)
			peak := above()
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
