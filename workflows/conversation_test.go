package workflows_test

import (
	"context"
	"testing"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/stretchr/testify/mock"
)

// A chat turn restores the earlier turns before its first model call, and
// records its own timeline (messages, tool events, usage) before done.
func TestChatTurnRestoresAndRecords(t *testing.T) {
	h := newHarness(t)
	h.resolve(spec)
	history := []longhaul.Message{
		{Role: longhaul.RoleUser, Content: "what time is it?"},
		assistant("It is noon."),
		{Role: longhaul.RoleUser, Content: "and in an hour?"},
	}
	call := longhaul.ToolCall{ID: "c1", Name: "current_time", Arguments: `{}`}
	restored := []longhaul.Message{
		history[0],
		assistant("", call),
		{Role: longhaul.RoleTool, ToolCallID: "c1", Name: "current_time", Content: "12:00"},
		assistant("It is noon."),
		history[2],
	}
	var restoreReq contract.RestoreRequest
	h.env.OnActivity(h.acts.RestoreConversation, mock.Anything, mock.Anything).Return(
		func(_ context.Context, req contract.RestoreRequest) (contract.RestoreResult, error) {
			restoreReq = req
			return contract.RestoreResult{Turns: 1, Messages: restored}, nil
		}).Once()
	rec := h.recordTurn()
	h.scriptModel(
		askTools("Checking.", usage(10, 2), longhaul.ToolCall{ID: "c2", Name: "current_time", Arguments: `{"tz":"UTC"}`}),
		answer("It will be 13:00.", usage(20, 4)),
	)
	h.onTool("c2", contract.ToolResponse{Content: "12:01", Ref: "sha256:abc", Truncated: true}, nil).Once()
	in := input(history...)
	in.ChatID, in.Turn = "u1/chat-1", 2
	h.run(in)
	h.result()

	diff(t, "restore request", contract.RestoreRequest{User: "u1", ChatID: "u1/chat-1", Messages: history}, restoreReq)
	calls := h.modelCalls()
	diff(t, "first model call's messages", restored, calls[0].Messages)
	if rec.ChatID != "u1/chat-1" || rec.User != "u1" || rec.Turn != 2 || rec.Status != "completed" || rec.FirstSeq != 0 {
		t.Errorf("record request = %+v", rec)
	}
	diff(t, "recorded messages", []longhaul.Message{
		assistant("Checking.", longhaul.ToolCall{ID: "c2", Name: "current_time", Arguments: `{"tz":"UTC"}`}),
		{Role: longhaul.RoleTool, ToolCallID: "c2", Name: "current_time", Content: "12:01", Ref: "sha256:abc"},
		assistant("It will be 13:00."),
	}, rec.Messages)
	if rec.VisibleKey != longhaul.MatchKey("Checking.\nIt will be 13:00.") || rec.AnswerKey != longhaul.MatchKey("It will be 13:00.") || rec.Title != "and in an hour?" {
		t.Errorf("record keys and title: visible %q, answer %q, title %q", rec.VisibleKey, rec.AnswerKey, rec.Title)
	}
	var types []longhaul.EventType
	for _, s := range rec.Calls["c2"].Status {
		types = append(types, longhaul.EventType(s.Type))
	}
	diff(t, "recorded event types", []longhaul.EventType{longhaul.EventToolStart, longhaul.EventToolOutput}, types)
	if c := rec.Calls["c2"]; len(rec.Calls) != 1 || c.Ref != "sha256:abc" || !c.Truncated {
		t.Errorf("recorded calls = %+v", rec.Calls)
	}
	if rec.Usage.TotalTokens != 36 {
		t.Errorf("recorded usage = %+v, want 36 tokens", rec.Usage)
	}
	// The restore says so; the record comes before done.
	events := h.events()
	var thinking longhaul.ThinkingData
	if events[0].Type != longhaul.EventThinking || events[0].Decode(&thinking) != nil || thinking.Message != "Restored the tool calls of 1 earlier turn(s)" {
		t.Errorf("first event = %+v, want the restore's thinking event", events[0])
	}
}

// Runs without a chat, and a client's background requests, neither restore
// nor record.
func TestNoConversationWithoutChat(t *testing.T) {
	for _, tc := range []struct {
		name       string
		chat       string
		background bool
	}{{"no chat id", "", false}, {"background request", "u1/chat-1", true}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.resolve(spec)
			h.env.OnActivity(h.acts.RestoreConversation, mock.Anything, mock.Anything).Return(
				func(context.Context, contract.RestoreRequest) (contract.RestoreResult, error) {
					t.Error("RestoreConversation called")
					return contract.RestoreResult{}, nil
				}).Maybe()
			h.env.OnActivity(h.acts.RecordTurn, mock.Anything, mock.Anything).Return(
				func(context.Context, contract.RecordTurnRequest) error {
					t.Error("RecordTurn called")
					return nil
				}).Maybe()
			h.scriptModel(answer("fine", usage(1, 1)))
			in := input(hi[0], assistant("earlier"), longhaul.Message{Role: longhaul.RoleUser, Content: "again"})
			in.ChatID, in.Background = tc.chat, tc.background
			h.run(in)
			h.result()
		})
	}
}

// recordTurn mocks RecordTurn, once, and returns the request it records
// (filled in when the workflow calls it).
func (h *harness) recordTurn() *contract.RecordTurnRequest {
	rec := new(contract.RecordTurnRequest)
	h.env.OnActivity(h.acts.RecordTurn, mock.Anything, mock.Anything).Return(
		func(_ context.Context, req contract.RecordTurnRequest) error {
			*rec = req
			return nil
		}).Once()
	return rec
}

// A turn keys its answer with shown reasoning and tool cards taken out,
// as runs always did (replays record what they did), and a clean answer
// with longhaul.MatchKey, as the API keys a history read at its edge.
func TestChatTurnKeysItsAnswer(t *testing.T) {
	for _, tt := range []struct{ name, said, want string }{
		{"shown reasoning", "<think>first</think>It is noon.", longhaul.MatchKey("It is noon.")},
		{"clean", "It is  noon.", longhaul.MatchKey("It is noon.")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.resolve(spec)
			rec := h.recordTurn()
			h.scriptModel(answer(tt.said, usage(1, 1)))
			in := input(longhaul.Message{Role: longhaul.RoleUser, Content: "what time is it?"})
			in.ChatID, in.Turn = "u1/chat-1", 1
			h.run(in)
			h.result()
			if rec.AnswerKey != tt.want || rec.VisibleKey != tt.want {
				t.Errorf("keys: answer %q, visible %q, want %q", rec.AnswerKey, rec.VisibleKey, tt.want)
			}
		})
	}
}
