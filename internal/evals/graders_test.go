package evals_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/evals"
)

var recorded = contract.EvalCase{
	ID: "pelican-1", Agent: "researcher", Answer: "Up to 47 cm.",
	Messages: []longhaul.Message{{Role: longhaul.RoleUser, Content: "How long is a pelican's bill?"}},
	Calls:    []contract.PinnedCall{{Name: "web_fetch", Arguments: `{"url":"http://x"}`, Content: "47 cm"}},
}

// judge passes answers that hold its word and counts its calls.
type judge struct {
	word  string
	calls int
}

func (j *judge) Judge(_ context.Context, rubric, question, answer string) (evals.Verdict, error) {
	j.calls++
	if rubric == "" || question == "" {
		return evals.Verdict{}, errors.New("no rubric or question")
	}
	return evals.Verdict{Pass: strings.Contains(answer, j.word), Reason: "judged", Usage: longhaul.Usage{TotalTokens: 7}}, nil
}

func TestGraders(t *testing.T) {
	gs, err := evals.ParseGraders([]byte(`graders:
  - {name: exact, exact: "Up to 47 cm."}
  - {name: contains, contains: "47 cm"}
  - {name: regex, regex: '\d+ cm'}
  - {name: json, json_schema: {type: object, required: [cm]}, cases: ["json-*"]}
  - {name: rubric, rubric: "Gives a length in centimetres"}
  - {name: answer, answer: recorded}
  - {name: calls, tool_calls: exact}
  - {name: names, tool_calls: names}
`))
	if err != nil {
		t.Fatal(err)
	}
	same := []contract.PinnedCall{{Name: "web_fetch", Arguments: `{ "url": "http://x" }`}}
	other := []contract.PinnedCall{{Name: "web_fetch", Arguments: `{"url":"http://y"}`}}
	for _, tc := range []struct {
		name   string
		c      contract.EvalCase
		answer string
		calls  []contract.PinnedCall
		fail   []string
	}{
		{name: "all pass", c: recorded, answer: "Up to 47 cm.", calls: same},
		{name: "other answer", c: recorded, answer: "About 12 inches.", calls: same, fail: []string{"exact", "contains", "regex", "rubric", "answer"}},
		{name: "other arguments", c: recorded, answer: "Up to 47 cm.", calls: other, fail: []string{"calls"}},
		{name: "no call", c: recorded, answer: "Up to 47 cm.", fail: []string{"calls", "names"}},
		{name: "json case", c: contract.EvalCase{ID: "json-1", Answer: `{"cm":47}`, Messages: recorded.Messages}, answer: `{"inch":18}`,
			fail: []string{"exact", "contains", "regex", "json", "rubric", "answer"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := &judge{word: "cm"}
			res, usage, err := gs.Grade(context.Background(), tc.c, tc.answer, tc.calls, j)
			if err != nil {
				t.Fatal(err)
			}
			var failed []string
			for _, r := range res {
				if !r.Pass {
					failed = append(failed, r.Grader)
					if r.Reason == "" {
						t.Errorf("%s failed without a reason", r.Grader)
					}
				}
			}
			if strings.Join(failed, ",") != strings.Join(tc.fail, ",") {
				t.Errorf("failed %v, want %v", failed, tc.fail)
			}
			if j.calls != 1 || usage.TotalTokens != 7 {
				t.Errorf("judge called %d times, usage %+v", j.calls, usage)
			}
		})
	}
}

func TestParseGradersRefuses(t *testing.T) {
	for _, bad := range []string{
		"graders:\n  - {contains: a, regex: b}\n",
		"graders:\n  - {name: x}\n",
		"graders:\n  - {regex: '('}\n",
		"graders:\n  - {answer: maybe}\n",
		"graders:\n  - {tool_calls: some}\n",
		"graders:\n  - {contains: a, colour: red}\n",
	} {
		if _, err := evals.ParseGraders([]byte(bad)); !errors.Is(err, evals.ErrGraders) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	gs, err := evals.ParseGraders(nil)
	if err != nil || len(gs.Graders) != 2 {
		t.Errorf("default graders %+v, %v", gs, err)
	}
}

func TestResultAndReport(t *testing.T) {
	replayed := contract.AgentResult{Content: "Up to 47 cm.\nSource: x", Usage: longhaul.Usage{TotalTokens: 10}, Replay: &contract.ReplayData{
		Calls: []contract.PinnedCall{{Name: "web_fetch", Arguments: `{"url":"http://x"}`}, {Name: "web_search", Arguments: `{}`, Match: contract.MatchNone}}, NotRecorded: 1,
	}}
	r := evals.Result(recorded, replayed, "", []contract.GraderResult{{Grader: "contains", Pass: true}})
	if !r.Pass || r.NotRecorded != 1 || len(r.CallsDiff) != 1 || !strings.Contains(r.AnswerDiff, "+ Source: x") {
		t.Fatalf("result %+v", r)
	}
	failed := evals.Result(recorded, contract.AgentResult{}, "the model failed", nil)
	rep := evals.NewReport([]contract.CaseResult{r, failed})
	if rep.Passed != 1 || rep.Failed != 1 || rep.PassRate != 0.5 || rep.NotRecorded != 1 {
		t.Fatalf("report %+v", rep)
	}
	var table, md strings.Builder
	if err := rep.Table(&table); err != nil {
		t.Fatal(err)
	}
	rep.Markdown(&md)
	for _, want := range []string{"PASS", "FAIL", "1/2 passed"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	if !strings.Contains(md.String(), "The replay failed: the model failed") {
		t.Errorf("markdown:\n%s", md.String())
	}
}
