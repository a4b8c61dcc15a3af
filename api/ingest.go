package api

import (
	"context"
	"errors"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/longhaul-dev/longhaul/api/documents"
	"github.com/longhaul-dev/longhaul/contract"
)

// ingester runs file ingestions as IngestFile workflows in Temporal, for
// the documents routes and the file parts of chat requests.
type ingester struct{ s *Server }

var _ documents.Ingester = ingester{}

// StartIngest starts the ingestion run of an attachment in progress. A
// fresh attachment's run replaces any run under its id (one of an earlier
// attachment, detached since); an attachment found in progress gets its
// running run, or a new one if the last one failed or never ran
// (Temporal's ALLOW_DUPLICATE_FAILED_ONLY counts a terminated, cancelled
// or timed-out run as failed, and a completed run as done: the
// attachment's status is being recorded by it).
func (g ingester) StartIngest(ctx context.Context, in contract.IngestInput, fresh bool) error {
	s := g.s
	id := contract.IngestWorkflowID(in.VectorStoreID, in.FileID)
	opts := client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                s.cfg.TaskQueue,
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY,
		StaticSummary:            "ingest " + in.FileID + " into " + in.VectorStoreID,
		Memo:                     map[string]any{memoOwner: in.Owner},
	}
	if fresh {
		opts.WorkflowIDConflictPolicy = enums.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING
		opts.WorkflowIDReusePolicy = enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE
	}
	sctx, cancel := s.temporalCall(ctx)
	defer cancel()
	_, err := s.temporal.ExecuteWorkflow(sctx, opts, contract.IngestWorkflow, in)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	switch {
	case err == nil, errors.As(err, &started):
		// Already started: its last run completed, recording the status.
		return nil
	case unreachable(err):
		return errUnavailable("could not start ingesting " + in.FileID + ": " + err.Error())
	default:
		s.log.ErrorContext(ctx, "start ingestion", "workflow", id, "error", err)
		return errUnavailable("could not start ingesting " + in.FileID + ": " + err.Error())
	}
}

// AwaitIngest waits for the ingestion run to end, as long as ctx allows.
func (g ingester) AwaitIngest(ctx context.Context, run string) (contract.IngestResult, error) {
	var res contract.IngestResult
	err := g.s.temporal.GetWorkflow(ctx, run, "").Get(ctx, &res)
	return res, err
}

// CancelIngest asks the ingestion run to stop; a run already ended (or
// never started) is no error.
func (g ingester) CancelIngest(ctx context.Context, workflowID string) error {
	cctx, cancel := g.s.temporalCall(ctx)
	defer cancel()
	if err := g.s.temporal.CancelWorkflow(cctx, workflowID, ""); err != nil && !isNotFound(err) {
		return err
	}
	return nil
}

// isNotFound reports whether Temporal answered that the workflow is not
// there.
func isNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}
