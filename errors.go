package longhaul

// Error types: the type of the temporal.ApplicationError an activity or a
// workflow fails with, as the Temporal UI shows it and as the HTTP layer
// translates it into an OpenAI-style error. Workflows and activities raise
// them; workflows decide on them (retry or not); the API reads them.
const (
	// ErrTypeBadInput is a run whose input cannot run.
	ErrTypeBadInput = "BadInput"
	// ErrTypePlanIncomplete is an agentic run whose plan ended without an
	// answer.
	ErrTypePlanIncomplete = "PlanIncomplete"
	// ErrTypeUnknownAgent is a run for an agent the catalog lacks.
	ErrTypeUnknownAgent = "UnknownAgent"
	// ErrTypeModelRejected is a model call the endpoint refused (400, 401,
	// 403, 404, 422) or a request that cannot be made: retrying the same
	// request cannot help.
	ErrTypeModelRejected = "ModelRejected"
	// ErrTypeModelUnavailable is a model endpoint that did not answer.
	ErrTypeModelUnavailable = "ModelUnavailable"
	// ErrTypeModelCoolingDown is a model call skipped because its
	// endpoint failed repeatedly and cools down (LONGHAUL_MODEL_BREAKER_*):
	// the run's next fallback model answers.
	ErrTypeModelCoolingDown = "ModelCoolingDown"
	// ErrTypeModelOutputTooLarge is a model call whose answer went past the
	// output cap (LONGHAUL_MAX_MODEL_OUTPUT_BYTES); it is not retried.
	ErrTypeModelOutputTooLarge = "ModelOutputTooLarge"
	// ErrTypeModelBadOutput is a structured call whose answer stayed
	// invalid after the model was asked once to fix it. It is retryable:
	// another attempt may well produce valid output.
	ErrTypeModelBadOutput = "ModelBadOutput"
	// ErrTypeToolRefused is a tool call that must not run (not allowed, not
	// approved, bad arguments): it is not retried.
	ErrTypeToolRefused = "ToolRefused"
	// ErrTypeToolFailed is a tool call that failed.
	ErrTypeToolFailed = "ToolFailed"
	// ErrTypeNoStore is a claim check on a worker without a blob store:
	// retrying on the same worker cannot help.
	ErrTypeNoStore = "NoStore"
	// ErrTypeLostBlob is a claim check whose blob is gone.
	ErrTypeLostBlob = "LostBlob"
	// ErrTypeMemoryOff is a memory activity on a worker without memory
	// (LONGHAUL_EMBED_MODEL unset).
	ErrTypeMemoryOff = "MemoryOff"
	// ErrTypeMemoryInvalid is a memory activity asked what the store
	// refuses (no user, a fact too long), which no retry fixes.
	ErrTypeMemoryInvalid = "MemoryInvalid"
	// ErrTypeBadRetention is a retention job whose retention is not a
	// positive duration.
	ErrTypeBadRetention = "BadRetention"
	// ErrTypeNoTemporal is a retention job on a worker without a Temporal
	// client to ask about runs.
	ErrTypeNoTemporal = "NoTemporal"
	// ErrTypeNoDocStore is an ingestion activity on a worker without the
	// document store.
	ErrTypeNoDocStore = "NoDocStore"
	// ErrTypeContextLength is a model call whose irreducible part (the
	// system prompt, the tools, the current plan and the latest message)
	// does not fit the model's window even after compaction: OpenAI's own
	// code for it, so clients recognise it.
	ErrTypeContextLength = "context_length_exceeded"
	// ErrTypeInsufficientQuota is a model call refused because a budget
	// (LONGHAUL_BUDGETS) that applies to it is used up: OpenAI's own code
	// for an exhausted quota, which the API answers with a 429. It is not
	// retried: the budget resets at a time, not on a retry.
	ErrTypeInsufficientQuota = "insufficient_quota"
	// ErrTypeWebhookRejected is a webhook delivery its receiver refused
	// for good (a 4xx other than 408 and 429), or one to an address the
	// SSRF guard refuses: retrying cannot help.
	ErrTypeWebhookRejected = "WebhookRejected"
	// ErrTypeWebhookGone is a delivery to a webhook deleted since.
	ErrTypeWebhookGone = "WebhookGone"
	// ErrTypeRunCancelled: a model call stopped because the run's
	// cancellation came over NATS before Temporal's; its cause is the
	// cancellation with the text the call had.
	ErrTypeRunCancelled = "RunCancelled"
	// ErrTypeScheduleRefused: a schedule's fire was refused at its start
	// (its owner is gone or may no longer run its agent, or is over the
	// run limit or a budget); the message says which.
	ErrTypeScheduleRefused = "ScheduleRefused"
)
