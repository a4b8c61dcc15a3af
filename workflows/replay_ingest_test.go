package workflows_test

import (
	"path/filepath"
	"testing"

	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/workflows"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
)

// TestReplayIngestHistory replays a committed IngestFile run, a real
// ingestion of a two-page PDF (extracted, chunked, embedded in batches,
// completed), against the current code: ingestions of big files run for
// minutes, so an upgraded worker meets them mid-way.
func TestReplayIngestHistory(t *testing.T) {
	replayTest{
		file: filepath.Join("testdata", "ingest_history.json"),
		fn:   workflows.IngestWorkflow, name: contract.IngestWorkflow,
		shape: checkIngestShape, generate: generateIngestHistory,
	}.run(t)
}

// checkIngestShape: the three steps, in order.
func checkIngestShape(t *testing.T, h *historypb.History) {
	t.Helper()
	checkScheduledThenCompleted(t, h, []string{"ExtractChunks", "EmbedChunks", "FinishIngest"})
}

func generateIngestHistory(t *testing.T) (*testenv.Env, client.WorkflowRun) {
	t.Helper()
	env := testenv.Start(t, testenv.Options{EmbedBatch: 4})
	run, _ := attach(t, env, "logbook.pdf", "application/pdf", logbookPDF(t, 2), contract.IngestInput{MaxChunkSizeTokens: 200, ChunkOverlapTokens: 50})
	if res := ingestResult(t, run); res.Status != "completed" {
		t.Fatalf("result %+v", res)
	}
	return env, run
}
