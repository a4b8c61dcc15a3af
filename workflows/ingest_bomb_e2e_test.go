package workflows_test

import (
	"context"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/docstore"
	"github.com/longhaul-dev/longhaul/internal/testing/pdftest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
)

// TestIngestPDFBomb is the PDF bomb end to end on the real embedded
// Temporal, whose worker runs in this process: the 39 KB PDF that took
// longhaul dev from 164 MB to 3.3 GB ends as a failed file with a clear
// last_error, its extraction tried once, and this process's memory stays
// under 256 MiB above idle.
func TestIngestPDFBomb(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	data := pdftest.OperandBomb(t, 20<<20)
	above := pdftest.WatchRSS(t)
	run, in := attach(t, env, "bomb.pdf", "application/pdf", data, contract.IngestInput{})
	res := ingestResult(t, run)
	peak, idle := above()
	t.Logf("%d-byte PDF: %+v; memory peaked %d MiB above idle (%d MiB)", len(data), res, peak>>20, idle>>20)
	if res.Status != "failed" || res.Code != "invalid_file" || !strings.Contains(res.Message, "operands without an operator") {
		t.Fatalf("result %+v, want failed invalid_file about operands", res)
	}
	if peak > 256<<20 {
		t.Errorf("memory peaked %d MiB above idle, want under 256 MiB", peak>>20)
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
