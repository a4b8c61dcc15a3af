package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/evals"
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

// TestEvalExportCommitsSecrets is the attack of a case file that carries
// a secret a tool echoed (an API key, a password in a URL) into a
// repository: an exported case has what the secret scrubber knows hidden.
func TestEvalExportCommitsSecrets(t *testing.T) {
	secrets := environSecrets([]string{"SHOP_API_KEY=sk-live-0123456789", "HOME=/root", "LONGHAUL_DATABASE_URL=postgres://app:hunter22@db:5432/lh"})
	var cs evals.Case
	cs.ID, cs.Agent = "run-1", "shop"
	cs.Messages = []longhaul.Message{{Role: longhaul.RoleTool, Content: `{"echo":"sk-live-0123456789"}`}}
	cs.Answer = "connect to postgres://app:hunter22@db:5432/lh, home is /root"
	got, err := redactCase(cs, secrets)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(got)
	for _, leak := range []string{"sk-live-0123456789", "hunter22"} {
		if strings.Contains(string(b), leak) {
			t.Errorf("the exported case holds %q: %s", leak, b)
		}
	}
	if !strings.Contains(got.Messages[0].Content, "${SHOP_API_KEY}") || !strings.Contains(got.Answer, "/root") {
		t.Errorf("redacted case %+v", got)
	}
}
