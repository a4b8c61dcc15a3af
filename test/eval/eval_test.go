// Package eval_test evaluates the shipped agents (skills/builtin) against
// the committed cases of evals/cases with the scripted model: make eval
// (and so make test) fails when a change of an agent file breaks a case.
// The cases were recorded from real runs of the same scripted model; go
// test ./test/eval -run TestShippedAgents -update records them again.
package eval_test

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/evals"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"go.temporal.io/sdk/client"
)

var update = flag.Bool("update", false, "record the cases of evals/cases anew")

const (
	casesDir    = "../../evals/cases"
	gradersFile = "../../evals/graders.yaml"
	// readFirst is the researcher's instruction that makes the scripted
	// model plan to read a page before it answers.
	readFirst = "Fetch the page and read the relevant part"
)

// facts are what the pages say, by topic: a case per topic.
var facts = map[string]string{
	"bill":   "The Australian pelican's bill is up to 47 cm long.",
	"weight": "An adult pelican weighs 4 to 13 kg.",
	"speed":  "Pelicans fly at about 40 km/h.",
}

var questions = map[string]string{
	"bill":   "How long is a pelican's bill?",
	"weight": "How much does a pelican weigh?",
	"speed":  "How fast does a pelican fly?",
}

// topic is the topic a model request is about.
func topic(r llmtest.Request) string {
	for _, m := range r.Chat.Messages {
		for t, q := range questions {
			if strings.Contains(m.Content, q) {
				return t
			}
		}
	}
	return ""
}

func prompted(r llmtest.Request, text string) bool {
	for _, m := range r.Chat.Messages {
		if m.Role == "system" && strings.Contains(m.Content, text) {
			return true
		}
	}
	return false
}

// stack starts the engine with the agent files of layer over the
// built-ins, a page per topic (hits counts its fetches) and a scripted
// model that plans to read the topic's page only when the researcher's
// prompt says to read before relying, and answers with the page's fact
// when it read it.
func stack(t *testing.T, layer fs.FS) (*testenv.Env, *atomic.Int64) {
	t.Helper()
	hits := new(atomic.Int64)
	pageURL, fetch := testenv.Site(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprintf(w, "<html><body><p>%s</p></body></html>", facts[r.URL.Query().Get("topic")])
	}))
	opts := testenv.Options{Fetch: fetch}
	if layer != nil {
		opts.Layers = []fs.FS{layer}
	}
	env := testenv.Start(t, opts)
	env.Model.On(llmtest.HasSchema("plan"), llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		steps := []map[string]any{{"kind": "completion", "title": "Answer", "input": "the fact", "success": "a fact"}}
		if prompted(r, readFirst) {
			read := map[string]any{"kind": "tool", "target": "web_fetch", "title": "Read the page",
				"arguments": map[string]any{"url": pageURL + "/?topic=" + topic(r), "max_chars": nil}, "success": "the fact"}
			steps = append([]map[string]any{read}, steps...)
		}
		return llmtest.JSON(map[string]any{"goal": "Answer with a source", "steps": steps})
	}))
	env.Model.On(llmtest.HasSchema("step_review"), llmtest.JSON(map[string]string{"decision": "ok", "reason": "done"}))
	env.Model.SetDefault(llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		for _, m := range r.Chat.Messages {
			if f := facts[topic(r)]; f != "" && strings.Contains(m.Content, f) {
				return llmtest.Text(f)
			}
		}
		return llmtest.Text("I could not check a source.")
	}))
	return env, hits
}

// record runs the researcher on each question and writes the cases.
func record(ctx context.Context, t *testing.T, env *testenv.Env) {
	t.Helper()
	for _, id := range []string{"bill", "weight", "speed"} {
		run, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "researcher-" + id, TaskQueue: testenv.TaskQueue},
			contract.AgentWorkflowName, contract.AgentInput{Agent: "researcher", Messages: []longhaul.Message{{Role: longhaul.RoleUser, Content: questions[id]}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := run.Get(ctx, nil); err != nil {
			t.Fatal(err)
		}
		c, err := evals.ReadRun(ctx, env.Client, run.GetID())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := evals.WriteCase(casesDir, c); err != nil {
			t.Fatal(err)
		}
	}
}

// evaluate runs the Evaluation of the committed cases and graders.
func evaluate(ctx context.Context, t *testing.T, env *testenv.Env, id string) evals.Report {
	t.Helper()
	cases, err := evals.ReadCases(casesDir)
	if err != nil {
		t.Fatal(err)
	}
	graders, err := os.ReadFile(gradersFile)
	if err != nil {
		t.Fatal(err)
	}
	in := contract.EvalInput{Graders: string(graders)}
	for _, c := range cases {
		in.Cases = append(in.Cases, c.EvalCase)
	}
	run, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: testenv.TaskQueue}, contract.EvaluationWorkflowName, in)
	if err != nil {
		t.Fatal(err)
	}
	var res contract.EvalResult
	if err := run.Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Cases) != len(cases) {
		t.Fatalf("%d results of %d cases", len(res.Cases), len(cases))
	}
	return evals.NewReport(res.Cases)
}

func TestShippedAgents(t *testing.T) {
	env, hits := stack(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if *update {
		record(ctx, t, env)
		hits.Store(0)
	}
	rep := evaluate(ctx, t, env, "eval-shipped")
	if rep.Failed > 0 {
		var md strings.Builder
		rep.Markdown(&md)
		t.Errorf("the shipped agents fail committed cases:\n%s", md.String())
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the evaluation fetched %d pages: a tool ran", n)
	}
}

// TestRegressionFailsEvaluation removes the read-before-relying
// instruction from a copy of researcher.md: the scripted model then
// answers without reading, and the evaluation must fail every case.
func TestRegressionFailsEvaluation(t *testing.T) {
	src, err := os.ReadFile("../../skills/builtin/researcher.md")
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for line := range strings.Lines(string(src)) {
		if !strings.Contains(line, readFirst) {
			kept = append(kept, line)
		}
	}
	broken := strings.Join(kept, "")
	if broken == string(src) {
		t.Fatalf("researcher.md no longer says %q: the test's regression must change", readFirst)
	}
	env, _ := stack(t, fstest.MapFS{"researcher.md": {Data: []byte(broken)}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep := evaluate(ctx, t, env, "eval-regression")
	if rep.Failed != len(rep.Cases) {
		t.Errorf("the evaluation passed %d of %d cases of a researcher that no longer reads its sources", rep.Passed, len(rep.Cases))
	}
}
