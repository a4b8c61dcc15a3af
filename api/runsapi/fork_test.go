package runsapi_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/api/runsapi"
	"github.com/longhaul-dev/longhaul/api/runweb"
	"github.com/longhaul-dev/longhaul/api/sse"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/endpoints"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/longhaul-dev/longhaul/internal/testing/runsfake"
	"github.com/longhaul-dev/longhaul/internal/testing/webtest"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// serveForks is the routes forking reads and writes, over fake.
func serveForks(t *testing.T, fake *runsfake.Service, models ...runweb.Models) *fiber.App {
	t.Helper()
	rw, gate := webtest.RunsOver(fake)
	catalog := webtest.Catalog(t)
	m := runweb.Models{Catalog: catalog, Default: "big"}
	if len(models) > 0 {
		m = models[0]
		m.Catalog = catalog
	}
	h := &runsapi.Handlers{Runs: rw, Gate: gate, Streams: &sse.Streams{}, Models: m}
	return webtest.App(t, func(_, v1 fiber.Router) {
		v1.Get("/runs/:id", h.GetRun)
		v1.Post("/runs/:id/fork", h.Fork)
	})
}

// planned makes run an agentic run whose plan finished steps 1 and 2 and
// has its answer (step 3) to write.
func planned(r *runsfake.Run) {
	r.SetState(func(st *contract.RunState) {
		st.Mode = contract.ModeAgentic
		st.Plans = []contract.PlanRevision{{Status: contract.PlanActive, Plan: longhaul.Plan{Revision: 1, Steps: []longhaul.PlanStep{
			{ID: "1", Kind: longhaul.StepTool, Status: longhaul.StepDone, Result: "one"},
			{ID: "2", Kind: longhaul.StepTool, Status: longhaul.StepDone, Result: "two"},
			{ID: "3", Kind: longhaul.StepCompletion, Status: longhaul.StepPending},
		}}}}
	})
	r.Emit(longhaul.EventPlan, longhaul.Plan{Revision: 1})
	r.Emit(longhaul.EventStepResult, longhaul.StepResultData{StepID: "1", Status: longhaul.StepDone})
	r.Emit(longhaul.EventStepResult, longhaul.StepResultData{StepID: "2", Status: longhaul.StepDone})
}

// chatted makes run a chat whose loop made tool call c1.
func chatted(r *runsfake.Run) {
	r.SetState(func(st *contract.RunState) { st.Mode = contract.ModeChat })
	r.Emit(longhaul.EventToolStart, longhaul.ToolStartData{ToolCallID: "c1", Name: "current_time"})
	r.Emit(longhaul.EventToolOutput, longhaul.ToolOutputData{ToolCallID: "c1", Name: "current_time", Output: "noon"})
}

var question = []longhaul.Message{{Role: longhaul.RoleUser, Content: "hi"}}

