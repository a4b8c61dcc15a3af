package workflows_test

import (
	"testing"

	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"go.temporal.io/sdk/client"
)

// generateIngestHistory makes the run of testdata/ingest_history.json again
// (see replays) on the embedded server.
func generateIngestHistory(t *testing.T) (*testenv.Env, client.WorkflowRun) {
	t.Helper()
	env := testenv.Start(t, testenv.Options{EmbedBatch: 4})
	run, _ := attach(t, env, "logbook.pdf", "application/pdf", logbookPDF(t, 2), contract.IngestInput{MaxChunkSizeTokens: 200, ChunkOverlapTokens: 50})
	if res := ingestResult(t, run); res.Status != "completed" {
		t.Fatalf("result %+v", res)
	}
	return env, run
}
