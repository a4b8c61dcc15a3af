package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/internal/tools"
	"github.com/longhaul-dev/longhaul/internal/wire"
	"github.com/sashabaranov/go-openai"
)

// probe is a tool with a side effect worth not repeating: it counts its
// calls and keeps each one's argument, run and idempotency key.
type probe struct {
	mu    *sync.Mutex
	calls *[]probeCall
}

type probeCall struct {
	N   int
	Run string
	Key string
}

func newProbe() probe { return probe{mu: &sync.Mutex{}, calls: &[]probeCall{}} }

func (probe) Name() string        { return "probe" }
func (probe) Description() string { return "Probes thing n" }
func (probe) Parameters() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)
}
func (p probe) Call(_ context.Context, c tools.Call) (tools.Result, error) {
	var args struct{ N int }
	_ = json.Unmarshal(c.Arguments, &args)
	p.mu.Lock()
	defer p.mu.Unlock()
	*p.calls = append(*p.calls, probeCall{N: args.N, Run: c.Run, Key: c.IdempotencyKey})
	return tools.Result{Content: fmt.Sprintf("probe result %d", args.N)}, nil
}

// made are the calls so far.
func (p probe) made() []probeCall {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]probeCall(nil), *p.calls...)
}

// forkLayer has an agentic agent (a researcher whose steps probe), a
// chat agent with the probe, and an agent on other-model, which grants
// that model to a fork (runweb.Models).
var forkLayer = fstest.MapFS{
	"other.md":   {Data: []byte("---\nagent: other\ndescription: Answers on another model\nmodel: other-model\n---\nYou answer.\n")},
	"probing.md": {Data: []byte("---\nskill: probing\ndescription: Probes things\ntools: [probe]\n---\nProbe what you are asked to.\n")},
	"prober.md":  {Data: []byte("---\nagent: prober\ndescription: Researches by probing\nmode: agentic\nskills: [probing]\n---\nYou research.\n")},
	"chatter.md": {Data: []byte("---\nagent: chatter\ndescription: Chats and probes\nskills: [probing]\n---\nYou chat.\n")},
}

// allText is every message of a model request, joined.
func allText(r llmtest.Request) string {
	var b strings.Builder
	for _, m := range r.Chat.Messages {
		b.WriteString(llmtest.MessageText(m) + "\n")
	}
	return b.String()
}

// awaitRun polls GET /v1/runs/{id} until the run finished and returns it.
func awaitRun(t *testing.T, env *testenv.Env, id string, headers map[string]string) wire.Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var run wire.Run
	eventually(t, ctx, func() string {
		run = getRun(t, env, id, headers)
		if run.Status == contract.StatusRunning || run.Status == contract.StatusWaiting {
			return "run " + id + " is still " + run.Status
		}
		return ""
	})
	return run
}

// forkRun posts a fork and checks the 202 answer.
func forkRun(t *testing.T, env *testenv.Env, id string, body any, headers map[string]string) wire.ForkCreated {
	t.Helper()
	f := decode[wire.ForkCreated](t, doWant(t, env.URL, "POST", "/v1/runs/"+id+"/fork", body, headers, http.StatusAccepted))
	if !strings.HasPrefix(f.ID, "run-") || f.ID == id || f.EventsURL != "/v1/runs/"+f.ID+"/events" || f.ForkedFrom.Run != id {
		t.Fatalf("fork answered %+v", f)
	}
	return f
}

