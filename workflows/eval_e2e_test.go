package workflows_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/evals"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"go.temporal.io/sdk/client"
)

// evalCases is how many researcher runs the evaluation test records and
// replays, each a real run on the embedded server (about 70 s for all 50
// under -race on two cores; the package's other tests run beside it).
const evalCases = 50

var questionN = regexp.MustCompile(`Question ([0-9]+)`)

// questionOf is the number of the question a model request is about.
func questionOf(r llmtest.Request) string {
	for _, m := range r.Chat.Messages {
		if q := questionN.FindStringSubmatch(m.Content); q != nil {
			return q[1]
		}
	}
	return ""
}

// researchPages starts an environment whose researcher reads one page per
// question ("Question 3" reads ?q=3) and answers from it; hits counts the
// page's requests: every tool call the runs made.
func researchPages(t *testing.T) (env *testenv.Env, hits *atomic.Int64) {
	t.Helper()
	hits = new(atomic.Int64)
	pageURL, fetch := testenv.Site(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<html><body><p>Bill %s is %s0 cm long.</p></body></html>", r.URL.Query().Get("q"), r.URL.Query().Get("q"))
	}))
	env = testenv.Start(t, testenv.Options{Fetch: fetch})
	env.Model.On(llmtest.HasSchema("plan"), llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		return llmtest.JSON(map[string]any{
			"goal": "Give the bill's length",
			"steps": []map[string]any{
				{"kind": "tool", "target": "web_fetch", "title": "Read the page", "arguments": map[string]any{"url": pageURL + "/?q=" + questionOf(r), "max_chars": nil}, "success": "a length"},
				{"kind": "completion", "title": "Answer", "input": "the length", "success": "cited"},
			},
		})
	}))
	env.Model.On(llmtest.HasSchema("step_review"), llmtest.JSON(map[string]string{"decision": "ok", "reason": "found"}))
	env.Model.SetDefault(llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		return llmtest.Text("Bill " + questionOf(r) + " is " + questionOf(r) + "0 cm long.")
	}))
	return env, hits
}

// modelCalls counts the model requests after the first skip, by question.
func modelCalls(env *testenv.Env, skip int) map[string]int {
	n := map[string]int{}
	for _, r := range env.Model.Requests()[skip:] {
		n[questionOf(r)]++
	}
	return n
}

// TestEvaluationReplaysPinnedAndResumes records researcher runs, exports
// them as cases and evaluates them, killing the worker midway: the
// evaluation finishes, the cases finished before the kill make no model
// call again, no tool runs (the page is never fetched), and a call the
// recording lacks is answered "not recorded" and counted.
func TestEvaluationReplaysPinnedAndResumes(t *testing.T) {
	env, hits := researchPages(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var cases []contract.EvalCase
	for i := range evalCases {
		id := fmt.Sprintf("recorded-%d", i)
		var res contract.AgentResult
		execute(ctx, t, env, id, contract.AgentWorkflowName, contract.AgentInput{
			Agent: "researcher", Messages: []longhaul.Message{{Role: longhaul.RoleUser, Content: fmt.Sprintf("Question %d: how long is the bill?", i)}},
		}, &res)
		c, err := evals.ReadRun(ctx, env.Client, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Calls) != 1 || !strings.Contains(c.Answer, fmt.Sprintf("%d0 cm", i)) {
			t.Fatalf("case %s: %+v", id, c)
		}
		cases = append(cases, c.EvalCase)
	}
	if hits.Load() != evalCases {
		t.Fatalf("recording fetched %d pages, want %d", hits.Load(), evalCases)
	}
	hits.Store(0)
	// The first case lost its recording: its call is not recorded.
	cases[0].Calls = nil
	before := len(env.Model.Requests())

	run, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "eval-1", TaskQueue: testenv.TaskQueue},
		contract.EvaluationWorkflowName, contract.EvalInput{Cases: cases, Parallel: 3})
	if err != nil {
		t.Fatal(err)
	}
	done := awaitResults(ctx, t, env, run, evalCases/3)
	env.StopWorker()
	atKill := modelCalls(env, before)
	env.StartWorker()
	var res contract.EvalResult
	if err := run.Get(ctx, &res); err != nil {
		t.Fatal(err)
	}

	if hits.Load() != 0 {
		t.Errorf("the evaluation fetched %d pages: a tool ran", hits.Load())
	}
	after := modelCalls(env, before)
	for _, c := range done {
		q := strings.TrimPrefix(c.Case, "recorded-")
		if after[q] != atKill[q] {
			t.Errorf("case %s finished before the kill made %d model calls then, %d in all", c.Case, atKill[q], after[q])
		}
	}
	if len(res.Cases) != evalCases || res.Passed != evalCases-1 || res.Failed != 1 {
		t.Fatalf("result: %d cases, %d passed, %d failed: %+v", len(res.Cases), res.Passed, res.Failed, res.Cases)
	}
	first := res.Cases[0]
	if first.Pass || first.NotRecorded != 1 || len(first.Calls) != 1 || first.Calls[0].Content != contract.NotRecorded {
		t.Errorf("the case without a recording: %+v", first)
	}
	for _, c := range res.Cases[1:] {
		if c.NotRecorded != 0 || len(c.CallsDiff) != 0 || c.AnswerDiff != "" || c.Usage.TotalTokens == 0 {
			t.Errorf("case %s: %+v", c.Case, c)
		}
	}
}

// awaitResults waits until the evaluation has at least n finished cases
// and returns them.
func awaitResults(ctx context.Context, t *testing.T, env *testenv.Env, run client.WorkflowRun, n int) []contract.CaseResult {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		var got []contract.CaseResult
		if v, err := env.Client.QueryWorkflow(ctx, run.GetID(), "", contract.QueryEvalResults); err == nil && v.Get(&got) == nil && len(got) >= n {
			return got
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the evaluation did not finish %d cases", n)
		case <-tick.C:
		}
	}
}
