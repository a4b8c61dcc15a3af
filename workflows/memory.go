package workflows

import (
	"fmt"
	"strings"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Change ids of long-term memory (workflow.GetVersion): runs started before
// them replay without the memory activities.
const (
	// versionMemoryRecall: a memory: recall agent recalls before the
	// turn's first model call.
	versionMemoryRecall = "memory-recall"
	// versionMemoryRemember: a remember: true agent extracts and saves the
	// turn's facts after it.
	versionMemoryRemember = "memory-remember"
	// versionMemoryStep: a plan's memory step searches memory.
	versionMemoryStep = "memory-step"
)

// memoryRecall is the memory mode (contract.AgentSpec.Memory) that
// recalls into each turn.
const memoryRecall = "recall"

// recall gives the turn what the user's memory holds about its last
// message (memory: recall): the closest memories above the threshold go
// into a system message just before that message, and a memory_recall
// event says which. A recall that fails leaves the turn without memories;
// it does not fail the run.
func (r *run) recall(ctx workflow.Context) error {
	if r.spec.Memory != memoryRecall || r.in.Background {
		return nil
	}
	query := strings.TrimSpace(longhaul.LastUserText(r.in.Messages))
	if query == "" {
		return nil
	}
	if workflow.GetVersion(ctx, versionMemoryRecall, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return nil
	}
	var resp contract.RecallResponse
	err := workflow.ExecuteActivity(r.memoryOptions(ctx, "memory recall", time.Minute), a.RecallMemories,
		contract.RecallRequest{User: r.in.User.Key(), Query: query}).Get(ctx, &resp)
	if temporal.IsCanceledError(err) {
		return err
	}
	if err != nil {
		r.think(ctx, "Could not recall memories: "+errorMessage(err))
		return nil
	}
	if len(resp.Memories) == 0 {
		return nil
	}
	note := resp.Note
	if note == "" {
		// A result recorded by a worker that did not write the note.
		note = longhaul.MemoryLines(resp.Memories)
	}
	msgs := make([]longhaul.Message, 0, len(r.in.Messages)+1)
	last := lastUserIndex(r.in.Messages)
	for i, m := range r.in.Messages {
		if i == last {
			msgs = append(msgs, longhaul.Message{Role: longhaul.RoleSystem, Content: note})
		}
		msgs = append(msgs, m)
	}
	r.in.Messages = msgs
	r.log.emit(workflow.Now(ctx), longhaul.EventMemoryRecall, longhaul.MemoryRecallData{Count: len(resp.Memories), Memories: resp.Memories})
	return nil
}

func lastUserIndex(msgs []longhaul.Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == longhaul.RoleUser {
			return i
		}
	}
	return -1
}

// remember saves what the turn taught about the user (remember: true): an
// extraction call with structured output finds the lasting facts in the
// user's message, and a save embeds and stores them, a near-duplicate
// updating the memory it restates. It runs after the answer, before done;
// a failure is a thinking line, not a failed run.
func (r *run) remember(ctx workflow.Context, answer string) {
	if !r.spec.Remember || r.in.Background || ctx.Err() != nil {
		return
	}
	user := strings.TrimSpace(longhaul.LastUserText(r.in.Messages))
	if user == "" {
		return
	}
	if workflow.GetVersion(ctx, versionMemoryRemember, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return
	}
	msgs := append(append([]longhaul.Message(nil), r.in.Messages...), longhaul.Message{Role: longhaul.RoleAssistant, Content: answer})
	var ex contract.ExtractResponse
	err := workflow.ExecuteActivity(r.structuredOptions(ctx, "memory extract"), a.ExtractMemories,
		contract.ExtractRequest{Caller: r.caller(r.model), Messages: msgs}).Get(ctx, &ex)
	r.addUsage("memory-extract", r.model, ex.Usage)
	if err != nil {
		if !temporal.IsCanceledError(err) {
			r.think(ctx, "Could not extract memories: "+errorMessage(err))
		}
		return
	}
	if len(ex.Facts) == 0 {
		return
	}
	var saved contract.SaveResponse
	err = workflow.ExecuteActivity(r.memoryOptions(ctx, fmt.Sprintf("memory save %d", len(ex.Facts)), 2*time.Minute), a.SaveMemories,
		contract.SaveRequest{User: r.in.User.Key(), Chat: r.in.ChatID, Facts: ex.Facts}).Get(ctx, &saved)
	if err != nil {
		if !temporal.IsCanceledError(err) {
			r.think(ctx, "Could not save memories: "+errorMessage(err))
		}
		return
	}
	if len(saved.Memories) > 0 {
		r.log.emit(workflow.Now(ctx), longhaul.EventMemorySaved, longhaul.MemorySavedData{Count: len(saved.Memories), Memories: saved.Memories})
	}
}

// memoryStep runs a plan's memory step: a search of the user's memory for
// the step's input, the closest memories whatever their score (the step
// review judges them). It returns the step's result and whether it failed.
func (r *run) memoryStep(ctx workflow.Context, step *longhaul.PlanStep, label string) (string, bool, error) {
	if workflow.GetVersion(ctx, versionMemoryStep, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return "error: memory steps are not supported by this run", true, nil
	}
	if r.spec.Memory == "" {
		return "error: this agent has no memory", true, nil
	}
	var resp contract.RecallResponse
	err := workflow.ExecuteActivity(r.memoryOptions(ctx, label+" memory", time.Minute), a.RecallMemories,
		contract.RecallRequest{User: r.in.User.Key(), Query: step.Input, All: true}).Get(ctx, &resp)
	if temporal.IsCanceledError(err) {
		return "", true, err
	}
	if err != nil {
		return "error: " + errorMessage(err), true, nil
	}
	r.log.emit(workflow.Now(ctx), longhaul.EventMemoryRecall, longhaul.MemoryRecallData{Count: len(resp.Memories), Memories: resp.Memories, StepID: step.ID})
	if len(resp.Memories) == 0 {
		return "Nothing is remembered about this user that matches.", false, nil
	}
	var b strings.Builder
	b.WriteString("Remembered about this user (closest first, with similarity):\n")
	for _, m := range resp.Memories {
		b.WriteString(fmt.Sprintf("- %s (%.2f)\n", m.Text, m.Score))
	}
	return strings.TrimSpace(b.String()), false, nil
}