// TestForkResearcherAtStep runs an agentic run of three probing steps,
// then forks it at step 2 on another model: step 1's probe is not made
// again (its result is reused in the answer), steps 2 and 3 probe anew
// under the fork's own idempotency keys, no plan is drafted again, the
// answer comes from the other model, and both runs show the lineage. The
// errors of the route follow.
func TestForkResearcherAtStep(t *testing.T) {
	p := newProbe()
	env := testenv.Start(t, testenv.Options{Layers: []fs.FS{forkLayer}, Tools: []tools.Tool{p}})
	step := func(n int) map[string]any {
		return map[string]any{"kind": "tool", "target": "probe", "title": fmt.Sprintf("Probe %d", n), "arguments": map[string]any{"n": n}, "success": "probed"}
	}
	env.Model.On(llmtest.HasSchema("plan"), llmtest.JSON(map[string]any{
		"goal": "Probe three things", "steps": []map[string]any{step(1), step(2), step(3),
			{"kind": "completion", "title": "Answer", "input": "the three results", "success": "answered"}},
	}))
	env.Model.On(llmtest.HasSchema("step_review"),
		llmtest.JSON(map[string]string{"decision": "ok", "reason": "probed"}))
	env.Model.SetDefault(llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		text := allText(r)
		var found []string
		for n := 1; n <= 3; n++ {
			if strings.Contains(text, fmt.Sprintf("probe result %d", n)) {
				found = append(found, fmt.Sprint(n))
			}
		}
		return llmtest.Text("answer by " + r.Chat.Model + " from results " + strings.Join(found, ","))
	}))
	alice := user("alice")

	old := startRun(t, env, map[string]any{"agent": "prober", "input": "Probe three things"}, alice)
	if run := awaitRun(t, env, old.ID, alice); run.Status != contract.StatusCompleted || !strings.Contains(run.Result, "from results 1,2,3") {
		t.Fatalf("the run to fork ended %s: %q %s", run.Status, run.Result, run.Error)
	}
	plans := func() int {
		n := 0
		for _, r := range env.Model.Requests() {
			if llmtest.SchemaName(r) == "plan" {
				n++
			}
		}
		return n
	}
	if got := len(p.made()); got != 3 || plans() != 1 {
		t.Fatalf("the run made %d probes and %d plans, want 3 and 1", got, plans())
	}

	fork := forkRun(t, env, old.ID, map[string]any{"at": "step-2", "model": "other-model"}, alice)
	if fork.ForkedFrom.At != "step-2" {
		t.Errorf("forked_from = %+v, want at step-2", fork.ForkedFrom)
	}
	run := awaitRun(t, env, fork.ID, alice)
	if run.Status != contract.StatusCompleted || run.Result != "answer by other-model from results 1,2,3" {
		t.Fatalf("the fork ended %s: %q %s", run.Status, run.Result, run.Error)
	}
	calls := p.made()
	if len(calls) != 5 {
		t.Fatalf("probes = %+v, want the old run's 3 and the fork's steps 2 and 3", calls)
	}
	for _, c := range calls[3:] {
		if c.N == 1 || c.Run != fork.ID || !strings.HasPrefix(c.Key, fork.ID+"/") {
			t.Errorf("the fork's probe %+v: want step 2 or 3, made by the fork under a key of its own", c)
		}
	}
	for _, c := range calls[:3] {
		if strings.HasPrefix(c.Key, fork.ID) {
			t.Errorf("an old probe's key %q is the fork's", c.Key)
		}
	}
	if plans() != 1 {
		t.Errorf("the fork drafted a plan again (%d plan calls)", plans())
	}
	if run.ForkedFrom == nil || *run.ForkedFrom != (wire.ForkedFrom{Run: old.ID, At: "step-2"}) {
		t.Errorf("the fork's forked_from = %+v", run.ForkedFrom)
	}
	if len(run.Steps) != 4 || run.Steps[0].Result != "probe result 1" || run.Steps[0].Status != longhaul.StepDone {
		t.Errorf("the fork's steps = %+v, want step 1 kept with its result", run.Steps)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	eventually(t, ctx, func() string {
		if forks := getRun(t, env, old.ID, alice).Forks; len(forks) != 1 || forks[0].ID != fork.ID || forks[0].At != "step-2" {
			return fmt.Sprintf("the old run's forks = %+v, want %s at step-2", forks, fork.ID)
		}
		return ""
	})

	t.Run("errors", func(t *testing.T) {
		for _, tc := range []struct {
			name, id string
			body     any
			headers  map[string]string
			status   int
			want     string
		}{
			{"unknown run", "run-nope", map[string]any{}, alice, 404, "no run run-nope"},
			{"another principal's run", old.ID, map[string]any{}, user("bob"), 404, "no run " + old.ID},
			{"unknown point", old.ID, map[string]any{"at": "step-9"}, alice, 400, "step-1, step-2, step-3, step-4"},
			{"unknown call", old.ID, map[string]any{"at": "call_x"}, alice, 400, `call_x`},
			{"messages and input", old.ID, map[string]any{"input": "a", "messages": userMsg("b")}, alice, 400, "not both"},
			{"unknown agent", old.ID, map[string]any{"agent": "nobody"}, alice, 404, "nobody"},
		} {
			resp := do(t, env, "POST", "/v1/runs/"+tc.id+"/fork", tc.body, tc.headers)
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.want) {
				t.Errorf("%s: %d %s, want %d with %q", tc.name, resp.StatusCode, b, tc.status, tc.want)
			}
		}
	})
}

