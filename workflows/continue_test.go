package workflows_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/workflows"
	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"
)

// archiver mocks ArchiveEvents and keeps what it was given, as the blob
// store would.
type archiver struct {
	mu     sync.Mutex
	stored map[string][]longhaul.Event
}

func (h *harness) onArchive() *archiver {
	ar := &archiver{stored: map[string][]longhaul.Event{}}
	h.env.OnActivity(h.acts.ArchiveEvents, mock.Anything, mock.Anything).Return(
		func(_ context.Context, req contract.ArchiveRequest) (contract.EventArchive, error) {
			ar.mu.Lock()
			defer ar.mu.Unlock()
			from, to := req.Events[0].Offset, req.Events[len(req.Events)-1].Offset
			ref := fmt.Sprintf("sha256:events-%d-%d", from, to)
			ar.stored[ref] = req.Events
			return contract.EventArchive{From: from, To: to, Ref: ref}, nil
		})
	return ar
}

// continued returns the input of the execution the run continued as.
func (h *harness) continued() workflows.Input {
	h.t.Helper()
	var cane *workflow.ContinueAsNewError
	if err := h.env.GetWorkflowError(); !errors.As(err, &cane) {
		h.t.Fatalf("workflow ended with %v, want continue-as-new", err)
	}
	if cane.WorkflowType.Name != contract.AgentWorkflowName {
		h.t.Fatalf("continued as %q", cane.WorkflowType.Name)
	}
	var next workflows.Input
	if err := converter.GetDefaultDataConverter().FromPayloads(cane.Input, &next); err != nil {
		h.t.Fatal(err)
	}
	if next.Resume == nil {
		h.t.Fatal("continued without a checkpoint")
	}
	return next
}

// resume runs the execution a run continued as: next carries the
// checkpoint, which no AgentInput the API sends does.
func (h *harness) resume(next workflows.Input) {
	h.t.Helper()
	h.env.ExecuteWorkflow(contract.AgentWorkflowName, next)
	if !h.env.IsWorkflowCompleted() {
		h.t.Fatal("workflow did not complete")
	}
}

// readAll reads a run's whole log the way the API does: the archives a page
// names, then the events held after them.
func (h *harness) readAll(ar *archiver) []longhaul.Event {
	h.t.Helper()
	var out []longhaul.Event
	var after int64
	for range 10 {
		p := h.page(contract.EventsRequest{After: after})
		if len(p.Archives) > 0 {
			for _, a := range p.Archives {
				for _, e := range ar.stored[a.Ref] {
					if e.Offset > after {
						out = append(out, e)
						after = e.Offset
					}
				}
			}
			continue
		}
		out = append(out, p.Events...)
		if p.Done {
			return out
		}
		if len(p.Events) > 0 {
			after = p.Events[len(p.Events)-1].Offset
		}
	}
	h.t.Fatal("the log never ended")
	return nil
}

