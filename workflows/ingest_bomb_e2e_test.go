package workflows_test

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

	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/docstore"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
)

// operandBombPDF is issue 36's PDF: one page whose content stream is "BT 1
// 1 1 … ET", n operands without an operator, compressed about 1000:1.
func operandBombPDF(t testing.TB, n int) []byte {
	t.Helper()
	var z bytes.Buffer
	w, _ := zlib.NewWriterLevel(&z, zlib.DefaultCompression)
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

// residentBytes is this process's resident memory now.
func residentBytes(t testing.TB) int64 {
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

// TestIngestPDFBomb is issue 36's end-to-end case on the real embedded
// Temporal, whose worker runs in this process: the 39 KB PDF that took
// longhaul dev from 164 MB to 3.3 GB ends as a failed file with a clear
// last_error, its extraction tried once, and this process's memory stays
// under 256 MiB above idle.
func TestIngestPDFBomb(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	data := operandBombPDF(t, 20<<20)
	idle := residentBytes(t)
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
				peak = max(peak, residentBytes(t))
			}
		}
	})
	run, in := attach(t, env, "bomb.pdf", "application/pdf", data, contract.IngestInput{})
	res := ingestResult(t, run)
	close(done)
	wg.Wait()
	t.Logf("%d-byte PDF: %+v; memory peaked %d MiB above idle (%d MiB)", len(data), res, (peak-idle)>>20, idle>>20)
	if res.Status != "failed" || res.Code != "invalid_file" || !strings.Contains(res.Message, "operands without an operator") {
		t.Fatalf("result %+v, want failed invalid_file about operands", res)
	}
	if peak-idle > 256<<20 {
		t.Errorf("memory peaked %d MiB above idle, want under 256 MiB", (peak-idle)>>20)
	}
	vf, err := env.Docs.GetVectorStoreFile(context.Background(), in.Owner, in.VectorStoreID, in.FileID)
	if err != nil || vf.Status != docstore.StatusFailed || vf.LastError == nil || vf.LastError.Code != "invalid_file" {
		t.Fatalf("attachment %+v (last error %+v), %v", vf, vf.LastError, err)
	}
	checkChunks(t, env, in, 0)
	for _, e := range fetchHistory(t, env, run).Events {
		if a := e.GetActivityTaskStartedEventAttributes(); a != nil && a.GetAttempt() != 1 {
			t.Errorf("an activity ran %d times", a.GetAttempt())
		}
	}
}
