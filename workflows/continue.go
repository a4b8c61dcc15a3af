package workflows

import (
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// A run that goes on for hours must not outgrow its history. Two things keep
// it bounded. A tool loop's conversation, once it is large, lives in the
// blob store: each model call reads the stored start and stores the whole
// with its answer, so history holds only what each turn adds (a claim
// check). And when Temporal suggests it, or past the run's history limit,
// the run continues as new at a point where its state is whole — between
// two turns of the tool loop, or between two steps of a plan — after
// archiving its event log in the store: the next execution starts with the
// plan, the state, the conversation's reference, the event offset and the
// archives' references, so offsets go on increasing and a reader of the log
// finds the older events in the archives.

const (
	// convInline is the size of a conversation, in bytes of message text,
	// above which a tool loop keeps it in the blob store.
	convInline = 32 << 10
	// archiveChunk bounds the bytes of event data archived by one activity,
	// well under Temporal's payload limit.
	archiveChunk = 512 << 10
	// resultMessagesLimit bounds the messages a run returns in its result
	// (cards for non-streaming clients); past it only the answer is kept.
	resultMessagesLimit = 256 << 10
)

// loopAt is l going on at turn with conv after the stored ref.
func loopAt(l LoopState, turn int, ref string, conv []longhaul.Message, summary *longhaul.Summary) *LoopState {
	l.Turn, l.ConvRef, l.Messages, l.Summary = turn, ref, conv, summary
	return &l
}

// shouldContinue reports whether the run should continue as new now.
func (r *run) shouldContinue(ctx workflow.Context) bool {
	if r.noContinue {
		return false
	}
	info := workflow.GetInfo(ctx)
	limit := r.in.HistoryLimit
	if limit <= 0 {
		limit = contract.DefaultHistoryLimit
	}
	return info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() >= limit
}

// continueAsNew archives the event log and returns the error that ends this
// execution and starts the next with cp. When the log cannot be archived
// (a worker without a store) it returns nil: the run goes on in this
// execution, and does not try again.
func (r *run) continueAsNew(ctx workflow.Context, lp *LoopState) error {
	// An update being handled (a person's input) finishes first.
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return err
	}
	for {
		chunks := r.log.unarchived()
		if len(chunks) == 0 {
			break
		}
		actx := archiveOptions(ctx)
		futures := make([]workflow.Future, len(chunks))
		for i, c := range chunks {
			futures[i] = workflow.ExecuteActivity(actx, a.ArchiveEvents, contract.ArchiveRequest{Events: c})
		}
		for _, f := range futures {
			var ar contract.EventArchive
			if err := f.Get(ctx, &ar); err != nil {
				if temporal.IsCanceledError(err) {
					return err
				}
				r.noContinue = true
				r.think(ctx, "Cannot archive the event log ("+errorMessage(err)+"); the run goes on without continuing as new")
				return nil
			}
			r.log.archived(ar)
		}
	}
	state := r.state
	if state.StartedAt.IsZero() {
		state.StartedAt = workflow.GetInfo(ctx).WorkflowStartTime
	}
	state.Continued++
	next := r.in
	next.Resume = &Checkpoint{
		State: state, Usage: r.usage, Model: r.model, StepSeq: r.stepSeq, ToolSeq: r.toolSeq, Recorded: r.recorded,
		Offset: r.log.last, Archives: r.log.archives, Loop: lp, Pinned: r.pinned,
	}
	return workflow.NewContinueAsNewError(ctx, contract.AgentWorkflowName, next)
}

// resume restores the state an earlier execution handed over and goes on
// where it stopped.
func (r *run) resume(ctx workflow.Context, cp *Checkpoint) (contract.AgentResult, error) {
	switch {
	case cp.Loop != nil:
		return r.toolLoop(ctx, *cp.Loop)
	case r.state.Mode == contract.ModeAgentic:
		r.showPlan(ctx)
		return r.pipeline(ctx)
	}
	return contract.AgentResult{}, temporal.NewNonRetryableApplicationError("the run continued as new with nothing to go on with", longhaul.ErrTypeBadInput, nil)
}

// restore takes over the state of cp.
func (r *run) restore(cp *Checkpoint) {
	r.state = cp.State
	r.usage = cp.Usage
	r.model = cp.Model
	r.stepSeq, r.toolSeq = cp.StepSeq, cp.ToolSeq
	r.recorded = cp.Recorded
	r.pinned = cp.Pinned
	r.log.restore(cp.Offset, cp.Archives)
}

// textSize is the bytes of text of messages: what a model call carries.
func textSize(msgs []longhaul.Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Content)
		for _, c := range m.ToolCalls {
			n += len(c.Arguments) + len(c.Name)
		}
	}
	return n
}

// boundResult keeps a run's result within resultMessagesLimit: past it the
// messages are left out but for the answer.
func boundResult(msgs []longhaul.Message) []longhaul.Message {
	if len(msgs) == 0 || textSize(msgs) <= resultMessagesLimit {
		return msgs
	}
	return msgs[len(msgs)-1:]
}

// eventSize is the bytes an event takes in an archive, near enough.
func eventSize(e longhaul.Event) int {
	return len(e.Data) + 96
}

// chunkEvents splits events into runs of at most archiveChunk bytes.
func chunkEvents(events []longhaul.Event) [][]longhaul.Event {
	var out [][]longhaul.Event
	start, size := 0, 0
	for i, e := range events {
		if n := eventSize(e); size+n > archiveChunk && i > start {
			out = append(out, events[start:i])
			start, size = i, 0
		}
		size += eventSize(e)
	}
	if start < len(events) {
		out = append(out, events[start:])
	}
	return out
}
