package activities_test

import (
	"testing"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/contract"
)

func TestWithoutDocuments(t *testing.T) {
	s := contract.AgentSpec{
		ID:    "a",
		Tools: []string{"current_time", longhaul.DocumentSearchTool, "web_fetch"},
		Skills: []contract.SkillSpec{
			{ID: "clock", Tools: []string{"current_time"}},
			{ID: "documents", Tools: []string{longhaul.DocumentSearchTool}},
			{ID: "mixed", Tools: []string{longhaul.DocumentSearchTool, "web_fetch"}},
			{ID: "triage"},
		},
	}
	got := activities.WithoutDocuments(s)
	want := contract.AgentSpec{
		ID:    "a",
		Tools: []string{"current_time", "web_fetch"},
		Skills: []contract.SkillSpec{
			{ID: "clock", Tools: []string{"current_time"}},
			{ID: "mixed", Tools: []string{"web_fetch"}},
			{ID: "triage"},
		},
	}
	diff(t, "spec", want, got)
	// The spec it came from is left as it was.
	if len(s.Tools) != 3 || len(s.Skills) != 4 || len(s.Skills[2].Tools) != 2 {
		t.Errorf("WithoutDocuments changed its argument: %+v", s)
	}
}

func TestRunVectorStores(t *testing.T) {
	diff(t, "stores", []string{"vs_a", "vs_b", "vs_c"}, activities.RunVectorStores([]string{"vs_a", "vs_b"}, []string{"vs_b", "", "vs_c", "vs_a"}))
	if got := activities.RunVectorStores(nil, nil); got != nil {
		t.Errorf("no stores = %v", got)
	}
	var many []string
	for i := range 40 {
		many = append(many, "vs_"+string(rune('a'+i%26))+string(rune('a'+i/26)))
	}
	if got := activities.RunVectorStores(nil, many); len(got) != longhaul.MaxVectorStores {
		t.Errorf("%d stores, want the first %d", len(got), longhaul.MaxVectorStores)
	}
}
