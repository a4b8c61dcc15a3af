package workflows_test

import (
	"encoding/json"
	"testing"

	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/workflows"
)

// TestInputIsOneFlatObject: the checkpoint sits beside AgentInput's fields,
// so the input the API sends decodes as an Input, and an Input a run
// continued with reads as the AgentInput it carries.
func TestInputIsOneFlatObject(t *testing.T) {
	in := workflows.Input{
		AgentInput: contract.AgentInput{Agent: "assistant", ChatID: "c1"},
		Resume:     &workflows.Checkpoint{Offset: 7, Loop: &workflows.LoopState{Call: "turn-2", Turn: 1}},
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var flat map[string]json.RawMessage
	if err := json.Unmarshal(b, &flat); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"agent", "chat_id", "resume"} {
		if _, ok := flat[k]; !ok {
			t.Errorf("%s has no top-level %q", b, k)
		}
	}
	var back workflows.Input
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Agent != "assistant" || back.Resume == nil || back.Resume.Offset != 7 || back.Resume.Loop.Call != "turn-2" {
		t.Fatalf("decoded %+v", back)
	}
	var api contract.AgentInput
	if err := json.Unmarshal(b, &api); err != nil || api.Agent != "assistant" || api.ChatID != "c1" {
		t.Fatalf("as AgentInput: %+v, %v", api, err)
	}
}
