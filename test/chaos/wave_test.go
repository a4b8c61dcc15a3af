//go:build unix

package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
)

// depot is the tool server of TestWorkerKilledMidWave. POST /orders places
// an order (the side effect), honouring Idempotency-Key as the shop does:
// a repeated key places nothing and gets the stored answer. GET /stock
// reads (no side effect). A call for an item of held (the stock read's
// item too) is held until release, or until its worker hangs up; the
// others answer at once.
type depot struct {
	mu      sync.Mutex
	held    map[string]bool
	release chan struct{}
	// requests are the Idempotency-Keys of each item's calls, in order:
	// "order <item>" and "stock <item>".
	requests map[string][]string
	placed   map[string]string // key -> the order's answer
	// inside are the calls being served, by the same names.
	inside   map[string]int
	answered map[string]int
	bad      []string
	changed  chan struct{}
}

func newDepot(held ...string) *depot {
	d := &depot{
		release: make(chan struct{}), requests: map[string][]string{}, placed: map[string]string{},
		inside: map[string]int{}, answered: map[string]int{}, changed: make(chan struct{}), held: map[string]bool{},
	}
	for _, h := range held {
		d.held[h] = true
	}
	return d
}

func (d *depot) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	var name, answer string
	d.mu.Lock()
	switch {
	case r.Method == "POST" && r.URL.Path == "/orders":
		var body struct {
			Item string `json:"item"`
		}
		if json.NewDecoder(r.Body).Decode(&body) != nil || body.Item == "" || key == "" {
			break
		}
		name = "order " + body.Item
		if _, seen := d.placed[key]; !seen {
			// The side effect.
			d.placed[key] = fmt.Sprintf("order %s placed as #%d", body.Item, len(d.placed)+1)
		}
		answer = d.placed[key]
	case r.Method == "GET" && r.URL.Path == "/stock" && r.URL.Query().Get("item") != "":
		item := r.URL.Query().Get("item")
		name, answer = "stock "+item, fmt.Sprintf("%d %s in stock", len(item), item)
	}
	if name == "" {
		d.bad = append(d.bad, fmt.Sprintf("%s %s key %q", r.Method, r.URL, key))
		d.mu.Unlock()
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	d.requests[name] = append(d.requests[name], key)
	hold := d.held[strings.Fields(name)[1]]
	d.inside[name]++
	d.notifyLocked()
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.inside[name]--
		d.notifyLocked()
		d.mu.Unlock()
	}()
	if hold {
		select {
		case <-d.release:
		case <-r.Context().Done():
			return // the worker is gone; an order stays placed
		}
	}
	w.Header().Set("Content-Type", "text/plain")
	fmt.Fprint(w, answer)
	d.mu.Lock()
	d.answered[name]++
	d.mu.Unlock()
}

func (d *depot) notifyLocked() {
	close(d.changed)
	d.changed = make(chan struct{})
}

// await waits until ok holds of the depot (called under its lock), or ctx
// ends.
func (d *depot) await(ctx context.Context, what string, ok func() bool) error {
	for {
		d.mu.Lock()
		done, changed := ok(), d.changed
		d.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		}
	}
}

// Files of TestWorkerKilledMidWave: a research agent whose plan may run
// five steps at once, with a skill of the depot's two tools.
const (
	buyerAgent = `---
agent: buyer
description: Buys what a project needs
mode: agentic
skills: [depot]
parallel: 5
---
You buy what the project needs.
`
	depotSkill = `---
skill: depot
description: Orders and stock at the depot
tools: [place_order, stock]
http_tools:
  - name: place_order
    description: Place an order for an item
    method: POST
    url: ${DEPOT_URL}/orders
    parameters: {type: object, properties: {item: {type: string}}, required: [item]}
  - name: stock
    description: How many of an item the depot has
    method: GET
    url: ${DEPOT_URL}/stock
    parameters: {type: object, properties: {item: {type: string}}, required: [item]}
---
Order what is needed with place_order; read the stock with stock.
`
)

// The plan's steps: four orders and a stock read, none needing another,
// then the answer. Steps 1 and 2 finish before the kill; 3, 4 and the
// read (5) are in the middle of their calls when it comes.
var (
	waveItems   = []string{"anvil", "bucket", "chisel", "drill"}
	waveHeld    = []string{"chisel", "drill", "rope"}
	waveFinish  = []string{"1", "2"}
	waveRunning = []string{"3", "4", "5"}
)

const waveAnswer = "Ordered an anvil, a bucket, a chisel and a drill; the depot has rope."

