// Package fanout runs plans whose steps need nothing from each other
// through the whole stack: a chat completion to the researcher, whose plan
// reads six pages at once, as many as the bound lets, each step in a
// workflow of its own, measured on the site's clock.
package fanout

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
)

// pages is how many pages the plan reads.
const pages = 6

// sixPages starts a stack whose agent plans to read six pages of a site
// that lets requests through only once want of them are inside at once,
// then answers; each step's review passes. It returns the stack and the
// site.
func sixPages(t *testing.T, want int, opts testenv.Options) (*testenv.Env, *testenv.Crowd) {
	t.Helper()
	crowd := testenv.NewCrowd(want, func(r *http.Request) string { return "Page " + r.URL.Query().Get("p") + " says hello." })
	site, fetch := testenv.Site(t, crowd)
	opts.Fetch = fetch
	env := testenv.Start(t, opts)
	steps := make([]map[string]any, 0, pages+1)
	needs := make([]int, 0, pages)
	for i := 1; i <= pages; i++ {
		steps = append(steps, map[string]any{
			"kind": "tool", "target": "web_fetch", "title": fmt.Sprintf("Read page %d", i), "success": "a greeting",
			"arguments": map[string]any{"url": fmt.Sprintf("%s/?p=%d", site, i), "max_chars": nil}, "depends_on": []int{},
		})
		needs = append(needs, i)
	}
	steps = append(steps, map[string]any{"kind": "completion", "title": "Answer", "input": "what the pages say", "success": "all six", "depends_on": needs})
	env.Model.On(llmtest.HasSchema("plan"), llmtest.JSON(map[string]any{"goal": "Say what six pages say", "steps": steps}))
	env.Model.On(llmtest.HasSchema("step_review"), llmtest.JSON(map[string]string{"decision": "ok", "reason": "read"}))
	env.Model.SetDefault(llmtest.Text("All six pages say hello."))
	return env, crowd
}

// ask sends one chat completion to agent and returns its answer and its
// run's id.
func ask(t *testing.T, env *testenv.Env, agent string) (answer, run string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	return env.Chat(ctx, t, agent, []map[string]string{{"role": "user", "content": "What do the six pages say?"}}, nil)
}

// pageReads counts the model's view of the pages read: the answer's
// findings, one message a step.
func pageReads(env *testenv.Env) int {
	n := 0
	reqs := env.Model.Requests()
	for _, m := range reqs[len(reqs)-1].Chat.Messages {
		if strings.Contains(m.Content, "says hello") {
			n++
		}
	}
	return n
}

// TestSixPagesFourAtOnce: with the worker's bound of 4
// (LONGHAUL_PLAN_PARALLEL), four of the six page reads are inside the
// site together, never more, and the answer reads all six.
func TestSixPagesFourAtOnce(t *testing.T) {
	env, crowd := sixPages(t, 4, testenv.Options{PlanParallel: 4})
	got, run := ask(t, env, "researcher")
	if got != "All six pages say hello." {
		t.Fatalf("answer %q", got)
	}
	if most := crowd.Most(); most < 2 || most > 4 {
		t.Errorf("%d page reads at once, want between 2 and the bound, 4", most)
	}
	if got := crowd.Served(); got != pages {
		t.Errorf("the site served %d reads, want %d", got, pages)
	}
	if got := pageReads(env); got != pages {
		t.Errorf("the answer read %d pages' findings, want %d", got, pages)
	}
	// The run's stream: four steps started before the first one ended.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	v, err := env.Client.QueryWorkflow(ctx, run, "", contract.QueryEvents, contract.EventsRequest{})
	if err != nil {
		t.Fatalf("query the run's events: %v", err)
	}
	var page contract.EventsPage
	if err := v.Get(&page); err != nil {
		t.Fatal(err)
	}
	started := 0
	for _, e := range page.Events {
		if e.Type == longhaul.EventStepResult {
			break
		}
		if e.Type == longhaul.EventStepStart {
			started++
		}
	}
	if started != 4 {
		t.Errorf("%d steps started before the first ended, want 4", started)
	}
	// Each step ran as a workflow of its own, a child of the run.
	d, err := env.Client.DescribeWorkflowExecution(ctx, contract.StepWorkflowID(run, "1"), "")
	if err != nil {
		t.Fatalf("describe step 1's workflow: %v", err)
	}
	if info := d.GetWorkflowExecutionInfo(); info.GetType().GetName() != contract.StepWorkflowName || info.GetParentExecution().GetWorkflowId() != run {
		t.Errorf("step 1's workflow is a %s, child of %q; want a %s, child of %q", info.GetType().GetName(), info.GetParentExecution().GetWorkflowId(), contract.StepWorkflowName, run)
	}
}

// reader is an agent whose own bound (parallel: 2) is below the worker's.
var reader = fstest.MapFS{"reader.md": {Data: []byte("---\nagent: reader\ndescription: Reads pages\nmode: agentic\nskills: [web_reading]\nparallel: 2\n---\nYou read pages.\n")}}

// TestAgentBoundWins: an agent's parallel: 2 holds its reads to two at
// once, under the worker's bound of 4.
func TestAgentBoundWins(t *testing.T) {
	env, crowd := sixPages(t, 2, testenv.Options{PlanParallel: 4, Layers: []fs.FS{reader}})
	if got, _ := ask(t, env, "reader"); got != "All six pages say hello." {
		t.Fatalf("answer %q", got)
	}
	if most := crowd.Most(); most != 2 {
		t.Errorf("%d page reads at once, want the agent's bound, 2", most)
	}
}
