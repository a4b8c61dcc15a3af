package contract

import "time"

// RetentionWorkflowName is the registered name of RetentionWorkflow.
const RetentionWorkflowName = "RetentionWorkflow"

// RetentionScheduleID is the ID of the Temporal Schedule that starts
// RetentionWorkflow on taskQueue; its runs' workflow IDs start with it too.
// One per task queue: deployments sharing a namespace on task queues of
// their own have stores of their own, and each cleans its own.
func RetentionScheduleID(taskQueue string) string { return "longhaul-retention-" + taskQueue }

// RetentionInterval is how often the schedule starts RetentionWorkflow: a
// run's blobs outlive its history by at most this much.
const RetentionInterval = time.Hour

// RetentionInput is RetentionWorkflow's input.
type RetentionInput struct {
	// Retention is how long after a run closed its stored data (blobs and
	// conversation turns) is kept
	// (LONGHAUL_RETENTION, or the namespace's workflow retention).
	Retention time.Duration `json:"retention"`
}

// RetentionResult says what a retention job did.
type RetentionResult struct {
	// Deleted is the number of blobs deleted.
	Deleted int64 `json:"deleted"`
	// Turns is the number of stored conversation turns deleted (with
	// their messages, and the chats they left empty).
	Turns int64 `json:"turns,omitempty"`
	// Runs is the number of runs whose stored data was deleted.
	Runs int `json:"runs"`
	// Kept is the number of runs with data older than the retention that
	// were kept: runs still open, or closed less than Retention ago.
	Kept int `json:"kept"`
	// Webhooks is the number of runs' own webhooks deleted (their runs
	// closed over Retention ago), with their deliveries.
	Webhooks int64 `json:"webhooks,omitempty"`
	// Deliveries is the number of webhook delivery records older than
	// Retention deleted.
	Deliveries int64 `json:"deliveries,omitempty"`
}

// RetentionRequest asks for the blobs of runs that closed more than
// Retention ago to be deleted.
type RetentionRequest struct {
	Retention time.Duration `json:"retention"`
}