// scriptWave makes the model plan the wave, pass every step's review and
// answer.
func scriptWave(model *llmtest.Server) {
	var steps []map[string]any
	for _, item := range waveItems {
		steps = append(steps, map[string]any{
			"kind": "tool", "target": "place_order", "title": "Order the " + item, "success": "the order placed",
			"arguments": map[string]string{"item": item}, "depends_on": []int{},
		})
	}
	steps = append(steps,
		map[string]any{
			"kind": "tool", "target": "stock", "title": "Read the stock of rope", "success": "a count",
			"arguments": map[string]string{"item": "rope"}, "depends_on": []int{},
		},
		map[string]any{"kind": "completion", "title": "Answer", "input": "what was ordered", "success": "all of it", "depends_on": []int{1, 2, 3, 4, 5}})
	model.On(llmtest.HasSchema("plan"), llmtest.JSON(map[string]any{"goal": "Buy the tools", "steps": steps}))
	model.On(llmtest.HasSchema("step_review"), llmtest.JSON(map[string]string{"decision": "ok", "reason": "done"}))
	model.SetDefault(llmtest.Text(waveAnswer))
}

// TestWorkerKilledMidWave: a research run's plan runs five steps at once,
// each in a child workflow of its own, four of them placing an order (a
// side effect) at a test-owned depot and one reading its stock. Once two
// orders are answered and their steps' workflows completed, and the three
// other calls are inside the depot (held there), the only worker is killed
// with SIGKILL and started again. The run completes with its answer; the
// two finished steps ran once (their calls made once, their workflows
// started and completed once); the three calls cut by the kill were made
// again, after their 10 s heartbeat timeout, on the new worker, and each
// order's repeat carried the same Idempotency-Key (its step workflow's id
// and the call's number), so the depot placed every order exactly once.
//
// That is the guarantee, and all of it: a tool call is at least once, with
// a key that is the same on every attempt. A call cut in the middle is
// made again; a service that honours Idempotency-Key (as the depot does)
// does its effect once, one that ignores it would do it twice.
func TestWorkerKilledMidWave(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary as processes and kills them")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	model := llmtest.New(t)
	scriptWave(model)
	dp := newDepot(waveHeld...)
	depotSrv := httptest.NewServer(dp)
	t.Cleanup(depotSrv.Close)
	st := newStack(t, stackConfig{workers: 1, apis: 1, model: model, files: map[string]string{"buyer.md": buyerAgent, "depot.md": depotSkill}})
	workerEnv := func(int) []string { return []string{"DEPOT_URL=" + depotSrv.URL} }
	if err := st.startAll(ctx, workerEnv); err != nil {
		t.Fatal(err)
	}
	tc := st.dial(ctx)
	run := createRunOf(t, st.apiURL(0), "buyer", "Buy an anvil, a bucket, a chisel and a drill, and see if there is rope.")

	// The kill's moment: two orders answered and their steps' workflows
	// completed, the three other calls inside the depot.
	err := dp.await(ctx, "two orders answered and three calls held", func() bool {
		return dp.answered["order anvil"] == 1 && dp.answered["order bucket"] == 1 &&
			dp.inside["order chisel"] == 1 && dp.inside["order drill"] == 1 && dp.inside["stock rope"] == 1
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range waveFinish {
		if err := awaitClosed(ctx, tc, contract.StepWorkflowID(run, step)); err != nil {
			t.Fatal(err)
		}
	}
	for _, step := range waveRunning {
		if s := stepStatus(ctx, tc, run, step); s != enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
			t.Fatalf("step %s's workflow is %v at the kill, want running", step, s)
		}
	}
	st.worker(0).Kill()
	// The worker is gone: what the depot answers now reaches only the
	// calls made again.
	close(dp.release)
	if err := st.startWorker(ctx, 0, workerEnv(0)); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()

	got, err := awaitRun(ctx, st.apiURL(0), run)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != "completed" || got.Result != waveAnswer {
		t.Fatalf("run %s: status %q, result %q, error %q", run, got.Status, got.Result, got.Error)
	}
	t.Logf("the run completed %v after the kill", time.Since(killedAt).Round(100*time.Millisecond))

	dp.mu.Lock()
	defer dp.mu.Unlock()
	for _, b := range dp.bad {
		t.Errorf("the depot got a bad request: %s", b)
	}
	for i, item := range waveItems {
		name, step := "order "+item, fmt.Sprint(i+1)
		keys := dp.requests[name]
		// Cut by the kill: made again, once, with the same key.
		want := 2
		if slices.Contains(waveFinish, step) {
			want = 1
		}
		if len(keys) != want {
			t.Errorf("%s: %d requests (keys %v), want %d", name, len(keys), keys, want)
		}
		if len(keys) > 0 && len(slices.Compact(slices.Clone(keys))) != 1 {
			t.Errorf("%s: made with keys %v, want one key on every attempt", name, keys)
		}
		if len(keys) > 0 && !strings.HasPrefix(keys[0], contract.StepWorkflowID(run, step)+"/call-") {
			t.Errorf("%s: Idempotency-Key %q, want its step workflow's id and the call's number", name, keys[0])
		}
	}
	if n := len(dp.placed); n != len(waveItems) {
		t.Errorf("the depot placed %d orders, want %d: %v", n, len(waveItems), dp.placed)
	}
	// The read was cut too: a read is simply made again.
	if n := len(dp.requests["stock rope"]); n != 2 {
		t.Errorf("the stock was read %d times, want 2 (cut by the kill, then again)", n)
	}

	// Temporal's record: the run started each step's workflow once and
	// saw it complete once; each step's workflow ran its call in one
	// activity, the finished ones in their first attempt.
	parent := historyOf(ctx, t, tc, run)
	for step := 1; step <= len(waveItems)+1; step++ {
		id := contract.StepWorkflowID(run, fmt.Sprint(step))
		var initiated, started, completed int
		for _, e := range parent {
			switch {
			case e.GetStartChildWorkflowExecutionInitiatedEventAttributes().GetWorkflowId() == id:
				initiated++
			case e.GetChildWorkflowExecutionStartedEventAttributes().GetWorkflowExecution().GetWorkflowId() == id:
				started++
			case e.GetChildWorkflowExecutionCompletedEventAttributes().GetWorkflowExecution().GetWorkflowId() == id:
				completed++
			}
		}
		if initiated != 1 || started != 1 || completed != 1 {
			t.Errorf("step %d's workflow: initiated %d, started %d, completed %d times in the run's history; want once each", step, initiated, started, completed)
		}
		var scheduled int
		var attempts []int32
		for _, e := range historyOf(ctx, t, tc, id) {
			if a := e.GetActivityTaskScheduledEventAttributes(); a.GetActivityType().GetName() == "CallTool" {
				scheduled++
			}
			if a := e.GetActivityTaskStartedEventAttributes(); a != nil {
				attempts = append(attempts, a.GetAttempt())
			}
		}
		wantAttempt := int32(2)
		if slices.Contains(waveFinish, fmt.Sprint(step)) {
			wantAttempt = 1
		}
		if scheduled != 1 || !slices.Equal(attempts, []int32{wantAttempt}) {
			t.Errorf("step %d's workflow: %d CallTool activities, started in attempts %v; want one, in attempt %d", step, scheduled, attempts, wantAttempt)
		}
	}
	// The run's log: one step_result a step.
	results := map[string]int{}
	for _, e := range runEvents(ctx, t, tc, run) {
		var d longhaul.StepResultData
		if e.Type == longhaul.EventStepResult && e.Decode(&d) == nil {
			results[d.StepID]++
		}
	}
	for step := 1; step <= len(waveItems)+2; step++ {
		if n := results[fmt.Sprint(step)]; n != 1 {
			t.Errorf("step %d: %d step_result events, want 1 (all: %v)", step, n, results)
		}
	}
}

// awaitClosed polls Temporal until the workflow id has completed.
func awaitClosed(ctx context.Context, tc client.Client, id string) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		d, err := tc.DescribeWorkflowExecution(ctx, id, "")
		switch s := d.GetWorkflowExecutionInfo().GetStatus(); {
		case err == nil && s == enums.WORKFLOW_EXECUTION_STATUS_COMPLETED:
			return nil
		case err == nil && s != enums.WORKFLOW_EXECUTION_STATUS_RUNNING:
			return fmt.Errorf("%s ended %v", id, s)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s to complete: %w (last error %v)", id, ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// stepStatus is the status of the workflow of step of run.
func stepStatus(ctx context.Context, tc client.Client, run, step string) enums.WorkflowExecutionStatus {
	d, err := tc.DescribeWorkflowExecution(ctx, contract.StepWorkflowID(run, step), "")
	if err != nil {
		return enums.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED
	}
	return d.GetWorkflowExecutionInfo().GetStatus()
}

// historyOf is the whole history of the latest execution of id.
func historyOf(ctx context.Context, t *testing.T, tc client.Client, id string) []*history.HistoryEvent {
	t.Helper()
	var out []*history.HistoryEvent
	it := tc.GetWorkflowHistory(ctx, id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatalf("the history of %s: %v", id, err)
		}
		out = append(out, e)
	}
	return out
}

// runEvents is a run's durable log, as its events query returns it.
func runEvents(ctx context.Context, t *testing.T, tc client.Client, run string) []longhaul.Event {
	t.Helper()
	v, err := tc.QueryWorkflow(ctx, run, "", contract.QueryEvents, contract.EventsRequest{})
	if err != nil {
		t.Fatalf("query the run's events: %v", err)
	}
	var page contract.EventsPage
	if err := v.Get(&page); err != nil {
		t.Fatal(err)
	}
	return page.Events
}
