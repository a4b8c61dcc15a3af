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

// The retention job deletes the stored blobs of runs Temporal no longer
// keeps: a run's claim checks (its big tool outputs, its stored
// conversation, its archived events) live as long as the run's history,
// which the namespace keeps for its retention after the run closes.

// RunDescriber is what the retention job asks Temporal about a run: whether
// it is still open and when it closed. client.Client has it.
type RunDescriber interface {
	DescribeWorkflowExecution(ctx context.Context, workflowID, runID string) (*workflowservice.DescribeWorkflowExecutionResponse, error)
}

// RetentionRequest asks for the blobs of runs that closed more than
// Retention ago to be deleted.
type RetentionRequest struct {
	Retention time.Duration `json:"retention"`
}

// DeleteExpiredBlobs deletes the blobs created more than req.Retention ago
// of every run that is not open and did not close within req.Retention:
// closed long enough ago, or gone from Temporal altogether. A run still
// open keeps its blobs however old they are, since it may read them again
// (its stored conversation, above all). It heartbeats once a run, and
// running it again after a failure deletes what is left.
func (a *Activities) DeleteExpiredBlobs(ctx context.Context, req RetentionRequest) (contract.RetentionResult, error) {
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
		res.Deleted += n
		res.Runs++
	}
	level := slog.LevelDebug
	if res.Deleted > 0 {
		level = slog.LevelInfo
	}
	a.log.Log(ctx, level, "retention: deleted the stored blobs of runs closed over the retention ago",
		"retention", req.Retention, "blobs", res.Deleted, "runs", res.Runs, "kept_runs", res.Kept)
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
