package activities

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
)

// The retention job deletes the stored data of runs Temporal no longer
// keeps: a run's claim checks (its big tool outputs, its stored
// conversation, its archived events) and the chat turns it stored live as
// long as the run's history, which the namespace keeps for its retention
// after the run closes. A chat whose every turn expired goes with its last
// turn. Long-term memories are not a run's data: they follow their own
// policy (kept until deleted, at most LONGHAUL_MAX_MEMORIES a user), and
// so do backlog items (at most LONGHAUL_MAX_BACKLOG_ITEMS a user).

// RunDescriber is what the retention job asks Temporal about a run: whether
// it is still open and when it closed. client.Client has it.
type RunDescriber interface {
	DescribeWorkflowExecution(ctx context.Context, workflowID, runID string) (*workflowservice.DescribeWorkflowExecutionResponse, error)
}

// DeleteExpiredBlobs deletes the blobs created more than req.Retention ago,
// and the stored conversation turns, of every run that is not open and did
// not close within req.Retention: closed long enough ago, or gone from
// Temporal altogether. A run still open keeps its data however old it is,
// since it may read it again (its stored conversation, above all). It
// heartbeats once a run, and running it again after a failure deletes what
// is left. (Its name predates the turns; the schedule starts it by it.)
func (a *Activities) DeleteExpiredBlobs(ctx context.Context, req contract.RetentionRequest) (contract.RetentionResult, error) {
	if req.Retention <= 0 {
		return contract.RetentionResult{}, nonRetryable(longhaul.ErrTypeBadRetention, fmt.Errorf("retention %v must be positive", req.Retention))
	}
	if a.Blobs == nil {
		return contract.RetentionResult{}, nil // nothing stored here
	}
	if a.Runs == nil {
		return contract.RetentionResult{}, nonRetryable(longhaul.ErrTypeNoTemporal, errors.New("this worker cannot ask Temporal whether runs are open"))
	}
	cutoff := time.Now().Add(-req.Retention)
	runs, err := a.Blobs.RunsBefore(ctx, cutoff)
	if err != nil {
		return contract.RetentionResult{}, err
	}
	var res contract.RetentionResult
	for i, run := range runs {
		activity.RecordHeartbeat(ctx, i)
		expired, err := a.runExpired(ctx, run, cutoff)
		if err != nil {
			return res, err
		}
		if !expired {
			res.Kept++
			continue
		}
		n, err := a.Blobs.DeleteBefore(ctx, run, cutoff)
		if err != nil {
			return res, err
		}
		turns, err := a.Blobs.DeleteRunTurns(ctx, run)
		if err != nil {
			return res, err
		}
		res.Deleted += n
		res.Turns += turns
		res.Runs++
	}
	level := slog.LevelDebug
	if res.Deleted > 0 || res.Turns > 0 {
		level = slog.LevelInfo
	}
	a.log.Log(ctx, level, "retention: deleted the stored data of runs closed over the retention ago",
		"retention", req.Retention, "blobs", res.Deleted, "turns", res.Turns, "runs", res.Runs, "kept_runs", res.Kept)
	return res, nil
}

// runExpired reports whether the run (a workflow id; its latest execution
// counts) closed before cutoff or is unknown to Temporal.
func (a *Activities) runExpired(ctx context.Context, run string, cutoff time.Time) (bool, error) {
	d, err := a.Runs.DescribeWorkflowExecution(ctx, run, "")
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("describe run %s: %w", run, err)
	}
	info := d.GetWorkflowExecutionInfo()
	if info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING || info.GetCloseTime() == nil {
		return false, nil
	}
	return info.GetCloseTime().AsTime().Before(cutoff), nil
}
