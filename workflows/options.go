package workflows

import (
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/contract"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Every activity's timeouts and retry policy, in one place. Changing one
// changes what new commands ask of the server, not what a replay compares,
// so these may be tuned without a version marker.

// Defaults for the limits of a run, used when AgentInput leaves them zero.
const (
	DefaultModelTimeout = 5 * time.Minute
	DefaultToolTimeout  = 5 * time.Minute
	// modelHeartbeat is how soon a dead worker's model call is retried.
	modelHeartbeat = 10 * time.Second
	// toolHeartbeat is the same for a tool call; calls heartbeat every
	// few seconds while they wait (activities.DefaultHeartbeatInterval).
	toolHeartbeat = 10 * time.Second
	// toolCallLimit bounds a tool call, all attempts together: as many
	// attempts as contract.ToolAttempts each using its whole time limit,
	// and the waits between them.
	toolCallLimit = contract.ToolAttempts*DefaultToolTimeout + time.Minute
	// conversationTimeout bounds one attempt of a conversation store
	// activity.
	conversationTimeout = 30 * time.Second
	// retentionTimeout bounds one retention job; the next starts an
	// interval later anyway.
	retentionTimeout = 50 * time.Minute
	// extractTimeout bounds one attempt of extracting and chunking a
	// file (10 M characters tokenize in seconds; a big PDF takes longer).
	extractTimeout = 15 * time.Minute
	// embedTimeout bounds one attempt of embedding a file's chunks: a
	// few thousand batches of a slow endpoint.
	embedTimeout = 2 * time.Hour
	// ingestHeartbeat is how soon an ingestion step of a dead worker is
	// retried; the steps heartbeat every couple of seconds.
	ingestHeartbeat = 10 * time.Second
)

// resolveOptions run ResolveAgent, a lookup in the worker's catalog, as a
// local activity.
func resolveOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
	})
}

// modelTimeout is the run's model call timeout.
func (r *run) modelTimeout() time.Duration {
	if r.in.ModelTimeout > 0 {
		return r.in.ModelTimeout
	}
	return DefaultModelTimeout
}

// structuredOptions are the activity options of the planner, the
// supervisors and the dispatcher: model calls with fewer retries, since a
// plan can go on without one.
func (r *run) structuredOptions(ctx workflow.Context, summary string) workflow.Context {
	return r.modelCallOptions(ctx, summary, 3, false)
}

// modelCallOptions are the options of a model call: a tool loop's
// (callOneModel: attempts per model of a fallback list, and a cancelled run
// waits for the call to stop and keeps its text) or a structured one.
func (r *run) modelCallOptions(ctx workflow.Context, summary string, attempts int32, waitCancel bool) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: r.modelTimeout(),
		HeartbeatTimeout:    modelHeartbeat,
		Summary:             summary,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        30 * time.Second,
			MaximumAttempts:        attempts,
			NonRetryableErrorTypes: []string{longhaul.ErrTypeModelRejected, longhaul.ErrTypeToolRefused},
		},
		WaitForCancellation: waitCancel,
	})
}

// toolOptions are the options of one tool call.
func toolOptions(ctx workflow.Context, summary string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    DefaultToolTimeout,
		ScheduleToCloseTimeout: toolCallLimit,
		HeartbeatTimeout:       toolHeartbeat,
		Summary:                summary,
		// The tool's own failures stop at contract.ToolAttempts (CallTool
		// makes the last one final); attempts lost to a killed worker or
		// a restarting server are retried until toolCallLimit.
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        20 * time.Second,
			NonRetryableErrorTypes: []string{longhaul.ErrTypeToolRefused},
		},
	})
}

// archiveOptions are the options of ArchiveEvents before continue-as-new: a
// write to the blob store, retried for a while, since the run cannot go on
// without it.
func archiveOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		Summary:             "archive events",
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second,
			MaximumInterval: 30 * time.Second,
			MaximumAttempts: 10,
		},
	})
}

// conversationOptions run the store's activities as local activities: a
// read or a write of a few rows in the worker's own store, in the workflow
// task that needs it, without a round trip through the Temporal server.
func conversationOptions(ctx workflow.Context, summary string) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: conversationTimeout,
		Summary:             summary,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second,
			MaximumInterval: 10 * time.Second,
			MaximumAttempts: 5,
		},
	})
}

