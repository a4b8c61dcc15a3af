package main

import (
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/contract"
)

func TestEvalExportQuery(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	q, err := exportQuery(exportFlags{agent: "researcher", since: 24 * time.Hour, to: "2026-11-27T06:00:00Z"}, now)
	if err != nil {
		t.Fatal(err)
	}
	want := "WorkflowType = 'AgentWorkflow' AND ExecutionStatus = 'Completed' AND LonghaulAgent = 'researcher' AND " +
		"StartTime >= '2026-11-26T12:00:00Z' AND StartTime < '2026-11-27T06:00:00Z'"
	if q != want {
		t.Errorf("query\n got %s\nwant %s", q, want)
	}
	if _, err := exportQuery(exportFlags{from: "yesterday"}, now); err == nil {
		t.Error("a --from that is no time was taken")
	}
}

func TestEvalModels(t *testing.T) {
	var in contract.EvalInput
	if err := setModels(&in, []string{"llama3.1:8b", "answer=llama3.2", "plan=remote:gpt-4o"}); err != nil {
		t.Fatal(err)
	}
	if in.Model != "llama3.1:8b" || in.Models.Answer != "llama3.2" || in.Models.Plan != "remote:gpt-4o" || in.Models.Review != "" {
		t.Errorf("models %+v %+v", in.Model, in.Models)
	}
	if err := setModels(&in, []string{"grade=x"}); err == nil {
		t.Error("an unknown role was taken")
	}
}

func TestEvalCommandUsage(t *testing.T) {
	var out, errs strings.Builder
	if code := Main([]string{"eval"}, &out, &errs); code != 2 || errs.Len() == 0 {
		t.Errorf("longhaul eval: %d %q", code, errs.String())
	}
}

func TestEvalIDIsStable(t *testing.T) {
	in := contract.EvalInput{Cases: []contract.EvalCase{{ID: "a", Agent: "researcher"}}, Graders: "graders: []"}
	a, b := evalID(runFlags{}, in), evalID(runFlags{}, in)
	if a != b || !strings.HasPrefix(a, "eval-") {
		t.Errorf("ids %s, %s", a, b)
	}
	if c := evalID(runFlags{agents: "candidate"}, in); c == a {
		t.Error("another agents directory has the same id")
	}
	if got := evalID(runFlags{id: "nightly"}, in); got != "eval-nightly" {
		t.Errorf("--id nightly: %s", got)
	}
}

// TestEvalExportAllPrincipalsByDefault is the attack of an export that
// writes every principal's messages and tool results into files meant to
// be committed: a query that names no principal is refused unless
// --all-principals says so; --principal filters by the user search
// attribute.
func TestEvalExportAllPrincipalsByDefault(t *testing.T) {
	for _, tc := range []struct {
		f  exportFlags
		ok bool
	}{
		{exportFlags{agent: "researcher"}, false},
		{exportFlags{principal: "ann", all: true}, false},
		{exportFlags{principal: "ann'"}, false},
		{exportFlags{principal: "ann"}, true},
		{exportFlags{all: true}, true},
		{exportFlags{runs: multi{"run-1"}}, true},
	} {
		if err := checkExportScope(tc.f); (err == nil) != tc.ok {
			t.Errorf("export %+v: %v, want ok %v", tc.f, err, tc.ok)
		}
	}
	q, err := exportQuery(exportFlags{principal: "owui/u1"}, time.Now())
	if err != nil || !strings.Contains(q, "LonghaulUser = 'owui/u1'") {
		t.Errorf("query %q, %v: want it filtered by the principal", q, err)
	}
	var out, errs strings.Builder
	if code := Main([]string{"eval", "export", "--out", t.TempDir()}, &out, &errs); code != 2 || !strings.Contains(errs.String(), "--all-principals") {
		t.Errorf("an export naming no principal: %d %q", code, errs.String())
	}
}
