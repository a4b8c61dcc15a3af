package workflows_test

import (
	"context"
	"testing"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/stretchr/testify/mock"
)

// A model call whose older turns do not fit makes the run compact them
// once: the Compact activity runs with the compact role's model, the call
// is made again with the summary, later calls carry it, and each step is a
// context event.
func TestCompactsOlderTurnsOnce(t *testing.T) {
	h := newHarness(t)
	s := spec
	s.Models = contract.RoleModels{Compact: "small-model"}
	s.Context = 4096
	h.resolve(s)
	call := longhaul.ToolCall{ID: "call_1", Name: "current_time", Arguments: `{}`}
	over := longhaul.ContextData{Model: "test-model", Window: 4096, Used: 5000, Reserved: 512}
	fitted := longhaul.ContextData{Call: "turn-1", Model: "test-model", Window: 4096, Used: 3000, Reserved: 512, Left: 584, Summarized: 2}
	h.scriptModel(
		reply{resp: contract.ModelResponse{Compact: 2, Context: &over}},
		reply{resp: contract.ModelResponse{Message: assistant("", call), FinishReason: "tool_calls", Usage: usage(10, 2), Model: "test-model", Context: &fitted}},
		answer("It is Thursday.", usage(20, 4)),
	).Times(3)
	h.onTool("call_1", contract.ToolResponse{Content: "Thursday"}, nil).Once()
	summary := longhaul.Summary{Text: "The user said hello twice.", Covers: 2, Key: "k", Model: "small-model", Tokens: 7}
	var compacts []contract.CompactRequest
	h.env.OnActivity(h.acts.Compact, mock.Anything, mock.Anything).Return(
		func(_ context.Context, req contract.CompactRequest) (contract.CompactResponse, error) {
			compacts = append(compacts, req)
			return contract.CompactResponse{Summary: summary, Usage: usage(100, 20), Calls: 1}, nil
		}).Once()
	msgs := []longhaul.Message{
		{Role: longhaul.RoleUser, Content: "hello"}, {Role: longhaul.RoleAssistant, Content: "hi"},
		{Role: longhaul.RoleUser, Content: "what day is it?"},
	}
	h.run(input(msgs...))
	if res := h.result(); res.Content != "It is Thursday." {
		t.Fatalf("result %q", res.Content)
	}
	diff(t, "compact requests", []contract.CompactRequest{{
		Call: "turn-1-compact", Caller: contract.Caller{Agent: "assistant", Principal: u1, Model: "small-model"}, Messages: msgs, Upto: 2, Window: 4096,
	}}, compacts)
	reqs := h.modelCallsN(3)
	for i, r := range reqs {
		if r.Window != 4096 {
			t.Errorf("call %d: window %d, want the agent's 4096", i+1, r.Window)
		}
	}
	if reqs[0].Summary != nil || reqs[1].Summary == nil || *reqs[1].Summary != summary || reqs[2].Summary == nil {
		t.Errorf("summaries sent: %v, %v, %v; want none, then the summary on every later call", reqs[0].Summary, reqs[1].Summary, reqs[2].Summary)
	}
	var ctxEvents []longhaul.ContextData
	for _, e := range h.events() {
		if e.Type == longhaul.EventContext {
			var d longhaul.ContextData
			if err := e.Decode(&d); err != nil {
				t.Fatal(err)
			}
			ctxEvents = append(ctxEvents, d)
		}
	}
	compacted := over
	compacted.Call, compacted.Compacted, compacted.Summarized, compacted.SummaryTokens = "turn-1", true, 2, 7
	diff(t, "context events", []longhaul.ContextData{compacted, fitted}, ctxEvents)
	st := h.state()
	if st.Usage != usage(130, 26) {
		t.Errorf("usage %+v; want the compaction's counted", st.Usage)
	}
	if st.Status != contract.StatusCompleted {
		t.Errorf("status %s", st.Status)
	}
}
