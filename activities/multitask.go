package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
)

// RunAwaiter waits for a run's end and asks it for its conversation:
// client.Client is one. AwaitRun finds it in Runs (the worker's Temporal
// client).
type RunAwaiter interface {
	GetWorkflow(ctx context.Context, workflowID, runID string) client.WorkflowRun
	QueryWorkflow(ctx context.Context, workflowID, runID, queryType string, args ...any) (converter.EncodedValue, error)
}

var _ RunAwaiter = client.Client(nil)

// awaitSlice bounds one wait for the awaited run's result, between
// heartbeats.
const awaitSlice = 10 * time.Second

// AwaitRun waits until the run req names ended (however it ended: a
// cancelled, failed, terminated or deleted run has ended too), then, with
// Prepend, reads its conversation; it first removes the recorded chat
// turns of the run req forgets. It heartbeats while it waits, so a
// worker that dies hands the wait to another; waiting again is harmless.
func (a *Activities) AwaitRun(ctx context.Context, req contract.AwaitRunRequest) (contract.AwaitRunResult, error) {
	for _, run := range req.Forget {
		if a.Blobs == nil {
			break
		}
		if _, err := a.Blobs.DeleteRunTurns(ctx, run); err != nil {
			return contract.AwaitRunResult{}, fmt.Errorf("forget the turns of run %s: %w", run, err)
		}
	}
	if req.Run == "" {
		return contract.AwaitRunResult{}, nil
	}
	c, ok := a.Runs.(RunAwaiter)
	if !ok {
		return contract.AwaitRunResult{}, nonRetryable(longhaul.ErrTypeNoTemporal, errors.New("this worker cannot wait for runs"))
	}
	res := contract.AwaitRunResult{}
	for {
		activity.RecordHeartbeat(ctx, req.Run)
		wctx, cancel := context.WithTimeout(ctx, awaitSlice)
		err := c.GetWorkflow(wctx, req.Run, "").Get(wctx, nil)
		cancel()
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		status, ended := runEnd(err)
		if !ended {
			if wctx.Err() != nil {
				continue // still running: heartbeat and wait again
			}
			return res, fmt.Errorf("wait for run %s: %w", req.Run, err)
		}
		res.Status = status
		break
	}
	if !req.Prepend || res.Status == "gone" {
		return res, nil
	}
	v, err := c.QueryWorkflow(ctx, req.Run, "", contract.QueryConversation)
	var conv contract.ConversationSoFar
	if err == nil {
		err = v.Get(&conv)
	}
	if err != nil {
		// A run from before the query existed, or one gone meanwhile:
		// the new run starts from its own messages.
		activity.GetLogger(ctx).Warn("cannot read the conversation of the run before", "run", req.Run, "error", err)
		return res, nil
	}
	res.Messages = conv.Messages
	return res, nil
}

// runEnd tells from the error of a wait for a run's result whether the run
// ended, and how.
func runEnd(err error) (status string, ended bool) {
	var (
		canceled   *temporal.CanceledError
		terminated *temporal.TerminatedError
		appErr     *temporal.ApplicationError
		timeout    *temporal.TimeoutError
		notFound   *serviceerror.NotFound
	)
	switch {
	case err == nil:
		return "completed", true
	case errors.As(err, &canceled):
		return "canceled", true
	case errors.As(err, &terminated):
		return "terminated", true
	case errors.As(err, &notFound):
		return "gone", true
	case errors.As(err, &appErr), errors.As(err, &timeout) && !errors.Is(err, context.DeadlineExceeded):
		return "failed", true
	}
	return "", false
}
