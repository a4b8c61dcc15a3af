package activities

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/tools"
	"github.com/longhaul-dev/longhaul/skills"
)

// TestAskTools: ResolveAgent gives an agent the ask_ tools of the agents
// its agents: lists that the user may use, with their descriptions and the
// tool output limit; a model call offers them with the question as their
// only parameter, beside the registered tools, in the spec's order.
func TestAskTools(t *testing.T) {
	catalog, err := skills.Load(fstest.MapFS{
		"asker.md":  {Data: []byte("---\nagent: asker\ndescription: Asks\nskills: [clock]\nagents: [helper, vip]\n---\nAsk.\n")},
		"clock.md":  {Data: []byte("---\nskill: clock\ndescription: Clock\ntools: [current_time]\n---\nTell the time.\n")},
		"helper.md": {Data: []byte("---\nagent: helper\ndescription: Knows the time\n---\nHelp.\n")},
		"vip.md":    {Data: []byte("---\nagent: vip\ndescription: For admins\nallow: {roles: [admin]}\n---\nServe.\n")},
	})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tools.NewRegistry(&tools.CurrentTime{})
	if err != nil {
		t.Fatal(err)
	}
	a := New(LLMConfig{BaseURL: "http://127.0.0.1:1/v1", Model: "m"}, catalog, reg, slog.New(slog.DiscardHandler))
	helper := contract.AskSpec{Tool: "ask_helper", Agent: "helper", Description: "Knows the time"}
	vip := contract.AskSpec{Tool: "ask_vip", Agent: "vip", Description: "For admins"}
	for _, tc := range []struct {
		role  string
		tools []string
		asks  []contract.AskSpec
	}{
		{"user", []string{"current_time", "ask_helper"}, []contract.AskSpec{helper}},
		{"admin", []string{"current_time", "ask_helper", "ask_vip"}, []contract.AskSpec{helper, vip}},
	} {
		spec, err := a.ResolveAgent(context.Background(), "asker", longhaul.User{ID: "u", Role: tc.role})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.tools, spec.Tools); diff != "" {
			t.Errorf("%s's tools (-want +got):\n%s", tc.role, diff)
		}
		if diff := cmp.Diff(tc.asks, spec.Asks); diff != "" || spec.AskOutput != a.MaxToolOutput {
			t.Errorf("%s's asks, output %d (-want +got):\n%s", tc.role, spec.AskOutput, diff)
		}
	}
	// An agent that asks none has no limit to carry.
	if spec, _ := a.ResolveAgent(context.Background(), "helper", longhaul.User{ID: "u"}); spec.Asks != nil || spec.AskOutput != 0 {
		t.Errorf("helper's spec %+v", spec)
	}
	offered, err := a.offeredTools(contract.ModelRequest{Tools: []string{"ask_helper", "current_time"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(offered) != 2 || offered[0].Function.Name != "ask_helper" || offered[1].Function.Name != "current_time" {
		t.Fatalf("offered %+v", offered)
	}
	f := offered[0].Function
	if f.Description != "Ask the agent helper (Knows the time). It works on the question on its own and returns its answer." {
		t.Errorf("description %q", f.Description)
	}
	var params struct {
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(f.Parameters.(json.RawMessage), &params); err != nil || len(params.Properties) != 1 || params.Required[0] != "question" {
		t.Errorf("parameters %s: %v", f.Parameters, err)
	}
	// A plan's tool step may ask an agent, with a question.
	plan := func(args string) []string {
		return a.checkPlan(contract.PlanCheckRequest{Tools: []string{"ask_helper"}, Plan: longhaul.Plan{Steps: []longhaul.PlanStep{
			{Kind: longhaul.StepTool, Target: "ask_helper", Title: "Ask", Arguments: json.RawMessage(args)},
			{Kind: longhaul.StepCompletion, Title: "Answer", Input: "the helper's answer"}}}})
	}
	if problems := plan(`{"question":"What time is it?"}`); len(problems) != 0 {
		t.Errorf("a plan that asks the helper: %v", problems)
	}
	if problems := plan(`{"q":1}`); len(problems) != 1 || !strings.Contains(problems[0], `argument "question": required`) {
		t.Errorf("a plan that asks without a question: %v", problems)
	}
	if schema, err := a.planSchema([]string{"ask_helper"}, nil, 3, false, false); err != nil || !strings.Contains(string(schema), `"ask_helper"`) {
		t.Errorf("plan schema %s: %v", schema, err)
	}
	// A name that asks no agent of the catalog is no tool.
	if _, err := a.offeredTools(contract.ModelRequest{Tools: []string{"ask_ghost"}}); err == nil {
		t.Error("ask_ghost was offered")
	}
}