// TestForkChatAtToolCall runs a chat tool loop of two probing turns, then
// forks it at the first call with an edited message: the fork's model
// reads the first probe's recorded result, no probe is made again, and the
// fork answers the edited message.
func TestForkChatAtToolCall(t *testing.T) {
	p := newProbe()
	env := testenv.Start(t, testenv.Options{Layers: []fs.FS{forkLayer}, Tools: []tools.Tool{p}})
	env.Model.SetDefault(llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		results := map[string]string{}
		for _, m := range r.Chat.Messages {
			if m.Role == openai.ChatMessageRoleTool {
				results[m.ToolCallID] = llmtest.MessageText(m)
			}
		}
		switch {
		case strings.Contains(allText(r), "Edited question"):
			return llmtest.Text("edited answer after " + results["c1"])
		case results["c1"] == "":
			return llmtest.ToolCalls(llmtest.ToolCall{ID: "c1", Name: "probe", Arguments: `{"n":1}`})
		case results["c2"] == "":
			return llmtest.ToolCalls(llmtest.ToolCall{ID: "c2", Name: "probe", Arguments: `{"n":2}`})
		}
		return llmtest.Text("first answer")
	}))
	alice := user("alice")
	old := startRun(t, env, map[string]any{"agent": "chatter", "input": "Probe two things"}, alice)
	if run := awaitRun(t, env, old.ID, alice); run.Status != contract.StatusCompleted || run.Result != "first answer" {
		t.Fatalf("the run to fork ended %s: %q %s", run.Status, run.Result, run.Error)
	}
	if n := len(p.made()); n != 2 {
		t.Fatalf("the run probed %d times, want 2", n)
	}
	before := len(env.Model.Requests())

	fork := forkRun(t, env, old.ID, map[string]any{"at": "c1", "input": "Edited question"}, alice)
	run := awaitRun(t, env, fork.ID, alice)
	if run.Status != contract.StatusCompleted || run.Result != "edited answer after probe result 1" {
		t.Fatalf("the fork ended %s: %q %s", run.Status, run.Result, run.Error)
	}
	if n := len(p.made()); n != 2 {
		t.Errorf("probes = %+v: the fork probed again", p.made())
	}
	reqs := env.Model.Requests()[before:]
	if len(reqs) != 1 {
		t.Fatalf("the fork made %d model calls, want 1 (turn 2)", len(reqs))
	}
	if text := allText(reqs[0]); strings.Contains(text, "Probe two things") || strings.Contains(text, "probe result 2") {
		t.Errorf("the fork's model call holds the old request or the later result:\n%s", text)
	}
	if run.ForkedFrom == nil || run.ForkedFrom.At != "c1" || run.Mode != contract.ModeChat {
		t.Errorf("the fork = %+v", run)
	}

	// An event offset forks at the latest finished turn before it: the
	// end of the run is after c2's turn.
	end := forkRun(t, env, old.ID, map[string]any{}, alice)
	if end.ForkedFrom.At != "c2" {
		t.Errorf("a fork at the end is at %q, want c2", end.ForkedFrom.At)
	}
	if run := awaitRun(t, env, end.ID, alice); run.Result != "first answer" || len(p.made()) != 2 {
		t.Errorf("the fork at the end answered %q after %d probes, want the first answer and no new probe", run.Result, len(p.made()))
	}
}
