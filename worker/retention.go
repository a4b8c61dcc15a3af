package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/longhaul-dev/longhaul/contract"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
)

// NamespaceRetention returns how long the namespace keeps the history of
// a closed run: the default of LONGHAUL_RETENTION, so that a run's stored
// blobs live as long as its history.
func NamespaceRetention(ctx context.Context, c client.Client, namespace string) (time.Duration, error) {
	d, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: namespace})
	if err != nil {
		return 0, fmt.Errorf("describe namespace %s: %w", namespace, err)
	}
	return d.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration(), nil
}

// ScheduleRetention makes sure the namespace of c has the Temporal
// Schedule that starts workflows.RetentionWorkflow on taskQueue every
// contract.RetentionInterval with retention. Every worker calls it at
// start: the first creates the schedule (and starts a first job at once),
// the others find it and change it only when their retention differs —
// the last worker started with a different LONGHAUL_RETENTION wins. Being a schedule, the job runs once per interval however many
// workers there are, survives their restarts, and shows in the Temporal UI.
func ScheduleRetention(ctx context.Context, c client.Client, taskQueue string, retention time.Duration) error {
	if retention <= 0 {
		return fmt.Errorf("retention %v must be positive", retention)
	}
	id := contract.RetentionScheduleID(taskQueue)
	action := &client.ScheduleWorkflowAction{
		ID:                       id,
		Workflow:                 contract.RetentionWorkflowName,
		Args:                     []any{contract.RetentionInput{Retention: retention}},
		TaskQueue:                taskQueue,
		WorkflowExecutionTimeout: contract.RetentionInterval,
		StaticSummary:            "Longhaul: delete the stored data (blobs, chat turns) of runs closed over " + retention.String() + " ago",
	}
	spec := client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: contract.RetentionInterval}}}
	_, err := c.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:     id,
		Spec:   spec,
		Action: action,
		// A job still running when the next is due: the next is skipped.
		Overlap:            enumspb.SCHEDULE_OVERLAP_POLICY_SKIP,
		CatchupWindow:      contract.RetentionInterval,
		TriggerImmediately: true,
		Note:               "created by a Longhaul worker; LONGHAUL_RETENTION sets the retention",
	})
	if err == nil {
		return nil
	}
	if !errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return fmt.Errorf("create schedule %s: %w", id, err)
	}
	h := c.ScheduleClient().GetHandle(ctx, id)
	err = h.Update(ctx, client.ScheduleUpdateOptions{
		DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
			s := in.Description.Schedule
			if sameRetention(s, taskQueue, retention) {
				return nil, temporal.ErrSkipScheduleUpdate
			}
			s.Action = action
			s.Spec = &spec
			return &client.ScheduleUpdate{Schedule: &s}, nil
		},
	})
	if err != nil {
		return fmt.Errorf("update schedule %s: %w", id, err)
	}
	return nil
}

// sameRetention reports whether schedule s already starts the retention
// job on taskQueue with retention every interval.
func sameRetention(s client.Schedule, taskQueue string, retention time.Duration) bool {
	a, ok := s.Action.(*client.ScheduleWorkflowAction)
	if !ok || a.Workflow != contract.RetentionWorkflowName || a.TaskQueue != taskQueue || len(a.Args) != 1 {
		return false
	}
	if s.Spec == nil || len(s.Spec.Intervals) != 1 || s.Spec.Intervals[0].Every != contract.RetentionInterval {
		return false
	}
	p, ok := a.Args[0].(*commonpb.Payload)
	if !ok {
		return false
	}
	var in contract.RetentionInput
	if err := converter.GetDefaultDataConverter().FromPayload(p, &in); err != nil {
		return false
	}
	return in.Retention == retention
}