func TestForkAPI(t *testing.T) {
	for _, tc := range []struct {
		name   string
		owner  string
		script func(*runsfake.Run)
		body   string
		status int
		// fork is the Fork the new run starts with; want a piece of the
		// error's body.
		fork *contract.Fork
		msgs []longhaul.Message
		want string
	}{
		{name: "a step", owner: "alice", script: planned, body: `{"at":"step-2","model":"big"}`, status: 202,
			fork: &contract.Fork{Run: "run-1", At: "step-2", Step: "2", Model: "big"}, msgs: question},
		{name: "a step by its id", owner: "alice", script: planned, body: `{"at":"2"}`, status: 202,
			fork: &contract.Fork{Run: "run-1", At: "step-2", Step: "2"}, msgs: question},
		{name: "the end", owner: "alice", script: planned, body: `{}`, status: 202,
			fork: &contract.Fork{Run: "run-1", At: "step-3", Step: "3"}, msgs: question},
		{name: "an offset", owner: "alice", script: planned, body: `{"at":2}`, status: 202,
			fork: &contract.Fork{Run: "run-1", At: "step-2", Step: "2"}, msgs: question},
		{name: "an offset before the plan", owner: "alice", script: planned, body: `{"at":0}`, status: 202,
			fork: &contract.Fork{Run: "run-1", At: "start"}, msgs: question},
		{name: "a tool call, with an edited input", owner: "alice", script: chatted, body: `{"at":"c1","input":"edited"}`, status: 202,
			fork: &contract.Fork{Run: "run-1", At: "c1", Call: "c1"}, msgs: []longhaul.Message{{Role: longhaul.RoleUser, Content: "edited"}}},
		{name: "the start, with other messages", owner: "alice", script: chatted, body: `{"at":"start","messages":[{"role":"user","content":"new"}]}`, status: 202,
			fork: &contract.Fork{Run: "run-1", At: "start"}, msgs: []longhaul.Message{{Role: longhaul.RoleUser, Content: "new"}}},
		{name: "an unknown step", owner: "alice", script: planned, body: `{"at":"step-7"}`, status: 400,
			want: `the run's points are start, step-1, step-2, step-3, end, an event offset from 0 to 3`},
		{name: "an unknown call", owner: "alice", script: chatted, body: `{"at":"c9"}`, status: 400, want: `start, c1, end`},
		{name: "a bad at", owner: "alice", script: chatted, body: `{"at":true}`, status: 400, want: "at: an event offset"},
		{name: "a negative offset", owner: "alice", script: chatted, body: `{"at":-1}`, status: 400, want: "0 or more"},
		{name: "messages and input", owner: "alice", script: chatted, body: `{"input":"a","messages":[{"role":"user","content":"b"}]}`, status: 400, want: "not both"},
		{name: "a model with a space", owner: "alice", script: chatted, body: `{"model":"a b"}`, status: 400, want: "model:"},
		{name: "an unknown agent", owner: "alice", script: chatted, body: `{"agent":"nobody"}`, status: 404, want: "nobody"},
		{name: "another's run", owner: "bob", script: chatted, body: `{}`, status: 404, want: "no run run-1"},
		{name: "an unknown field", owner: "alice", script: chatted, body: `{"from":1}`, status: 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := runsfake.New()
			tc.script(fake.Add("run-1", tc.owner, contract.AgentInput{Agent: "assistant", Messages: question, Metadata: map[string]string{"k": "v"}}))
			app := serveForks(t, fake)
			resp := webtest.Do(t, app, "POST", "/v1/runs/run-1/fork", tc.body, webtest.Alice)
			body := readBody(t, resp)
			if resp.StatusCode != tc.status || !strings.Contains(body, tc.want) {
				t.Fatalf("fork = %d %s, want %d with %s", resp.StatusCode, body, tc.status, tc.want)
			}
			if tc.fork == nil {
				if fake.Len() != 1 {
					t.Errorf("a refused fork started a run")
				}
				return
			}
			var created wire.ForkCreated
			if err := json.Unmarshal([]byte(body), &created); err != nil {
				t.Fatal(err)
			}
			if created.ForkedFrom != (wire.ForkedFrom{Run: "run-1", At: tc.fork.At}) || created.Status != "running" || resp.Header.Get("X-Longhaul-Run-Id") != created.ID {
				t.Errorf("answer %s", body)
			}
			r := fake.Run(created.ID)
			if r == nil {
				t.Fatalf("no run %s", created.ID)
			}
			if diff := cmp.Diff(tc.fork, r.Input.Fork, cmpopts.IgnoreFields(contract.Fork{}, "State")); diff != "" {
				t.Errorf("the fork's Fork (-want +got):\n%s", diff)
			}
			// The point is decided here, once: the fork's input carries
			// what it reuses, the plans cut at a step.
			if st := r.Input.Fork.State; tc.fork.At == contract.ForkStart && st != nil ||
				tc.fork.At != contract.ForkStart && (st == nil || (tc.fork.Step != "") != (len(st.Plans) == 1)) {
				t.Errorf("the fork's state = %+v", st)
			}
			if diff := cmp.Diff(tc.msgs, r.Input.Messages); diff != "" {
				t.Errorf("the fork's messages (-want +got):\n%s", diff)
			}
			if r.Input.Metadata["k"] != "v" || r.Input.Agent != "assistant" || r.Owner != "alice" {
				t.Errorf("the fork's input = %+v, owner %s", r.Input, r.Owner)
			}
			if r.Memo[runs.MemoForkedFrom] != "run-1" || r.Memo[runs.MemoForkAt] != tc.fork.At || r.Memo[runs.MemoDoor] != runs.DoorFork {
				t.Errorf("the fork's memo = %v", r.Memo)
			}
		})
	}
}

