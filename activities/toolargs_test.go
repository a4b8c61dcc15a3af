package activities_test

import (
	"testing"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
)

// TestChatCompletionSendsNoMalformedArguments: a history whose tool calls'
// arguments are not one JSON object (a model's malformed call, a restored
// turn, a client's own history) goes out repaired, or with empty
// arguments, never as sent: Ollama refuses such a history for good (400
// "invalid tool call arguments").
func TestChatCompletionSendsNoMalformedArguments(t *testing.T) {
	f := newFixture(t, nil, nil)
	f.srv.Enqueue(llmtest.Text("Sorry, once more."))
	env := f.activityEnv()
	conv := []longhaul.Message{
		{Role: longhaul.RoleUser, Content: "What time is it in Berlin and Paris?"},
		{Role: longhaul.RoleAssistant, ToolCalls: []longhaul.ToolCall{
			{ID: "call_cut", Name: "current_time", Arguments: `{"timezone": "Europe/Ber`},
			{ID: "call_twice", Name: "current_time", Arguments: `"{\"timezone\":\"Europe/Paris\"}"`},
			{ID: "call_none", Name: "current_time"},
			{ID: "call_fine", Name: "current_time", Arguments: `{"timezone":"UTC"}`},
		}},
		{Role: longhaul.RoleTool, ToolCallID: "call_cut", Name: "current_time", Content: "error: refused"},
		{Role: longhaul.RoleTool, ToolCallID: "call_twice", Name: "current_time", Content: "time: …"},
		{Role: longhaul.RoleTool, ToolCallID: "call_none", Name: "current_time", Content: "time: …"},
		{Role: longhaul.RoleTool, ToolCallID: "call_fine", Name: "current_time", Content: "time: …"},
	}
	if _, err := chat(t, env, f.acts, contract.ModelRequest{Call: "turn-2", Agent: "naked", Messages: conv}); err != nil {
		t.Fatalf("ChatCompletion: %v", err)
	}
	var got []string
	for _, m := range f.srv.Requests()[0].Chat.Messages {
		for _, tc := range m.ToolCalls {
			got = append(got, tc.Function.Arguments)
		}
	}
	diff(t, "arguments the model received", []string{`{}`, `{"timezone":"Europe/Paris"}`, `{}`, `{"timezone":"UTC"}`}, got)
}
