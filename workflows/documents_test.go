package workflows_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/stretchr/testify/mock"
)

// docSpec is an agent with the documents skill and vector stores of its
// own.
var docSpec = contract.AgentSpec{
	ID: "assistant", Mode: "chat", Model: "test-model", MaxTurns: 8,
	Tools:        []string{"current_time", longhaul.DocumentSearchTool},
	Skills:       []contract.SkillSpec{{ID: "clock", Tools: []string{"current_time"}}, {ID: "documents", Tools: []string{longhaul.DocumentSearchTool}}},
	VectorStores: []string{"vs_agent"},
}

// TestDocumentSearchOffered: a run searches the agent's stores and the
// request's, each once; the model is offered document_search and told so
// (Documents), and the tool call carries the stores, never the model's.
func TestDocumentSearchOffered(t *testing.T) {
	h := newHarness(t)
	h.resolve(docSpec)
	call := longhaul.ToolCall{ID: "c1", Name: longhaul.DocumentSearchTool, Arguments: `{"query":"coefficient","vector_store_ids":["vs_other"]}`}
	h.scriptModel(askTools("", usage(1, 1), call), answer("It is 42.7 [report.pdf, chunk 1].", usage(1, 1)))
	var got []string
	h.env.OnActivity(h.acts.CallTool, mock.Anything, mock.Anything).Return(
		func(_ context.Context, r contract.ToolRequest) (contract.ToolResponse, error) {
			got = r.VectorStores
			return contract.ToolResponse{Content: `{"results":[]}`}, nil
		})
	h.run(contract.AgentInput{Agent: "assistant", User: longhaul.User{ID: "u1"}, VectorStores: []string{"vs_chat", "vs_agent"},
		Messages: []longhaul.Message{{Role: longhaul.RoleUser, Content: "What is the coefficient?"}}})
	h.result()
	if diff := cmp.Diff([]string{"vs_agent", "vs_chat"}, got); diff != "" {
		t.Errorf("the tool call's stores (-want +got):\n%s", diff)
	}
	for i, req := range h.modelCalls() {
		if !req.Documents || !slices.Contains(req.Tools, longhaul.DocumentSearchTool) {
			t.Errorf("model call %d: Documents %v, tools %v", i, req.Documents, req.Tools)
		}
	}
}

// TestDocumentSearchNotOfferedWithoutStores: an agent with the documents
// skill and no stores (request or agent) runs as before the skill existed.
func TestDocumentSearchNotOfferedWithoutStores(t *testing.T) {
	h := newHarness(t)
	s := docSpec
	s.VectorStores = nil
	h.resolve(s)
	h.scriptModel(answer("Hello.", usage(1, 1)))
	h.run(contract.AgentInput{Agent: "assistant", User: longhaul.User{ID: "u1"},
		Messages: []longhaul.Message{{Role: longhaul.RoleUser, Content: "Hi"}}})
	h.result()
	calls := h.modelCalls()
	if len(calls) != 1 || calls[0].Documents || !slices.Equal(calls[0].Tools, []string{"current_time"}) {
		t.Errorf("model calls = %+v", calls)
	}
}

// TestDocumentSearchOutputWhole: a document_search result longer than
// other tools' excerpt reaches the tool_output event whole, so that the
// Responses API can render its file_search_call results from it.
func TestDocumentSearchOutputWhole(t *testing.T) {
	h := newHarness(t)
	h.resolve(docSpec)
	call := longhaul.ToolCall{ID: "c1", Name: longhaul.DocumentSearchTool, Arguments: `{"query":"coefficient"}`}
	h.scriptModel(askTools("", usage(1, 1), call), answer("It is 42.7 [report.pdf, chunk 1].", usage(1, 1)))
	out := `{"results":[{"file_id":"file-1","filename":"report.pdf","chunk":1,"score":0.9,"text":"` + strings.Repeat("The coefficient was 42.7. ", 200) + `"}]}`
	h.onTool("c1", contract.ToolResponse{Content: out}, nil).Once()
	h.run(contract.AgentInput{Agent: "assistant", User: longhaul.User{ID: "u1"},
		Messages: []longhaul.Message{{Role: longhaul.RoleUser, Content: "What is the coefficient?"}}})
	h.result()
	var got longhaul.ToolOutputData
	for _, e := range h.events() {
		if e.Type == longhaul.EventToolOutput {
			if err := e.Decode(&got); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got.Output != out || got.Truncated {
		t.Errorf("tool_output has %d characters (truncated %v), want the %d of the result", len(got.Output), got.Truncated, len(out))
	}
}
