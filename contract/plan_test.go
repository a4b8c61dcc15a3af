package contract

import "testing"

// A plan step's workflow works for the run whose step it is; any other
// workflow for itself.
func TestStepRun(t *testing.T) {
	step := StepWorkflowID("run-abc/with-slash", "12")
	if step != "run-abc/with-slash/step-12" {
		t.Fatalf("StepWorkflowID = %q", step)
	}
	for _, c := range []struct{ typ, id, want string }{
		{StepWorkflowName, step, "run-abc/with-slash"},
		{AgentWorkflowName, step, step},
		{StepWorkflowName, "no-step-suffix", "no-step-suffix"},
	} {
		if got := StepRun(c.typ, c.id); got != c.want {
			t.Errorf("StepRun(%q, %q) = %q, want %q", c.typ, c.id, got, c.want)
		}
	}
}
