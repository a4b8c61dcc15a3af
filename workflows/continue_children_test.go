package workflows_test

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/longhaul-dev/longhaul"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"
)

// A run continues as new only where no child workflow of its runs, by
// construction: the plan continues between two calls of fanOut (pipeline),
// and fanOut returns only once every step it started has ended (a re-plan
// waits for the running ones too); the tool loop continues between two
// turns (toolLoop), and a turn's calls, an ask_ call's child run among
// them, have all ended before the next turn (callTools waits for each);
// a step's own loop never continues as new. The tests below ask the run to
// continue as new at every chance it has and check that, when it does,
// every child it started has completed, none is cancelled, and the next
// execution starts none of them again.

// childLog records the child workflows an environment starts, completes
// and cancels.
type childLog struct {
	mu                            sync.Mutex
	started, completed, cancelled []string
	failed                        []error
}

func (h *harness) logChildren() *childLog {
	l := &childLog{}
	h.env.SetOnChildWorkflowStartedListener(func(info *workflow.Info, _ workflow.Context, _ converter.EncodedValues) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.started = append(l.started, info.WorkflowExecution.ID)
	})
	h.env.SetOnChildWorkflowCompletedListener(func(info *workflow.Info, _ converter.EncodedValue, err error) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.completed = append(l.completed, info.WorkflowExecution.ID)
		if err != nil {
			l.failed = append(l.failed, err)
		}
	})
	h.env.SetOnChildWorkflowCanceledListener(func(info *workflow.Info) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.cancelled = append(l.cancelled, info.WorkflowExecution.ID)
	})
	return l
}

// allEnded fails t unless every child started completed without error
// and none was cancelled: what the execution leaves behind when it
// continues as new.
func (l *childLog) allEnded(t *testing.T, want int) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	started, completed := slices.Sorted(slices.Values(l.started)), slices.Sorted(slices.Values(l.completed))
	if len(started) != want || !slices.Equal(started, completed) || len(l.cancelled) > 0 || len(l.failed) > 0 {
		t.Errorf("at continue-as-new: children started %v, completed %v, cancelled %v, failed %v; want %d, all completed",
			started, completed, l.cancelled, l.failed, want)
	}
}

// TestGraphContinuesAsNewOnlyOnceItsStepsEnded: a plan of two waves (three
// steps at once, then one that needs the first, which starts while the
// other two may still run) in a run that Temporal asks to continue as new
// from its start. The run continues as new once, before the answer, with
// all four steps' workflows completed; the next execution answers from
// their results and starts no step again.
func TestGraphContinuesAsNewOnlyOnceItsStepsEnded(t *testing.T) {
	h, p := graphHarness(t)
	h.env.SetContinueAsNewSuggested(true)
	h.resolve(fanner())
	h.onArchive()
	children := h.logChildren()
	p.onPlan(planned(goal,
		fetchOf("Read a", "https://example.org/a"), fetchOf("Read b", "https://example.org/b"), fetchOf("Read c", "https://example.org/c"),
		fetchOf("Read d", "https://example.org/d", "1"),
		needing(answerStep, "1", "2", "3", "4"))).Once()
	p.onSupervisePlan(planOK).Once()
	p.onReviewStep(stepOK("read"), stepOK("read"), stepOK("read"), stepOK("read")).Times(4)
	// The first three are inside their calls together.
	p.onGatedTools(newStartGate(3))
	h.run(input(question...))

	next := h.continued()
	children.allEnded(t, 4)
	steps := next.Resume.State.Plans[0].Steps
	for _, s := range steps[:4] {
		if s.Status != longhaul.StepDone {
			t.Errorf("step %s carried as %q, want done", s.ID, s.Status)
		}
	}
	if s := steps[4]; s.Kind != longhaul.StepCompletion || s.Status != longhaul.StepPending {
		t.Errorf("the answer step carried as %s %q, want a pending completion", s.Kind, s.Status)
	}

	h2, p2 := graphHarness(t)
	h2.resolve(fanner())
	again := h2.logChildren()
	h2.scriptModel(answer("All four.", usage(10, 5))).Once()
	h2.resume(next)
	if got := h2.result().Content; got != "All four." {
		t.Fatalf("Content = %q", got)
	}
	again.mu.Lock()
	restarted := again.started
	again.mu.Unlock()
	if len(restarted) > 0 || len(p2.toolRequests()) > 0 {
		t.Errorf("the next execution started steps %v and made calls %v again", restarted, toolIDs(p2.toolRequests()))
	}
	text := answerText(h2.modelCallsN(1)[0])
	for _, id := range []string{"step-1", "step-2", "step-3", "step-4"} {
		if !strings.Contains(text, "result of "+id) {
			t.Errorf("the answer lacks the result of %s:\n%s", id, text)
		}
	}
}

// TestAskContinuesAsNewOnlyOnceTheChildAnswered: a chat run that Temporal
// asks to continue as new from its start asks the helper agent (a child
// run). It continues as new at its next turn, once the child completed,
// carrying the child's answer as the call's result; the next execution
// answers from it without asking again.
func TestAskContinuesAsNewOnlyOnceTheChildAnswered(t *testing.T) {
	h := newAskHarness(t)
	h.env.SetContinueAsNewSuggested(true)
	h.resolve(mediaSpec)
	h.resolve(helperSpec)
	h.onArchive()
	// newAskHarness records the starts; this records the ends too.
	children := h.logChildren()
	h.script(map[string][]reply{
		"media":  {askTools("", usage(1, 1), askCall("c1", "What is six times seven?"))},
		"helper": {answer("Forty-two.", usage(2, 2))},
	})
	h.run(askInput("Ask the helper"))

	next := h.continued()
	children.allEnded(t, 1)
	if l := next.Resume.Loop; l == nil || !slices.ContainsFunc(l.Messages, func(m longhaul.Message) bool {
		return m.Role == longhaul.RoleTool && m.ToolCallID == "c1" && m.Content == "Forty-two."
	}) {
		t.Fatalf("the checkpoint's loop %+v lacks the helper's answer", l)
	}

	h2 := newAskHarness(t)
	h2.resolve(mediaSpec)
	h2.script(map[string][]reply{"media": {answer("It is 42.", usage(1, 1))}})
	h2.resume(next)
	if got := h2.result().Content; got != "It is 42." {
		t.Fatalf("Content = %q", got)
	}
	if len(h2.children) > 0 || len(h2.calls("helper")) > 0 {
		t.Errorf("the next execution asked the helper again: %d children, %d helper calls", len(h2.children), len(h2.calls("helper")))
	}
	var read bool
	for _, m := range h2.calls("media")[0].Messages {
		read = read || (m.Role == longhaul.RoleTool && m.ToolCallID == "c1" && m.Content == "Forty-two.")
	}
	if !read {
		t.Errorf("the next execution's model call lacks the helper's answer: %+v", h2.calls("media")[0].Messages)
	}
}
