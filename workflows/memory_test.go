package workflows_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/stretchr/testify/mock"
)

func eventsOf(events []longhaul.Event, typ longhaul.EventType) []longhaul.Event {
	var out []longhaul.Event
	for _, e := range events {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// A recall agent gets its memories in a system message just before the
// user's message, in the first model call, with a memory_recall event;
// the recall is for the run's user and its last user message.
func TestRecallBeforeFirstModelCall(t *testing.T) {
	h := newHarness(t)
	s := spec
	s.Memory = "recall"
	h.resolve(s)
	var asked []contract.RecallRequest
	h.env.OnActivity(h.acts.RecallMemories, mock.Anything, mock.Anything).Return(
		func(_ context.Context, req contract.RecallRequest) (contract.RecallResponse, error) {
			asked = append(asked, req)
			return contract.RecallResponse{Memories: []longhaul.MemoryItem{{ID: "mem_1", Text: "The user is vegetarian.", Score: 0.8}}}, nil
		}).Once()
	h.scriptModel(answer("Try the lentil soup.", usage(10, 5)))
	h.run(contract.AgentInput{Agent: "assistant", User: longhaul.User{Principal: "owui/ann"}, Messages: []longhaul.Message{
		{Role: longhaul.RoleUser, Content: "Hi"}, {Role: longhaul.RoleAssistant, Content: "Hello"}, {Role: longhaul.RoleUser, Content: "What should I cook?"},
	}})
	h.result()
	if diff := cmp.Diff([]contract.RecallRequest{{User: "owui/ann", Query: "What should I cook?"}}, asked); diff != "" {
		t.Errorf("recall requests (-want +got):\n%s", diff)
	}
	msgs := h.modelCalls()[0].Messages
	if len(msgs) != 4 || msgs[2].Role != longhaul.RoleSystem || !strings.Contains(msgs[2].Content, "- The user is vegetarian.") || msgs[3].Content != "What should I cook?" {
		t.Fatalf("first model call's messages = %+v", msgs)
	}
	rec := eventsOf(h.events(), longhaul.EventMemoryRecall)
	var d longhaul.MemoryRecallData
	if len(rec) != 1 || rec[0].Decode(&d) != nil || d.Count != 1 || d.Memories[0].ID != "mem_1" {
		t.Errorf("memory_recall events = %+v", rec)
	}
}

// Nothing above the threshold: no system message, no event.
func TestRecallOfNothing(t *testing.T) {
	h := newHarness(t)
	s := spec
	s.Memory = "recall"
	h.resolve(s)
	h.env.OnActivity(h.acts.RecallMemories, mock.Anything, mock.Anything).Return(contract.RecallResponse{Memories: []longhaul.MemoryItem{}}, nil).Once()
	h.scriptModel(answer("Hello.", usage(1, 1)))
	h.run(contract.AgentInput{Agent: "assistant", Messages: []longhaul.Message{{Role: longhaul.RoleUser, Content: "Hi"}}})
	h.result()
	if msgs := h.modelCalls()[0].Messages; len(msgs) != 1 {
		t.Errorf("model got %+v, want the user's message alone", msgs)
	}
	if rec := eventsOf(h.events(), longhaul.EventMemoryRecall); len(rec) != 0 {
		t.Errorf("memory_recall events = %+v", rec)
	}
}

// A remember agent extracts the turn's facts after the answer and saves
// them for the run's user and chat, before done; an agent without memory
// calls neither memory activity (the mocks would be unexpected).
func TestRememberAfterTheTurn(t *testing.T) {
	h := newHarness(t)
	s := spec
	s.Remember = true
	h.resolve(s)
	h.scriptModel(answer("Noted, no peanuts.", usage(10, 5)))
	h.env.OnActivity(h.acts.ExtractMemories, mock.Anything, mock.MatchedBy(func(r contract.ExtractRequest) bool {
		n := len(r.Messages)
		return n == 2 && r.Messages[0].Content == "I'm allergic to peanuts" && r.Messages[1].Content == "Noted, no peanuts."
	})).Return(contract.ExtractResponse{Facts: []string{"The user is allergic to peanuts."}, Usage: usage(3, 2)}, nil).Once()
	h.env.OnActivity(h.acts.SaveMemories, mock.Anything, contract.SaveRequest{User: "owui/ann", Chat: "owui/c1", Facts: []string{"The user is allergic to peanuts."}}).
		Return(contract.SaveResponse{Memories: []longhaul.MemoryItem{{ID: "mem_9", Text: "The user is allergic to peanuts."}}}, nil).Once()
	h.run(contract.AgentInput{Agent: "assistant", User: longhaul.User{Principal: "owui/ann"}, ChatID: "owui/c1",
		Messages: []longhaul.Message{{Role: longhaul.RoleUser, Content: "I'm allergic to peanuts"}}})
	res := h.result()
	if res.Content != "Noted, no peanuts." || res.Usage.TotalTokens != 20 {
		t.Errorf("result = %q, usage %+v (want the extraction's counted)", res.Content, res.Usage)
	}
	events := h.events()
	saved := eventsOf(events, longhaul.EventMemorySaved)
	var d longhaul.MemorySavedData
	if len(saved) != 1 || saved[0].Decode(&d) != nil || d.Count != 1 || d.Memories[0].ID != "mem_9" {
		t.Fatalf("memory_saved events = %+v", saved)
	}
	if last := events[len(events)-1]; last.Type != longhaul.EventDone || saved[0].Offset > last.Offset {
		t.Errorf("memory_saved at %d is not before done (%v)", saved[0].Offset, last.Type)
	}
}

// A plan's memory step searches the user's memory for its input, whatever
// the scores; the planner is told memory exists.
func TestPlanMemoryStep(t *testing.T) {
	h := newHarness(t)
	s := researcher
	s.Memory = "tools"
	h.resolve(s)
	p := newPipeline(h)
	memStep := longhaul.PlanStep{Kind: longhaul.StepMemory, Title: "Recall diet", Input: "diet"}
	p.onPlan(ok(contract.PlanResponse{Goal: "cook", Steps: []longhaul.PlanStep{memStep, answerStep}}))
	p.onSupervisePlan(ok(contract.PlanCheck{OK: true}))
	p.onReviewStep(ok(contract.StepReview{Decision: longhaul.ReviewOK}))
	h.env.OnActivity(h.acts.RecallMemories, mock.Anything, contract.RecallRequest{User: "anonymous", Query: "diet", All: true}).
		Return(contract.RecallResponse{Memories: []longhaul.MemoryItem{{ID: "mem_1", Text: "The user is vegetarian.", Score: 0.42}}}, nil).Once()
	h.scriptModel(answer("Lentils.", usage(1, 1)))
	h.run(contract.AgentInput{Agent: s.ID, Messages: []longhaul.Message{{Role: longhaul.RoleUser, Content: "What should I cook?"}}})
	h.result()
	if !p.plans[0].Memory || !p.checks[0].Memory {
		t.Errorf("planner and plan check not told of memory: %v %v", p.plans[0].Memory, p.checks[0].Memory)
	}
	st := h.state()
	got := st.Plans[len(st.Plans)-1].Steps[0]
	if got.Status != longhaul.StepDone || !strings.Contains(got.Result, "The user is vegetarian. (0.42)") {
		t.Errorf("memory step = %+v", got)
	}
	if rec := eventsOf(h.events(), longhaul.EventMemoryRecall); len(rec) != 1 {
		t.Errorf("memory_recall events = %d, want 1", len(rec))
	}
}
