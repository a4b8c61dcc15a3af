// Package worker wires Longhaul's workflows and activities into a Temporal
// worker. Any number of workers may poll the same task queue; each holds its
// own activity dependencies (model client, tools, catalog).
package worker

import (
	"time"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/workflows"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Register adds Longhaul's workflows and activities to w.
func Register(w sdkworker.Registry, acts *activities.Activities) {
	w.RegisterWorkflowWithOptions(workflows.AgentWorkflow, workflow.RegisterOptions{Name: workflows.AgentWorkflowName})
	w.RegisterActivity(acts)
}

// Options are the worker options Longhaul runs with. Model and tool calls
// spend their time waiting on the network, so a worker runs many at once;
// stopTimeout is how long Stop lets running calls finish (Temporal retries
// the rest elsewhere).
func Options(stopTimeout time.Duration) sdkworker.Options {
	return sdkworker.Options{
		WorkerStopTimeout:                      stopTimeout,
		MaxConcurrentActivityExecutionSize:     1000,
		MaxConcurrentWorkflowTaskExecutionSize: 200,
		MaxConcurrentActivityTaskPollers:       8,
		MaxConcurrentWorkflowTaskPollers:       8,
	}
}

// New builds a worker on taskQueue with Longhaul's workflows and activities
// registered. It drains in-flight activities for up to stopTimeout on Stop.
func New(c client.Client, taskQueue string, acts *activities.Activities) sdkworker.Worker {
	w := sdkworker.New(c, taskQueue, Options(30*time.Second))
	Register(w, acts)
	return w
}
