package workflows_test

import (
	"context"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

// fanoutRun is the workflow id of the run of testdata/fanout_history.json:
// its steps' workflow ids are made from it.
const fanoutRun = "replay-fanout-1"

// generateFanoutHistory makes the run of testdata/fanout_history.json again
// (see replays) on the embedded server: the researcher plans three pages to
// read, which need nothing from each other, and the answer, which needs
// them all; the site lets the pages through only once all three are being
// read at once.
func generateFanoutHistory(t *testing.T) (*testenv.Env, client.WorkflowRun) {
	t.Helper()
	crowd := testenv.NewCrowd(3, func(r *http.Request) string { return "Bird " + r.URL.Query().Get("b") + " has a long bill." })
	pageURL, fetch := testenv.Site(t, crowd)
	env := testenv.Start(t, testenv.Options{Fetch: fetch})
	var steps []map[string]any
	for _, b := range []string{"a", "b", "c"} {
		steps = append(steps, map[string]any{
			"kind": "tool", "target": "web_fetch", "title": "Read page " + b, "success": "a bill",
			"arguments": map[string]any{"url": pageURL + "/?b=" + b, "max_chars": nil}, "depends_on": []int{},
		})
	}
	steps = append(steps, map[string]any{"kind": "completion", "title": "Answer", "input": "the bills", "success": "cited", "depends_on": []int{1, 2, 3}})
	env.Model.On(llmtest.HasSchema("plan"), llmtest.JSON(map[string]any{"goal": "Compare three bills", "steps": steps}))
	env.Model.On(llmtest.HasSchema("step_review"), llmtest.JSON(map[string]string{"decision": "ok", "reason": "read"}))
	env.Model.SetDefault(llmtest.Text("Birds a, b and c have long bills."))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var res contract.AgentResult
	run := execute(ctx, t, env, fanoutRun, contract.AgentWorkflowName,
		contract.AgentInput{Agent: "researcher", Messages: []longhaul.Message{{Role: longhaul.RoleUser, Content: "Compare the bills of birds a, b and c."}}}, &res)
	if !strings.HasPrefix(res.Content, "Birds a, b and c") || crowd.Most() != 3 {
		t.Fatalf("result %+v, %d pages read at once; want the answer and 3", res, crowd.Most())
	}
	return env, run
}

// TestFanoutHistoryStartsStepsTogether: the committed run started its
// three steps' workflows, with ids made from the run's and the steps', before
// any of them ended.
func TestFanoutHistoryStartsStepsTogether(t *testing.T) {
	h := loadHistoryFile(t, filepath.Join("testdata", "fanout_history.json"))
	var started []string
	for _, e := range h.GetEvents() {
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
			a := e.GetStartChildWorkflowExecutionInitiatedEventAttributes()
			if a.GetWorkflowType().GetName() != contract.StepWorkflowName {
				t.Errorf("child of type %s, want %s", a.GetWorkflowType().GetName(), contract.StepWorkflowName)
			}
			started = append(started, a.GetWorkflowId())
		case enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED:
			if len(started) < 3 {
				t.Fatalf("a step ended when only %v had started", started)
			}
		}
	}
	want := []string{contract.StepWorkflowID(fanoutRun, "1"), contract.StepWorkflowID(fanoutRun, "2"), contract.StepWorkflowID(fanoutRun, "3")}
	if !slices.Equal(started, want) {
		t.Errorf("steps' workflows %v, want %v", started, want)
	}
}
