package workflows_test

import (
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"
)

// steerAt sends the steer update with text at d on the workflow's clock,
// and fails the test unless the run takes it.
func (h *harness) steerAt(d time.Duration, text string) {
	h.env.RegisterDelayedCallback(func() {
		h.env.UpdateWorkflow(contract.UpdateSteer, "steer-"+text, &testsuite.TestUpdateCallback{
			OnAccept: func() {},
			OnReject: func(err error) { h.t.Errorf("the run refused the message: %v", err) },
			OnComplete: func(v any, err error) {
				if err != nil {
					h.t.Errorf("steer: %v", err)
				}
			},
		}, contract.SteerRequest{Text: text})
	}, d)
}

// TestSteerDuringToolCall: a message steered in while a tool runs is the
// last message of the model's next call, as a user message.
func TestSteerDuringToolCall(t *testing.T) {
	h := newHarness(t)
	h.resolve(spec)
	h.scriptModel(
		askTools("", usage(1, 1), longhaul.ToolCall{ID: "c1", Name: "current_time", Arguments: `{}`}),
		answer("Il est midi.", usage(1, 1)),
	)
	h.onTool("c1", contract.ToolResponse{Content: "12:00"}, nil).After(2 * time.Minute)
	h.steerAt(time.Minute, "answer in French")
	h.run(input(longhaul.Message{Role: longhaul.RoleUser, Content: "what time is it?"}))
	if got := h.result().Content; got != "Il est midi." {
		t.Fatalf("answer %q", got)
	}
	calls := h.modelCalls()
	msgs := calls[1].Messages
	if last := msgs[len(msgs)-1]; last.Role != longhaul.RoleUser || last.Content != "answer in French" || msgs[len(msgs)-2].Role != longhaul.RoleTool {
		t.Fatalf("the second call's messages end with %+v", msgs[len(msgs)-2:])
	}
	if !hasThinking(h.events(), "Gave the model 1 new message(s)") {
		t.Error("no event says the model got the message")
	}
}

// TestSteerDuringAnswer: a message steered in while the model writes what
// would have been the answer gets one more model call, which answers it.
func TestSteerDuringAnswer(t *testing.T) {
	h := newHarness(t)
	h.resolve(spec)
	h.scriptModel(answer("Paris is big.", usage(1, 1)), answer("Lyon is smaller.", usage(1, 1))).After(2 * time.Minute)
	h.steerAt(time.Minute, "what about Lyon?")
	h.run(input(longhaul.Message{Role: longhaul.RoleUser, Content: "tell me about Paris"}))
	if got := h.result().Content; got != "Lyon is smaller." {
		t.Fatalf("answer %q", got)
	}
	diff(t, "second call's messages", []longhaul.Message{
		{Role: longhaul.RoleUser, Content: "tell me about Paris"},
		assistant("Paris is big."),
		{Role: longhaul.RoleUser, Content: "what about Lyon?"},
	}, h.modelCalls()[1].Messages)
}

// TestFollowWaitsAndPrepends: a queued run waits for the run before it
// (AwaitRun) and starts from its conversation.
func TestFollowWaitsAndPrepends(t *testing.T) {
	h := newHarness(t)
	h.resolve(spec)
	before := []longhaul.Message{{Role: longhaul.RoleUser, Content: "q0"}, assistant("a0")}
	h.env.OnActivity(h.acts.AwaitRun, mock.Anything, contract.AwaitRunRequest{Follow: contract.Follow{Run: "run-0", Prepend: true}}).
		Return(contract.AwaitRunResult{Status: "completed", Messages: before}, nil).Once()
	h.scriptModel(answer("a1", usage(1, 1)))
	in := input(longhaul.Message{Role: longhaul.RoleUser, Content: "q1"})
	in.Follows = &contract.Follow{Run: "run-0", Prepend: true}
	h.run(in)
	h.result()
	diff(t, "first call's messages", append(before, longhaul.Message{Role: longhaul.RoleUser, Content: "q1"}), h.modelCalls()[0].Messages)
	if !hasThinking(h.events(), "Queued: waiting for run run-0") {
		t.Error("no event says the run is queued")
	}
}

// TestCancelledTurnRecorded: a chat turn cancelled mid-way records what it
// had done (the tool call and its result) as a cancelled turn.
func TestCancelledTurnRecorded(t *testing.T) {
	h := newHarness(t)
	h.resolve(spec)
	rec := h.recordTurn()
	call := longhaul.ToolCall{ID: "c1", Name: "current_time", Arguments: `{}`}
	h.scriptModel(askTools("Checking.", usage(1, 1), call))
	h.onTool("c1", contract.ToolResponse{Content: "12:00"}, nil).After(2 * time.Minute)
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, time.Minute)
	in := input(longhaul.Message{Role: longhaul.RoleUser, Content: "what time is it?"})
	in.ChatID, in.Turn = "u1/chat-1", 1
	h.run(in)
	if rec.Status != contract.StatusCancelled || len(rec.Messages) == 0 || rec.Messages[0].Content != "Checking." {
		t.Fatalf("recorded %+v", rec)
	}
}

// hasThinking reports whether a thinking event's message starts with
// prefix.
func hasThinking(events []longhaul.Event, prefix string) bool {
	for _, e := range events {
		var d longhaul.ThinkingData
		if e.Type == longhaul.EventThinking && e.Decode(&d) == nil && strings.HasPrefix(d.Message, prefix) {
			return true
		}
	}
	return false
}
