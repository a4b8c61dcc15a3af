package workflows_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/workflows"
	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
)

func ingestEnv(t *testing.T) (*testsuite.TestWorkflowEnvironment, *activities.Activities) {
	t.Helper()
	return suiteEnv(t, workflows.IngestWorkflow, contract.IngestWorkflow)
}

var ingestIn = contract.IngestInput{Owner: "alice", VectorStoreID: "vs_1", FileID: "file-1", MaxChunkSizeTokens: 200, ChunkOverlapTokens: 100}

var ingestReq = contract.IngestRequest{Owner: "alice", VectorStoreID: "vs_1", FileID: "file-1", MaxChunkSizeTokens: 200, ChunkOverlapTokens: 100}

func finishReq(status, code, msg string) contract.FinishRequest {
	return contract.FinishRequest{Owner: "alice", VectorStoreID: "vs_1", FileID: "file-1", Status: status, Code: code, Message: msg}
}

func runIngest(t *testing.T, env *testsuite.TestWorkflowEnvironment) contract.IngestResult {
	t.Helper()
	env.ExecuteWorkflow(contract.IngestWorkflow, ingestIn)
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("completed %v, error %v", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
	var res contract.IngestResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	return res
}

// TestIngestWorkflow: extract, embed the parts, record completed; the
// result counts what was ingested and the details say so.
func TestIngestWorkflow(t *testing.T) {
	env, acts := ingestEnv(t)
	parts := []contract.ChunkPart{{Ref: "sha256:a", First: 0, Count: 2}, {Ref: "sha256:b", First: 2, Count: 1}}
	env.OnActivity(acts.ExtractChunks, mock.Anything, ingestReq).
		Return(contract.ChunkedFile{Parts: parts, Chunks: 3, Tokens: 512, Pages: 2, Format: "pdf"}, nil).Once()
	env.OnActivity(acts.EmbedChunks, mock.Anything, contract.EmbedRequest{Owner: "alice", VectorStoreID: "vs_1", FileID: "file-1", Chunks: 3, Parts: parts}).
		Return(contract.EmbedResult{Written: 3, Vectors: true}, nil).Once()
	env.OnActivity(acts.FinishIngest, mock.Anything, finishReq("completed", "", "")).Return(nil).Once()
	res := runIngest(t, env)
	if diff := cmp.Diff(contract.IngestResult{Status: "completed", Chunks: 3, Tokens: 512, Pages: 2}, res); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
}

// TestIngestWorkflowBadFile: a file ExtractChunks cannot read ends the run
// successfully, the attachment failed with the file's code, nothing
// embedded.
func TestIngestWorkflowBadFile(t *testing.T) {
	for _, code := range []string{"invalid_file", "unsupported_file"} {
		t.Run(code, func(t *testing.T) {
			env, acts := ingestEnv(t)
			env.OnActivity(acts.ExtractChunks, mock.Anything, ingestReq).
				Return(contract.ChunkedFile{Code: code, Message: "why"}, nil).Once()
			env.OnActivity(acts.FinishIngest, mock.Anything, finishReq("failed", code, "why")).Return(nil).Once()
			res := runIngest(t, env)
			if diff := cmp.Diff(contract.IngestResult{Status: "failed", Code: code, Message: "why"}, res); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

// TestIngestWorkflowEmbeddingFails: an embedding that keeps failing is
// retried, then the attachment fails with server_error: never left
// in_progress.
func TestIngestWorkflowEmbeddingFails(t *testing.T) {
	env, acts := ingestEnv(t)
	env.OnActivity(acts.ExtractChunks, mock.Anything, ingestReq).
		Return(contract.ChunkedFile{Parts: []contract.ChunkPart{{Ref: "sha256:a", Count: 1}}, Chunks: 1, Tokens: 9}, nil).Once()
	env.OnActivity(acts.EmbedChunks, mock.Anything, mock.Anything).
		Return(contract.EmbedResult{}, temporal.NewApplicationError("model endpoint answered 503: busy", longhaul.ErrTypeModelUnavailable)).Times(6)
	var got contract.FinishRequest
	env.OnActivity(acts.FinishIngest, mock.Anything, mock.Anything).Run(func(args mock.Arguments) {
		got = args.Get(1).(contract.FinishRequest)
	}).Return(nil).Once()
	res := runIngest(t, env)
	if res.Status != "failed" || res.Code != "server_error" || !strings.Contains(res.Message, "model endpoint answered 503: busy") {
		t.Errorf("result %+v", res)
	}
	if got.Status != "failed" || got.Code != "server_error" || got.Message != res.Message {
		t.Errorf("finish %+v", got)
	}
}

// TestIngestWorkflowEmbeddingRejected: an answer the endpoint will give
// again (a 4xx) is not retried.
func TestIngestWorkflowEmbeddingRejected(t *testing.T) {
	env, acts := ingestEnv(t)
	env.OnActivity(acts.ExtractChunks, mock.Anything, ingestReq).
		Return(contract.ChunkedFile{Parts: []contract.ChunkPart{{Ref: "sha256:a", Count: 1}}, Chunks: 1}, nil).Once()
	env.OnActivity(acts.EmbedChunks, mock.Anything, mock.Anything).
		Return(contract.EmbedResult{}, temporal.NewNonRetryableApplicationError("model endpoint answered 400: too long", longhaul.ErrTypeModelRejected, nil)).Once()
	env.OnActivity(acts.FinishIngest, mock.Anything, finishReq("failed", "server_error", "embedding the file's chunks failed: model endpoint answered 400: too long")).Return(nil).Once()
	if res := runIngest(t, env); res.Status != "failed" {
		t.Errorf("result %+v", res)
	}
}

// TestIngestWorkflowExtractFails: stores that keep failing fail the
// attachment with server_error after the retries.
func TestIngestWorkflowExtractFails(t *testing.T) {
	env, acts := ingestEnv(t)
	env.OnActivity(acts.ExtractChunks, mock.Anything, ingestReq).Return(contract.ChunkedFile{}, errors.New("database is locked")).Times(5)
	env.OnActivity(acts.FinishIngest, mock.Anything, finishReq("failed", "server_error", "extracting the file's text failed: database is locked")).Return(nil).Once()
	if res := runIngest(t, env); res.Status != "failed" || res.Code != "server_error" {
		t.Errorf("result %+v", res)
	}
}

// TestIngestWorkflowDetached: an attachment removed meanwhile ends the run
// cancelled.
func TestIngestWorkflowDetached(t *testing.T) {
	env, acts := ingestEnv(t)
	env.OnActivity(acts.ExtractChunks, mock.Anything, ingestReq).
		Return(contract.ChunkedFile{Parts: []contract.ChunkPart{{Ref: "sha256:a", Count: 1}}, Chunks: 1}, nil).Once()
	env.OnActivity(acts.EmbedChunks, mock.Anything, mock.Anything).Return(contract.EmbedResult{Detached: true}, nil).Once()
	env.OnActivity(acts.FinishIngest, mock.Anything, finishReq("cancelled", "", "the file was detached from the vector store")).Return(nil).Once()
	if res := runIngest(t, env); res.Status != "cancelled" {
		t.Errorf("result %+v", res)
	}
}
