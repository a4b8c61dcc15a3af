package activities_test

import (
	"context"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/tools"
)

// A memory step is a valid plan step only for an agent with memory, and
// only with something to look for.
func TestPlanCheckMemorySteps(t *testing.T) {
	reg, err := tools.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	acts := activities.New(activities.LLMConfig{}, nil, reg, nil)
	answer := longhaul.PlanStep{Kind: longhaul.StepCompletion, Title: "Answer"}
	cases := []struct {
		name   string
		memory bool
		step   longhaul.PlanStep
		want   string // a problem containing this, or "" for none
	}{
		{"with memory", true, longhaul.PlanStep{Kind: longhaul.StepMemory, Title: "Recall", Input: "diet"}, ""},
		{"without memory", false, longhaul.PlanStep{Kind: longhaul.StepMemory, Title: "Recall", Input: "diet"}, "does not have"},
		{"no input", true, longhaul.PlanStep{Kind: longhaul.StepMemory, Title: "Recall"}, "no input"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := acts.SupervisePlan(context.Background(), contract.PlanCheckRequest{
				Plan: longhaul.Plan{Steps: []longhaul.PlanStep{c.step, answer}}, Memory: c.memory,
			})
			if err != nil {
				t.Fatal(err)
			}
			problems := strings.Join(got.Problems, "; ")
			if c.want == "" && !got.OK || c.want != "" && (got.OK || !strings.Contains(problems, c.want)) {
				t.Errorf("check = ok %v, problems %q; want %q", got.OK, problems, c.want)
			}
		})
	}
}
