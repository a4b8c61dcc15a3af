package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/evals"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"go.temporal.io/sdk/client"
)

// TestEvalExportAndRun records a run on the embedded stack, exports it
// with longhaul eval export and evaluates it with longhaul eval run: it
// passes while the model answers as recorded, and the command exits 1
// with a report of the failure once the model answers otherwise.
func TestEvalExportAndRun(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	env.Model.SetDefault(llmtest.Text("Hello there."))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "hello-1", TaskQueue: testenv.TaskQueue},
		contract.AgentWorkflowName, contract.AgentInput{Agent: "naked", Messages: []longhaul.Message{{Role: longhaul.RoleUser, Content: "Say hello."}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Get(ctx, nil); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LONGHAUL_TEMPORAL_ADDRESS", env.Server.FrontendAddr())
	t.Setenv("LONGHAUL_NATS_URL", env.NATSURL)
	t.Setenv("LONGHAUL_LLM_BASE_URL", env.Model.URL())
	t.Setenv("LONGHAUL_LLM_MODEL", "llmtest")
	t.Setenv("LONGHAUL_DATA_DIR", t.TempDir())
	t.Setenv("LONGHAUL_METRICS_ADDR", testenv.FreeAddr(t))
	dir := t.TempDir()
	cases, report := filepath.Join(dir, "cases"), filepath.Join(dir, "report")
	eval := func(args ...string) (int, string) {
		var out, errs bytes.Buffer
		code := Main(append([]string{"eval"}, args...), &out, &errs)
		return code, out.String() + errs.String()
	}
	if code, out := eval("export", "--run", "hello-1", "--out", cases); code != 0 || !strings.Contains(out, "hello-1.json") {
		t.Fatalf("export: %d %s", code, out)
	}
	if code, out := eval("run", "--cases", cases, "--out", report, "--id", "pass"); code != 0 || !strings.Contains(out, "1/1 passed") {
		t.Fatalf("run: %d %s", code, out)
	}
	env.Model.SetDefault(llmtest.Text("Goodbye."))
	code, out := eval("run", "--cases", cases, "--out", report, "--id", "fail")
	if code != 1 || !strings.Contains(out, "0/1 passed") {
		t.Fatalf("run with another answer: %d %s", code, out)
	}
	data, err := os.ReadFile(filepath.Join(report, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep evals.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Failed != 1 || !strings.Contains(rep.Cases[0].AnswerDiff, "+ Goodbye.") {
		t.Errorf("report %+v", rep)
	}
	if md, err := os.ReadFile(filepath.Join(report, "report.md")); err != nil || !strings.Contains(string(md), "## hello-1") {
		t.Errorf("report.md: %v\n%s", err, md)
	}
}