// TestChatContinuesAsNew: a tool loop whose run Temporal asks to continue as
// new does so between two turns, after archiving its events; the next
// execution goes on with the next turn, the stored conversation, the state,
// the usage and the event offsets, and the whole log reads as one.
func TestChatContinuesAsNew(t *testing.T) {
	// A long question: the conversation goes to the store from the first
	// call on, and later calls send only what follows it.
	long := strings.Repeat("context ", 5000)
	q := []longhaul.Message{{Role: longhaul.RoleUser, Content: "What time is it? " + long}}
	call := func(id string) longhaul.ToolCall {
		return longhaul.ToolCall{ID: id, Name: "current_time", Arguments: `{}`}
	}

	h := newHarness(t)
	h.env.SetContinueAsNewSuggested(true)
	h.resolve(spec)
	ar := h.onArchive()
	first := askTools("", usage(10, 2), call("c1"))
	first.resp.ConvRef = "sha256:conv-2"
	h.scriptModel(first).Once()
	h.onTool("c1", contract.ToolResponse{Content: "12:00"}, nil).Once()
	h.run(input(q...))
	next := h.continued()

	reqs := h.modelCalls()
	if len(reqs) != 1 || !reqs[0].Store || reqs[0].ConvRef != "" || len(reqs[0].Messages) != 1 {
		t.Fatalf("first model call: %d calls, store %v, ref %q, %d messages", len(reqs), reqs[0].Store, reqs[0].ConvRef, len(reqs[0].Messages))
	}
	cp := next.Resume
	tail := []longhaul.Message{{Role: longhaul.RoleTool, ToolCallID: "c1", Name: "current_time", Content: "12:00"}}
	diff(t, "loop", &workflows.LoopState{
		Scope: spec.Tools, MaxTurns: spec.MaxTurns, Publish: true, Turn: 2, ConvRef: "sha256:conv-2", Messages: tail,
	}, cp.Loop)
	if cp.Offset != 2 || len(cp.Archives) != 1 || cp.Archives[0] != (contract.EventArchive{From: 1, To: 2, Ref: "sha256:events-1-2"}) {
		t.Fatalf("offset %d, archives %+v", cp.Offset, cp.Archives)
	}
	if cp.State.Turns != 1 || cp.State.Continued != 1 || !cp.State.StartedAt.Equal(t0) || cp.Usage != usage(10, 2) || cp.Model != "test-model-v2" {
		t.Fatalf("checkpoint state %+v usage %+v model %q", cp.State, cp.Usage, cp.Model)
	}
	if next.Agent != "assistant" || next.User.ID != "u1" || len(next.Messages) != 1 {
		t.Fatalf("next input %+v", next)
	}

	// The next execution: one more turn, then the answer.
	h2 := newHarness(t)
	h2.resolve(spec)
	end := answer("It is noon.", usage(20, 4))
	end.resp.ConvRef = "sha256:conv-4"
	h2.scriptModel(end).Once()
	h2.resume(next)
	res := h2.result()
	if res.Content != "It is noon." || res.Usage != usage(30, 6) || res.LastOffset != 5 {
		t.Fatalf("result %+v", res)
	}
	reqs = h2.modelCalls()
	diff(t, "second execution's model call", contract.ModelRequest{
		Call: "turn-2", Agent: "assistant", Model: "test-model-v2", Messages: tail, Tools: spec.Tools,
		Publish: true, ConvRef: "sha256:conv-2", Store: true, After: 2,
		NextCall: 2, // the numbering goes on across continue-as-new
	}, reqs[0])

	all := h2.readAll(ar)
	for i, e := range all {
		if e.Offset != int64(i+1) {
			t.Fatalf("event %d has offset %d: %v", i, e.Offset, eventTypes(all))
		}
	}
	diff(t, "event types", []longhaul.EventType{
		longhaul.EventToolStart, longhaul.EventToolOutput,
		longhaul.EventContent, longhaul.EventUsage, longhaul.EventDone,
	}, eventTypes(all))
	st := h2.state()
	if st.Turns != 2 || st.Continued != 1 || st.Usage != usage(30, 6) || st.Status != contract.StatusCompleted || !st.StartedAt.Equal(t0) {
		t.Fatalf("state %+v", st)
	}
}

