package contract

import "github.com/longhaul-dev/longhaul"

// A message while a run is going: what happens when a chat gets a new user
// message while a run of the same chat still works is the request's
// multitask strategy. The API picks it (internal/runs, Gate.Multitask);
// the workflow side is the wait of a run that follows another (Follow,
// AwaitRun), the steer update and the conversation query.

// The multitask strategies.
const (
	// MultitaskReject refuses the new message while the chat's run goes
	// on (409).
	MultitaskReject = "reject"
	// MultitaskEnqueue starts the new run at once; it waits, durably,
	// until the chat's run before it ended, then runs.
	MultitaskEnqueue = "enqueue"
	// MultitaskInterrupt cancels the chat's run, which stops at its next
	// activity boundary keeping its partial work in the conversation, and
	// starts the new run after it.
	MultitaskInterrupt = "interrupt"
	// MultitaskSteer hands the message to the running run (UpdateSteer),
	// which gives it to the model as a user message before its next call.
	MultitaskSteer = "steer"
	// MultitaskRollback cancels the chat's run and forgets it: it is
	// deleted, its recorded turn removed, and the new run starts.
	MultitaskRollback = "rollback"
)

// MultitaskStrategies are the strategies a request may name, in the order
// the docs list them.
var MultitaskStrategies = []string{MultitaskReject, MultitaskEnqueue, MultitaskInterrupt, MultitaskSteer, MultitaskRollback}

// UpdateSteer hands a running AgentWorkflow a user message (SteerRequest)
// for its next model call. The validator refuses it when the run can no
// longer take one (ErrNotSteerable); the update completes once the run
// queued the message.
const UpdateSteer = "steer"

// QueryConversation answers the run's conversation so far (a
// ConversationSoFar): what a run that follows it continues from.
const QueryConversation = "conversation"

// ErrNotSteerable starts the message of the rejection of an UpdateSteer:
// the run is not in a tool loop that takes messages (it finished, is
// ending, waits for a person, or runs a plan).
const ErrNotSteerable = "the run takes no new message now"

// SteerRequest is a user message for a running run.
type SteerRequest struct {
	Text string `json:"text"`
}

// SteerResult answers UpdateSteer: the offset of the event that says the
// run took the message.
type SteerResult struct {
	At int64 `json:"at"`
}

// Follow names the run of the same chat a run waits for before it starts
// (the enqueue and interrupt strategies): the run starts once Run ended.
// With Prepend, the run's conversation starts with Run's (its messages,
// and what it answered or had done when it was cancelled); a chat route's
// request carries the chat's history itself and does not prepend. Forget
// names the runs that were rolled back: the run removes their recorded
// chat turns first (Run is then the run before them, if any).
type Follow struct {
	Run     string   `json:"run,omitempty"`
	Prepend bool     `json:"prepend,omitempty"`
	Forget  []string `json:"forget,omitempty"`
}

// AwaitRunRequest is the input of the AwaitRun activity.
type AwaitRunRequest struct {
	Follow
}

// AwaitRunResult is how the awaited run ended and, with Prepend, its
// conversation.
type AwaitRunResult struct {
	// Status is the run's end as the engine says it (completed, canceled,
	// …), "gone" when the engine no longer has it.
	Status   string             `json:"status"`
	Messages []longhaul.Message `json:"messages,omitempty"`
}

// ConversationSoFar answers QueryConversation: the messages the run
// started with (after any prepended conversation) and those it added,
// with the partial answer of a cancelled run last.
type ConversationSoFar struct {
	Messages []longhaul.Message `json:"messages"`
}
