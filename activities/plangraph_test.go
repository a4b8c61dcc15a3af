package activities_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
)

// The planner is asked, in its schema and its prompt, which steps each
// step needs, and its numbers come back as they were written.
func TestPlanAsksWhichStepsEachNeeds(t *testing.T) {
	f := newFixture(t, nil, nil)
	f.srv.Enqueue(llmtest.Text(`{"goal":"g","steps":[` +
		`{"kind":"tool","target":"probe","title":"a","arguments":{"q":"a"},"success":"s","depends_on":[]},` +
		`{"kind":"tool","target":"probe","title":"b","arguments":{"q":"b"},"success":"s","depends_on":[]},` +
		`{"kind":"completion","title":"answer","input":"i","success":"s","depends_on":[1,2]}]}`))
	resp, err := execute[contract.PlanResponse](t, f.activityEnv(), f.acts.Plan, contract.PlanRequest{
		Caller: contract.Caller{Agent: "prober"}, Messages: userMessage("probe a and b"), Tools: []string{"probe"},
	})
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	if len(resp.Steps) != 3 || resp.Steps[0].DependsOn != nil || !slices.Equal(resp.Steps[2].DependsOn, []string{"1", "2"}) {
		t.Fatalf("steps = %+v, want the completion step to need 1 and 2 and the others nothing", resp.Steps)
	}
	req := f.srv.Requests()[0]
	if !strings.Contains(req.Chat.Messages[0].Content, `"depends_on"`) {
		t.Errorf("the planner's prompt does not explain depends_on:\n%s", req.Chat.Messages[0].Content)
	}
	raw, err := json.Marshal(req.Chat.ResponseFormat.JSONSchema.Schema)
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties struct {
			Steps struct {
				Items struct {
					AnyOf []struct {
						Properties map[string]json.RawMessage `json:"properties"`
						Required   []string                   `json:"required"`
					} `json:"anyOf"`
				} `json:"items"`
			} `json:"steps"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	variants := schema.Properties.Steps.Items.AnyOf
	if len(variants) == 0 {
		t.Fatalf("schema has no step variants: %s", raw)
	}
	for _, v := range variants {
		if string(v.Properties["depends_on"]) != `{"items":{"type":"integer"},"type":"array"}` || !slices.Contains(v.Required, "depends_on") {
			t.Errorf("variant %s: depends_on = %s, required %v; want a required array of step numbers", v.Properties["kind"], v.Properties["depends_on"], v.Required)
		}
	}
}

// A step number below 1 is output the planner has to get right.
func TestPlanRefusesStepNumberZero(t *testing.T) {
	f := newFixture(t, nil, nil)
	f.srv.Enqueue(llmtest.Text(`{"goal":"g","steps":[{"kind":"completion","title":"answer","input":"i","success":"s","depends_on":[0]}]}`))
	_, err := execute[contract.PlanResponse](t, f.activityEnv(), f.acts.Plan, contract.PlanRequest{Caller: contract.Caller{Agent: "prober"}, Messages: userMessage("hi")})
	wantAppError(t, err, longhaul.ErrTypeModelBadOutput, false, "numbered from 1")
}

// The plan supervisor refuses a step that needs itself, a step the plan
// does not have, the completion step, or steps needing each other in a
// cycle; it takes needs on finished steps and forward needs without one.
func TestPlanCheckNeeds(t *testing.T) {
	f := newFixture(t, nil, nil)
	step := func(id string, needs ...string) longhaul.PlanStep {
		return longhaul.PlanStep{ID: id, Kind: longhaul.StepTool, Target: "probe", Title: "probe " + id, Arguments: json.RawMessage(`{"q":"x"}`), Status: longhaul.StepPending, DependsOn: needs}
	}
	answer := func(id string, needs ...string) longhaul.PlanStep {
		return longhaul.PlanStep{ID: id, Kind: longhaul.StepCompletion, Title: "Answer", Status: longhaul.StepPending, DependsOn: needs}
	}
	done := step("1")
	done.Status = longhaul.StepDone
	cases := []struct {
		name  string
		steps []longhaul.PlanStep
		want  string // a problem containing this, or "" for none
	}{
		{"independent", []longhaul.PlanStep{step("1"), step("2"), answer("3", "1", "2")}, ""},
		{"waves", []longhaul.PlanStep{step("1"), step("2", "1"), answer("3", "1", "2")}, ""},
		{"a later step", []longhaul.PlanStep{step("1", "2"), step("2"), answer("3", "1", "2")}, ""},
		{"a finished step", []longhaul.PlanStep{done, step("2", "1"), answer("3", "2")}, ""},
		{"itself", []longhaul.PlanStep{step("1", "1"), answer("2", "1")}, "step 1 needs itself"},
		{"dangling", []longhaul.PlanStep{step("4"), step("5", "9"), answer("6")}, "step 2 needs step 6, which the plan does not have"},
		{"the completion step", []longhaul.PlanStep{step("1", "2"), answer("2")}, "step 1 needs the completion step"},
		{"a cycle", []longhaul.PlanStep{step("1"), step("2", "3"), step("3", "4"), step("4", "2"), answer("5")}, "steps 2 → 3 → 4 → 2 need each other in a cycle"},
		{"a renumbered re-plan's cycle", []longhaul.PlanStep{done, step("7", "8"), step("8", "7"), answer("9")}, "steps 1 → 2 → 1 need each other"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := f.acts.SupervisePlan(context.Background(), contract.PlanCheckRequest{
				Plan: longhaul.Plan{Steps: c.steps}, Tools: []string{"probe"},
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

// A planner's answer without depends_on (an endpoint that does not hold to
// the schema) is still a plan: its steps need nothing, and so run in order.
func TestPlanWithoutNeedsIsAccepted(t *testing.T) {
	f := newFixture(t, nil, nil)
	f.srv.Enqueue(llmtest.Text(`{"goal":"g","steps":[{"kind":"completion","title":"answer","input":"i","success":"s"}]}`))
	resp, err := execute[contract.PlanResponse](t, f.activityEnv(), f.acts.Plan, contract.PlanRequest{Caller: contract.Caller{Agent: "prober"}, Messages: userMessage("hi")})
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	if len(resp.Steps) != 1 || resp.Steps[0].DependsOn != nil {
		t.Errorf("steps = %+v, want the completion step needing nothing", resp.Steps)
	}
	if n := len(f.srv.Requests()); n != 1 {
		t.Errorf("%d planner calls, want 1 (no correction)", n)
	}
}

// An agent that names no parallel: gets the worker's bound
// (LONGHAUL_PLAN_PARALLEL).
func TestResolveAgentTakesTheWorkersBound(t *testing.T) {
	f := newFixture(t, nil, nil)
	f.acts.PlanParallel = 3
	spec, err := execute[contract.AgentSpec](t, f.activityEnv(), f.acts.ResolveAgent, "prober", longhaul.User{})
	if err != nil {
		t.Fatal(err)
	}
	if spec.Parallel != 3 {
		t.Errorf("Parallel = %d, want the worker's 3", spec.Parallel)
	}
}

// The plan's model review sees which steps each step needs, by number.
func TestPlanReviewSeesNeeds(t *testing.T) {
	f := newFixture(t, nil, nil)
	f.srv.Enqueue(llmtest.Text(`{"decision":"ok","reason":"fine"}`))
	probe := func(id string) longhaul.PlanStep {
		return longhaul.PlanStep{ID: id, Kind: longhaul.StepTool, Target: "probe", Title: "probe " + id, Arguments: json.RawMessage(`{"q":"x"}`), Status: longhaul.StepPending}
	}
	answer := longhaul.PlanStep{ID: "9", Kind: longhaul.StepCompletion, Title: "Answer", Status: longhaul.StepPending, DependsOn: []string{"7", "8"}}
	got, err := execute[contract.PlanCheck](t, f.activityEnv(), f.acts.SupervisePlan, contract.PlanCheckRequest{
		Caller: contract.Caller{Agent: "prober"}, Plan: longhaul.Plan{Steps: []longhaul.PlanStep{probe("7"), probe("8"), answer}},
		Tools: []string{"probe"}, ModelReview: true,
	})
	if err != nil || !got.OK {
		t.Fatalf("SupervisePlan = %+v, %v", got, err)
	}
	msgs := f.srv.Requests()[0].Chat.Messages
	if shown := msgs[len(msgs)-1].Content; !strings.Contains(shown, "3. [pending] completion: Answer (needs 1, 2)") {
		t.Errorf("the reviewer's plan does not say what the answer needs:\n%s", shown)
	}
}
