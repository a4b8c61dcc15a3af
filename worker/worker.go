// Package worker wires Longhaul's workflows and activities into a Temporal
// worker. Any number of workers may poll the same task queue; each holds its
// own activity dependencies (model client, tools, catalog).
package worker

import (
	"time"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/workflows"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// heartbeatThrottle is the longest a worker holds back a heartbeat.
const heartbeatThrottle = 2 * time.Second

// Register adds Longhaul's workflows and activities to w.
func Register(w sdkworker.Registry, acts *activities.Activities) {
	w.RegisterWorkflowWithOptions(workflows.AgentWorkflow, workflow.RegisterOptions{Name: contract.AgentWorkflowName})
	w.RegisterWorkflowWithOptions(workflows.RetentionWorkflow, workflow.RegisterOptions{Name: contract.RetentionWorkflowName})
	w.RegisterWorkflowWithOptions(workflows.IngestWorkflow, workflow.RegisterOptions{Name: contract.IngestWorkflow})
	w.RegisterWorkflowWithOptions(workflows.WebhookWorkflow, workflow.RegisterOptions{Name: contract.WebhookWorkflowName})
	w.RegisterWorkflowWithOptions(workflows.EvaluationWorkflow, workflow.RegisterOptions{Name: contract.EvaluationWorkflowName})
	w.RegisterWorkflowWithOptions(workflows.StepWorkflow, workflow.RegisterOptions{Name: contract.StepWorkflowName})
	w.RegisterActivity(acts)
}

// Options are the worker options Longhaul runs with. Model and tool calls
// spend their time waiting on the network, so a worker runs many at once;
// stopTimeout is how long Stop lets running calls finish (Temporal retries
// the rest elsewhere).
//
// Temporal tells a cancelled run's running calls so only in the answer to a
// heartbeat (a model call also hears it over NATS, at once), and the SDK
// sends heartbeats at most every 80% of the heartbeat timeout (24 s for a
// 30 s one) unless told otherwise; heartbeatThrottle bounds that wait so a
// cancel stops a call within seconds of its next heartbeat.
func Options(stopTimeout time.Duration) sdkworker.Options {
	return sdkworker.Options{
		WorkerStopTimeout:                      stopTimeout,
		MaxHeartbeatThrottleInterval:           heartbeatThrottle,
		DefaultHeartbeatThrottleInterval:       heartbeatThrottle,
		MaxConcurrentActivityExecutionSize:     1000,
		MaxConcurrentWorkflowTaskExecutionSize: 200,
		MaxConcurrentActivityTaskPollers:       8,
		MaxConcurrentWorkflowTaskPollers:       8,
	}
}

// DrainTimeout is how long a stopping worker lets running calls finish.
const DrainTimeout = 30 * time.Second

// Tuning sizes a worker for its host; a zero field keeps Options' value.
type Tuning struct {
	// ActivitySlots and WorkflowSlots bound the activities and the
	// workflow tasks the worker runs at once.
	ActivitySlots, WorkflowSlots int
	// Pollers is the number of pollers on each of the two task queues.
	Pollers int
	// StickyCache is the number of runs the process keeps cached between
	// their tasks (shared by its workers; set before the first starts).
	StickyCache int
}

func (t Tuning) apply(o *sdkworker.Options) {
	if t.ActivitySlots > 0 {
		o.MaxConcurrentActivityExecutionSize = t.ActivitySlots
	}
	if t.WorkflowSlots > 0 {
		o.MaxConcurrentWorkflowTaskExecutionSize = t.WorkflowSlots
	}
	if t.Pollers > 0 {
		o.MaxConcurrentActivityTaskPollers = t.Pollers
		o.MaxConcurrentWorkflowTaskPollers = t.Pollers
	}
}

// New builds a worker on taskQueue with Longhaul's workflows and activities
// registered, sized by t, polling as the deployment version v (if any). It
// drains in-flight activities for up to DrainTimeout on Stop.
func New(c client.Client, taskQueue string, acts *activities.Activities, t Tuning, v Versioning) sdkworker.Worker {
	if t.StickyCache > 0 {
		sdkworker.SetStickyWorkflowCacheSize(t.StickyCache)
	}
	o := Options(DrainTimeout)
	t.apply(&o)
	v.Apply(&o)
	w := sdkworker.New(c, taskQueue, o)
	Register(w, acts)
	return w
}