// TestForkLineage: GET shows forked_from on the fork and forks on the old
// run; a run with neither shows neither.
func TestForkLineage(t *testing.T) {
	fake := runsfake.New()
	planned(fake.Add("run-1", "alice", contract.AgentInput{Agent: "assistant", Messages: question}))
	app := serveForks(t, fake)
	get := func(id string) wire.Run {
		t.Helper()
		resp := webtest.Do(t, app, "GET", "/v1/runs/"+id, nil, webtest.Alice)
		body := readBody(t, resp)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s = %d %s", id, resp.StatusCode, body)
		}
		var r wire.Run
		if err := json.Unmarshal([]byte(body), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := get("run-1"); r.ForkedFrom != nil || r.Forks != nil {
		t.Errorf("before any fork: forked_from %v, forks %v", r.ForkedFrom, r.Forks)
	}
	resp := webtest.Do(t, app, "POST", "/v1/runs/run-1/fork", `{"at":"step-2"}`, webtest.Alice)
	var created wire.ForkCreated
	if err := json.Unmarshal([]byte(readBody(t, resp)), &created); err != nil || resp.StatusCode != 202 {
		t.Fatalf("fork = %d %v", resp.StatusCode, err)
	}
	if r := get(created.ID); r.ForkedFrom == nil || *r.ForkedFrom != (wire.ForkedFrom{Run: "run-1", At: "step-2"}) {
		t.Errorf("the fork's forked_from = %v", r.ForkedFrom)
	}
	r := get("run-1")
	if len(r.Forks) != 1 || r.Forks[0].ID != created.ID || r.Forks[0].At != "step-2" || r.Forks[0].Status != "running" {
		t.Errorf("the old run's forks = %+v", r.Forks)
	}
}

// TestForkNamesUngrantedModel: a fork's model applied to every role as
// sent, so any user reached any model of any endpoint, past the catalog
// and allow:. It must be a model the caller may use already (here the
// default model, as no built-in agent names one), compared as the
// endpoint and model it resolves to; anything else, a fallback list
// holding one, is a 404 model_not_found that starts nothing.
func TestForkNamesUngrantedModel(t *testing.T) {
	set := endpoints.NewSet(endpoints.Endpoint{BaseURL: "http://default"}, []endpoints.Endpoint{{Name: "remote", BaseURL: "http://remote"}})
	for _, tc := range []struct {
		model  string
		status int
	}{
		{"llama3.1:8b", 202},
		{":llama3.1:8b", 202},
		{"remote:gpt-4o", 404},
		{"gpt-4o", 404},
		{":gpt-4o", 404},
		{"llama3.1:8b,remote:gpt-4o", 404},
	} {
		t.Run(tc.model, func(t *testing.T) {
			fake := runsfake.New()
			planned(fake.Add("run-1", "alice", contract.AgentInput{Agent: "assistant", Messages: question}))
			app := serveForks(t, fake, runweb.Models{Endpoints: set, Default: "llama3.1:8b"})
			resp := webtest.Do(t, app, "POST", "/v1/runs/run-1/fork", `{"model":"`+tc.model+`"}`, webtest.Alice)
			body := readBody(t, resp)
			if resp.StatusCode != tc.status {
				t.Fatalf("fork with %s = %d %s, want %d", tc.model, resp.StatusCode, body, tc.status)
			}
			if tc.status == 404 && (!strings.Contains(body, "model_not_found") || fake.Len() != 1) {
				t.Errorf("refused fork: %s, %d runs; want model_not_found and no new run", body, fake.Len())
			}
		})
	}
}

// TestForkReadsTheOldRunOnce: the API decides a fork point from one read
// of the old run (its fork query), after the describe that checks whose
// run it is; it reads neither the state, nor the log, nor the first input
// apart.
func TestForkReadsTheOldRunOnce(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script func(*runsfake.Run)
		body   string
	}{
		{"a step", planned, `{"at":"step-2"}`},
		{"an offset", planned, `{"at":2}`},
		{"a tool call", chatted, `{"at":"c1"}`},
		{"the end", chatted, `{}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := runsfake.New()
			tc.script(fake.Add("run-1", "alice", contract.AgentInput{Agent: "assistant", Messages: question}))
			resp := webtest.Do(t, serveForks(t, fake), "POST", "/v1/runs/run-1/fork", tc.body, webtest.Alice)
			if body := readBody(t, resp); resp.StatusCode != 202 {
				t.Fatalf("fork = %d %s", resp.StatusCode, body)
			}
			t.Logf("reads of the old run: %v", fake.Reads("run-1"))
			if diff := cmp.Diff(map[string]int{"Describe": 1, "ForkSource": 1}, fake.Reads("run-1")); diff != "" {
				t.Errorf("reads of the old run (-want +got):\n%s", diff)
			}
		})
	}
}

// TestForkOfARunOnAnOlderWorker: a run whose worker answers no fork query
// (an older release, in a rolling upgrade) is forked from its state, its
// log and its first input, read apart, as before the query.
func TestForkOfARunOnAnOlderWorker(t *testing.T) {
	fake := runsfake.New()
	fake.NoForkQuery = true
	planned(fake.Add("run-1", "alice", contract.AgentInput{Agent: "assistant", Messages: question}))
	srv := serveForks(t, fake)
	resp := webtest.Do(t, srv, "POST", "/v1/runs/run-1/fork", `{"at":"step-2"}`, webtest.Alice)
	if body := readBody(t, resp); resp.StatusCode != 202 {
		t.Fatalf("fork = %d %s", resp.StatusCode, body)
	}
	reads := fake.Reads("run-1")
	for _, m := range []string{"ForkSource", "State", "Events", "FirstInput"} {
		if reads[m] == 0 {
			t.Errorf("reads of the old run %v: no %s", reads, m)
		}
	}
	if resp := webtest.Do(t, srv, "POST", "/v1/runs/run-1/fork", `{"at":"step-2"}`, webtest.Bob); resp.StatusCode != 404 {
		t.Errorf("another principal's fork = %d, want 404", resp.StatusCode)
	}
}

// TestForkInAWaveKeepsSiblings: a fork at a step of a wave (steps 1, 2
// and 3 need nothing, 4 needs 2, the answer needs all) hands the new run
// the plan with the siblings that finished kept (1 and 3, results and
// all), and the step and what needs it (2, 4, the answer) to run again.
func TestForkInAWaveKeepsSiblings(t *testing.T) {
	fake := runsfake.New()
	r := fake.Add("run-1", "alice", contract.AgentInput{Agent: "assistant", Messages: question})
	r.SetState(func(st *contract.RunState) {
		st.Mode = contract.ModeAgentic
		st.Plans = []contract.PlanRevision{{Status: contract.PlanDone, Plan: longhaul.Plan{Revision: 1, Steps: []longhaul.PlanStep{
			{ID: "1", Kind: longhaul.StepTool, Status: longhaul.StepDone, Result: "one", DependsOn: []string{}},
			{ID: "2", Kind: longhaul.StepTool, Status: longhaul.StepDone, Result: "two"},
			{ID: "3", Kind: longhaul.StepTool, Status: longhaul.StepFailed, Result: "error: three"},
			{ID: "4", Kind: longhaul.StepTool, Status: longhaul.StepDone, Result: "four", DependsOn: []string{"2"}},
			{ID: "5", Kind: longhaul.StepCompletion, Status: longhaul.StepDone, Result: "the answer", DependsOn: []string{"1", "2", "3", "4"}},
		}}}}
	})
	resp := webtest.Do(t, serveForks(t, fake), "POST", "/v1/runs/run-1/fork", `{"at":"step-2"}`, webtest.Alice)
	body := readBody(t, resp)
	var created wire.ForkCreated
	if err := json.Unmarshal([]byte(body), &created); err != nil || resp.StatusCode != 202 {
		t.Fatalf("fork = %d %s", resp.StatusCode, body)
	}
	st := fake.Run(created.ID).Input.Fork.State
	if st == nil || len(st.Plans) != 1 || st.StepSeq != 5 {
		t.Fatalf("the fork's state = %+v", st)
	}
	var got []string
	for _, s := range st.Plans[0].Steps {
		got = append(got, s.ID+" "+s.Status+" "+s.Result)
	}
	want := []string{"1 done one", "2 pending ", "3 failed error: three", "4 pending ", "5 pending "}
	if diff := cmp.Diff(want, got); diff != "" || st.Plans[0].Status != contract.PlanActive {
		t.Errorf("the plan handed to the fork, %s (-want +got):\n%s", st.Plans[0].Status, diff)
	}
}
