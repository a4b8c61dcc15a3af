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
// keeps, and of schedules of runs that are gone: a schedule's big images
// stay while it exists or a run it started is open. A run's claim checks
// (its big tool outputs, its stored conversation, its archived events) and
// the chat turns it stored live as long as the run's history, which the
// namespace keeps for its retention after the run closes. A chat whose
// every turn expired goes with its last turn. Long-term memories are not a
// run's data: they follow their own policy (kept until deleted, at most
// LONGHAUL_MAX_MEMORIES a user), and so do backlog items (at most
// LONGHAUL_MAX_BACKLOG_ITEMS a user). Webhook delivery records are
// retained like runs (older ones go, and at most store.MaxDeliveries a
// webhook in between), and so is the webhook a single run was started
// with: it goes once its run closed over the retention ago. A principal's
// subscriptions stay until deleted.

// RunDescriber is what the retention job asks Temporal about a run: whether
// it is still open and when it closed. client.Client has it.
type RunDescriber interface {
	DescribeWorkflowExecution(ctx context.Context, workflowID, runID string) (*workflowservice.DescribeWorkflowExecutionResponse, error)
}

// ScheduleKeeper says whether the data stored under a schedule of runs
// (its messages' big images, stored under its id: runs.Gate.ClaimSchedule)
// must stay: while the schedule exists, or a run it started is open.
// runs.Fires is one.
type ScheduleKeeper interface {
	ScheduleKept(ctx context.Context, id string) (bool, error)
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
	if a.Blobs == nil && a.Webhooks == nil {
		return contract.RetentionResult{}, nil // nothing stored here
	}
	if a.Runs == nil {
		return contract.RetentionResult{}, nonRetryable(longhaul.ErrTypeNoTemporal, errors.New("this worker cannot ask Temporal whether runs are open"))
	}
	cutoff := time.Now().Add(-req.Retention)
	var res contract.RetentionResult
	if a.Blobs != nil {
		if err := a.deleteExpiredRunData(ctx, cutoff, &res); err != nil {
			return res, err
		}
	}
	if a.Webhooks != nil {
		if err := a.deleteExpiredWebhooks(ctx, cutoff, &res); err != nil {
			return res, err
		}
	}
	level := slog.LevelDebug
	if res.Deleted > 0 || res.Turns > 0 || res.Webhooks > 0 || res.Deliveries > 0 {
		level = slog.LevelInfo
	}
	a.log.Log(ctx, level, "retention: deleted the stored data of runs closed over the retention ago",
		"retention", req.Retention, "blobs", res.Deleted, "turns", res.Turns, "runs", res.Runs, "kept_runs", res.Kept,
		"webhooks", res.Webhooks, "deliveries", res.Deliveries)
	return res, nil
}

// deleteExpiredRunData deletes the blobs and turns of the runs that
// expired before cutoff, counting into res.
func (a *Activities) deleteExpiredRunData(ctx context.Context, cutoff time.Time, res *contract.RetentionResult) error {
	runs, err := a.Blobs.RunsBefore(ctx, cutoff)
	if err != nil {
		return err
	}
	for i, run := range runs {
		activity.RecordHeartbeat(ctx, i)
		expired, err := a.dataExpired(ctx, run, cutoff)
		if err != nil {
			return err
		}
		if !expired {
			res.Kept++
			continue
		}
		n, err := a.Blobs.DeleteBefore(ctx, run, cutoff)
		if err != nil {
			return err
		}
		turns, err := a.Blobs.DeleteRunTurns(ctx, run)
		if err != nil {
			return err
		}
		res.Deleted += n
		res.Turns += turns
		res.Runs++
	}
	return nil
}

// deleteExpiredWebhooks deletes the runs' own webhooks created before
// cutoff whose runs expired (closed before cutoff, or gone from
// Temporal), with their deliveries, and then every webhook's deliveries
// made before cutoff; subscriptions stay until their owner deletes them.
// It counts into res.
func (a *Activities) deleteExpiredWebhooks(ctx context.Context, cutoff time.Time, res *contract.RetentionResult) error {
	ws, err := a.Webhooks.RunWebhooksBefore(ctx, cutoff)
	if err != nil {
		return err
	}
	for i, w := range ws {
		activity.RecordHeartbeat(ctx, i)
		expired, err := a.runExpired(ctx, w.Run, cutoff)
		if err != nil {
			return err
		}
		if !expired {
			continue
		}
		deleted, err := a.Webhooks.DeleteWebhook(ctx, w.Owner, w.ID)
		if err != nil {
			return err
		}
		if deleted {
			res.Webhooks++
		}
	}
	n, err := a.Webhooks.DeleteDeliveriesBefore(ctx, cutoff)
	if err != nil {
		return err
	}
	res.Deliveries += n
	return nil
}

// dataExpired reports whether the data stored under id, a run's or a
// schedule's (contract.IsScheduleID), may go: the run's expired
// (runExpired), or the schedule is gone and none of its runs is open
// (Activities.Schedules; without it a schedule's data stays).
func (a *Activities) dataExpired(ctx context.Context, id string, cutoff time.Time) (bool, error) {
	if !contract.IsScheduleID(id) {
		return a.runExpired(ctx, id, cutoff)
	}
	if a.Schedules == nil {
		return false, nil
	}
	kept, err := a.Schedules.ScheduleKept(ctx, id)
	return !kept, err
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
