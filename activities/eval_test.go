package activities_test

import (
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
)

// TestGradeCaseRubric grades a replay with a rubric on the scripted model:
// the grade call carries the rubric and the answer and asks for the
// verdict's schema; the verdict, its reason and its usage come back beside
// the graders that need no model and the comparison with the recording.
func TestGradeCaseRubric(t *testing.T) {
	f := newFixture(t, nil, nil)
	f.srv.On(llmtest.HasSchema("grade"), llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		last := r.Chat.Messages[len(r.Chat.Messages)-1].Content
		pass := strings.Contains(last, "Rubric:\nGives a length in cm") && strings.Contains(last, "47 cm")
		return llmtest.JSON(map[string]any{"pass": pass, "reason": "the answer gives 47 cm"})
	}))
	c := contract.EvalCase{
		ID: "pelican", Agent: "assistant", Answer: "Up to 47 cm.",
		Messages: []longhaul.Message{{Role: longhaul.RoleUser, Content: "How long is a pelican's bill?"}},
		Calls:    []contract.PinnedCall{{Name: "web_fetch", Arguments: `{"url":"http://x"}`, Content: "47 cm"}},
	}
	req := contract.GradeRequest{
		Case:    c,
		Graders: "graders:\n  - {name: helpful, rubric: Gives a length in cm}\n  - {name: inches, contains: inch}\n",
		Result: contract.AgentResult{Content: "Up to 47 cm.", Replay: &contract.ReplayData{
			Calls: []contract.PinnedCall{{Name: "web_fetch", Arguments: `{"url":"http://x"}`, Content: "47 cm", Match: contract.MatchExact}},
		}},
	}
	v, err := f.activityEnv().ExecuteActivity(f.acts.GradeCase, req)
	if err != nil {
		t.Fatal(err)
	}
	var res contract.CaseResult
	if err := v.Get(&res); err != nil {
		t.Fatal(err)
	}
	if len(res.Grades) != 2 || !res.Grades[0].Pass || res.Grades[0].Reason != "the answer gives 47 cm" || res.Grades[1].Pass {
		t.Fatalf("grades %+v", res.Grades)
	}
	if res.Pass || res.GradeUsage.TotalTokens == 0 || len(res.CallsDiff) != 0 || res.AnswerDiff != "" {
		t.Errorf("result %+v", res)
	}
	if _, err := f.activityEnv().ExecuteActivity(f.acts.GradeCase, contract.GradeRequest{Case: c, Graders: "graders:\n  - {colour: red}\n"}); err == nil {
		t.Error("a bad graders file graded")
	}
}