// TestPlanContinuesAsNewBetweenSteps: an agentic run continues as new after
// a step, carrying its plan; the next execution runs the steps that remain
// without planning again.
func TestPlanContinuesAsNewBetweenSteps(t *testing.T) {
	h := newHarness(t)
	p := newPipeline(h)
	h.env.SetContinueAsNewSuggested(true)
	h.resolve(researcher)
	ar := h.onArchive()
	p.onPlan(ok(contract.PlanResponse{Goal: goal, Steps: []longhaul.PlanStep{fetchAct, answerStep}, Usage: usage(100, 40)})).Once()
	p.onSupervisePlan(planOK).Once()
	p.onReviewStep(ok(contract.StepReview{Decision: longhaul.ReviewOK, Reason: "the act was read", Usage: usage(50, 5)})).Once()
	p.onTool("step-1", contract.ToolResponse{Content: "Article 5 bans social scoring."}, nil).Once()
	h.run(input(question...))
	next := h.continued()
	cp := next.Resume
	if cp.Loop != nil || cp.State.Mode != contract.ModeAgentic || len(cp.State.Plans) != 1 || cp.StepSeq != 2 {
		t.Fatalf("checkpoint %+v", cp)
	}
	if steps := cp.State.Plans[0].Steps; steps[0].Status != longhaul.StepDone || steps[1].Status != longhaul.StepPending {
		t.Fatalf("carried steps %+v", steps)
	}

	h2 := newHarness(t)
	p2 := newPipeline(h2)
	h2.resolve(researcher)
	const final = "The act bans social scoring (Article 5)."
	h2.scriptModel(answer(final, usage(200, 30))).Once()
	h2.resume(next)
	if res := h2.result(); res.Content != final || res.Usage != usage(350, 75) {
		t.Fatalf("result %+v", res)
	}
	if _, plans, _, _, _ := p2.calls(); len(plans) != 0 {
		t.Fatalf("planned again: %+v", plans)
	}
	if reqs := h2.modelCalls(); !strings.Contains(answerText(reqs[0]), "Article 5 bans social scoring.") {
		t.Errorf("the answer lacks the first execution's findings:\n%s", answerText(reqs[0]))
	}
	all := h2.readAll(ar)
	diff(t, "event types", readThenAnswer, eventTypes(all))
	for i, e := range all {
		if e.Offset != int64(i+1) {
			t.Fatalf("event %d has offset %d", i, e.Offset)
		}
	}
	if d := h2.currentDetails(); !strings.Contains(d, "- [x] 1.") || !strings.Contains(d, "- [x] 2.") {
		t.Errorf("current details after resuming:\n%s", d)
	}
}

// keyRecorder mocks CallTool and records the idempotency key each call is
// made with, as the activity makes it from the call's workflow id and
// sequence number.
type keyRecorder struct {
	mu   sync.Mutex
	keys []string
}

func (h *harness) onAnyTool(k *keyRecorder) {
	h.env.OnActivity(h.acts.CallTool, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, req contract.ToolRequest) (contract.ToolResponse, error) {
			k.mu.Lock()
			defer k.mu.Unlock()
			k.keys = append(k.keys, activities.IdempotencyKey(activity.GetInfo(ctx).WorkflowExecution.ID, req.Seq))
			return contract.ToolResponse{Content: "12:00"}, nil
		})
}

// TestIdempotencyKeysSurviveContinueAsNew: a model that gives its calls no
// ids, or the same ids every turn, across an execution that continues as
// new: every call still gets an idempotency key of its own, because the
// calls are numbered by the run and the numbering goes on in the next
// execution.
func TestIdempotencyKeysSurviveContinueAsNew(t *testing.T) {
	noID := longhaul.ToolCall{Name: "current_time", Arguments: `{}`}
	same := longhaul.ToolCall{ID: "call_0", Name: "current_time", Arguments: `{}`}
	q := []longhaul.Message{{Role: longhaul.RoleUser, Content: "What time is it, twice?"}}

	keys := &keyRecorder{}
	h := newHarness(t)
	h.env.SetContinueAsNewSuggested(true)
	h.resolve(spec)
	h.onArchive()
	h.scriptModel(askTools("", usage(1, 1), noID, noID)).Once()
	h.onAnyTool(keys)
	h.run(input(q...))
	next := h.continued()
	if next.Resume.ToolSeq != 2 {
		t.Fatalf("checkpoint ToolSeq = %d, want 2", next.Resume.ToolSeq)
	}

	h2 := newHarness(t)
	h2.resolve(spec)
	h2.scriptModel(
		askTools("", usage(1, 1), same, noID),
		askTools("", usage(1, 1), same),
		answer("Noon, both times.", usage(1, 1)),
	).Times(3)
	h2.onAnyTool(keys)
	h2.resume(next)
	if got := h2.result().Content; got != "Noon, both times." {
		t.Fatalf("Content = %q", got)
	}

	if len(keys.keys) != 5 {
		t.Fatalf("%d tool calls ran, want 5: %v", len(keys.keys), keys.keys)
	}
	seen := map[string]bool{}
	for _, k := range keys.keys {
		if seen[k] {
			t.Errorf("idempotency key %q made two calls: %v", k, keys.keys)
		}
		seen[k] = true
	}
	reqs := h2.modelCalls()
	for i, want := range []int64{3, 5, 6} {
		if reqs[i].NextCall != want {
			t.Errorf("model call %d: NextCall = %d, want %d", i+1, reqs[i].NextCall, want)
		}
	}
}
