package workflows

import (
	"errors"
	"fmt"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/textcut"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// A message while a run is going (see contract's multitask.go): a run
// that follows another waits for it to end first (follow); a running run
// takes a user message for its next model call (UpdateSteer, takeSteers);
// a run answers the conversation it had when it ended
// (QueryConversation), which the run after it continues from; and a
// cancelled chat turn records what it had done (keepEnded).

// versionCancelledTurn marks runs that record a cancelled chat turn's
// partial work in the conversation store; runs started before it recorded
// only finished turns.
const versionCancelledTurn = "record-cancelled-turn"

// awaitRunTimeout bounds one attempt of the wait for the run before: a run
// may wait for a person for long; the activity heartbeats, and Temporal
// tries again past it.
const awaitRunTimeout = 24 * time.Hour

// awaitRunHeartbeat is how soon a worker that died while waiting is
// noticed and the wait handed to another.
const awaitRunHeartbeat = 30 * time.Second

// registerMultitask installs the steer update and the conversation query.
func (r *run) registerMultitask(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, contract.QueryConversation, func() (contract.ConversationSoFar, error) {
		msgs := append([]longhaul.Message(nil), r.in.Messages...)
		return contract.ConversationSoFar{Messages: append(msgs, r.final...)}, nil
	}); err != nil {
		return err
	}
	return workflow.SetUpdateHandlerWithOptions(ctx, contract.UpdateSteer,
		func(ctx workflow.Context, req contract.SteerRequest) (contract.SteerResult, error) {
			r.steers = append(r.steers, req.Text)
			r.think(ctx, "New message from the user, for the model's next call: "+textcut.Ellipsis(req.Text, 200))
			return contract.SteerResult{At: r.log.last}, nil
		},
		workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, req contract.SteerRequest) error {
			switch {
			case req.Text == "":
				return errors.New("steer: the message is empty")
			case !r.steerable || r.state.Waiting != nil || r.state.Status != contract.StatusRunning:
				return errors.New(contract.ErrNotSteerable)
			}
			return nil
		}},
	)
}

// follow waits, when the run follows another of its chat, until that one
// ended, and starts the run's conversation with its conversation when
// asked to. A run that waits says so in its log first.
func (r *run) follow(ctx workflow.Context) error {
	f := r.in.Follows
	if f == nil || (f.Run == "" && len(f.Forget) == 0) {
		return nil
	}
	if f.Run != "" {
		r.think(ctx, "Queued: waiting for run "+f.Run+", the chat's run before this one, to end")
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: awaitRunTimeout,
		HeartbeatTimeout:    awaitRunHeartbeat,
		Summary:             "await run " + f.Run,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			MaximumInterval:        30 * time.Second,
			NonRetryableErrorTypes: []string{longhaul.ErrTypeNoTemporal},
		},
	})
	var res contract.AwaitRunResult
	if err := workflow.ExecuteActivity(actx, a.AwaitRun, contract.AwaitRunRequest{Follow: *f}).Get(ctx, &res); err != nil {
		return err
	}
	if f.Run == "" {
		return nil
	}
	if len(res.Messages) > 0 {
		r.in.Messages = append(append([]longhaul.Message(nil), res.Messages...), r.in.Messages...)
	}
	r.think(ctx, fmt.Sprintf("Run %s ended (%s); this one starts", f.Run, res.Status))
	return nil
}

// takeSteers gives the model the user messages the run took since its
// last model call, at the end of the loop's conversation; only the run's
// own loop takes them (a plan's step loops do not).
func (r *run) takeSteers(ctx workflow.Context, l LoopState, conv, added []longhaul.Message) ([]longhaul.Message, []longhaul.Message) {
	if l.StepID != "" || len(r.steers) == 0 {
		return conv, added
	}
	for _, text := range r.steers {
		m := longhaul.Message{Role: longhaul.RoleUser, Content: text}
		conv, added = append(conv, m), append(added, m)
	}
	r.think(ctx, fmt.Sprintf("Gave the model %d new message(s) from the user", len(r.steers)))
	r.steers = nil
	return conv, added
}

// steerPending reports whether the loop l, which just got an answer,
// must call the model again for the messages the run took meanwhile.
func (r *run) steerPending(l LoopState, last bool) bool {
	return l.StepID == "" && !last && len(r.steers) > 0
}

// setSteerable says whether the run's own loop, about to call the model
// (the last call when last), takes new messages: not during its last
// call, which has no next one.
func (r *run) setSteerable(l LoopState, last bool) {
	if l.StepID == "" {
		r.steerable = !last
	}
}

// keepEnded keeps what the run did for the run that follows it
// (QueryConversation) and, when a chat turn was cancelled, records its
// partial work (messages so far, tool results, the partial answer) in the
// conversation store, as a finished turn is.
func (r *run) keepEnded(ctx workflow.Context, res contract.AgentResult, err error) {
	r.steerable = false
	msgs := r.answered
	if msgs == nil {
		msgs = res.Messages
	}
	if err == nil || !temporal.IsCanceledError(err) {
		r.final = msgs
		return
	}
	msgs = append([]longhaul.Message(nil), msgs...)
	if r.partial != "" {
		msgs = append(msgs, longhaul.Message{Role: longhaul.RoleAssistant, Content: r.partial})
	}
	r.final = msgs
	if len(msgs) == 0 || !r.keepsConversation(ctx) {
		return
	}
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	if workflow.GetVersion(dctx, versionCancelledTurn, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return
	}
	r.recordTurn(dctx, msgs, contract.StatusCancelled, true)
}