// memoryOptions are the activity options of memory calls: the embedder is
// a model endpoint, retried like one; a recall must not hold a turn long.
func (r *run) memoryOptions(ctx workflow.Context, summary string, timeout time.Duration) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: timeout,
		Summary:             summary,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        10 * time.Second,
			MaximumAttempts:        3,
			NonRetryableErrorTypes: []string{longhaul.ErrTypeModelRejected, longhaul.ErrTypeMemoryOff, longhaul.ErrTypeMemoryInvalid},
		},
	})
}

// retentionOptions are RetentionWorkflow's: one long activity that
// heartbeats once a run (a Temporal call and a delete).
func retentionOptions(ctx workflow.Context, retention time.Duration) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: retentionTimeout,
		HeartbeatTimeout:    2 * time.Minute,
		Summary:             "delete stored blobs of runs closed over " + retention.String() + " ago",
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        10 * time.Second,
			MaximumAttempts:        3,
			NonRetryableErrorTypes: []string{longhaul.ErrTypeBadRetention, longhaul.ErrTypeNoTemporal},
		},
	})
}

// extractOptions are ExtractChunks': a read of the file, the extraction
// and writes to the blob store, heartbeating. A file that cannot be read is
// its result, not an error; what fails is the stores, retried a while.
func extractOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: extractTimeout,
		HeartbeatTimeout:    ingestHeartbeat,
		Summary:             "extract text and cut it into chunks",
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        30 * time.Second,
			MaximumAttempts:        5,
			NonRetryableErrorTypes: []string{longhaul.ErrTypeBadInput, longhaul.ErrTypeNoDocStore, longhaul.ErrTypeNoStore},
		},
	})
}

// embedOptions are EmbedChunks': embedding calls retried like model calls
// (an attempt skips the chunks the earlier ones wrote), heartbeating.
func embedOptions(ctx workflow.Context, summary string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: embedTimeout,
		HeartbeatTimeout:    ingestHeartbeat,
		Summary:             summary,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    30 * time.Second,
			MaximumAttempts:    6,
			NonRetryableErrorTypes: []string{longhaul.ErrTypeModelRejected, longhaul.ErrTypeLostBlob, longhaul.ErrTypeBadInput,
				longhaul.ErrTypeNoDocStore, longhaul.ErrTypeNoStore},
		},
	})
}

// finishOptions are FinishIngest's: a few writes, retried long, since an
// attachment must not stay in_progress.
func finishOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		Summary:             "record the file's status",
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        time.Minute,
			MaximumAttempts:        20,
			NonRetryableErrorTypes: []string{longhaul.ErrTypeNoDocStore, longhaul.ErrTypeNoStore},
		},
	})
}

// Webhook deliveries: attempts with exponential backoff from
// webhookFirstRetry, at most webhookMaxInterval apart, for up to
// webhookDeadline in all (the Standard Webhooks spec's advice: retry with
// backoff for a day or so); an attempt is bounded by the activity's own
// timeout, this leaves it margin.
const (
	webhookFirstRetry  = 2 * time.Second
	webhookMaxInterval = time.Hour
	webhookDeadline    = 24 * time.Hour
	webhookAttempt     = activities.WebhookAttemptTimeout + 15*time.Second
	webhookErrorChars  = 500
)

// webhookOptions are DeliverWebhook's: retried until the receiver takes
// the event or refuses it for good (a 4xx other than 408 and 429, a
// destination the SSRF guard refuses, a deleted webhook).
func webhookOptions(ctx workflow.Context, typ string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    webhookAttempt,
		ScheduleToCloseTimeout: webhookDeadline,
		Summary:                "deliver " + typ,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    webhookFirstRetry,
			BackoffCoefficient: 2,
			MaximumInterval:    webhookMaxInterval,
			NonRetryableErrorTypes: []string{longhaul.ErrTypeWebhookRejected, longhaul.ErrTypeWebhookGone,
				longhaul.ErrTypeNoStore, longhaul.ErrTypeBadInput},
		},
	})
}

// forkOptions run ReadFork: reads of Temporal, retried while it does not
// answer; a point the old run lacks is not retried.
func forkOptions(ctx workflow.Context, summary string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Minute,
		HeartbeatTimeout:    time.Minute,
		Summary:             summary,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			MaximumInterval:        30 * time.Second,
			MaximumAttempts:        10,
			NonRetryableErrorTypes: []string{longhaul.ErrTypeBadInput, longhaul.ErrTypeNoTemporal},
		},
	})
}
