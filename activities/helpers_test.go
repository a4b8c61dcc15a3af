package activities_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/natsbus"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/tools"
	"github.com/longhaul-dev/longhaul/skills"
	"github.com/nats-io/nats.go"
	"go.temporal.io/sdk/activity"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
)

// testAgents adds the agents the tool tests call for: prober, whose skill
// probing may use probe and current_time, and timekeeper, whose only skill
// (clock) may use current_time.
var testAgents = fstest.MapFS{
	"probing.md":    {Data: []byte("---\nskill: probing\ndescription: Probes\ntools: [probe, current_time]\n---\nProbe.\n")},
	"prober.md":     {Data: []byte("---\nagent: prober\ndescription: Probes things\nskills: [probing]\n---\nYou probe.\n")},
	"timekeeper.md": {Data: []byte("---\nagent: timekeeper\ndescription: Keeps time\nskills: [clock]\n---\nYou keep time.\n")},
}

// fixedNow is the clock of the current_time tool in every test.
var fixedNow = time.Date(2025, time.March, 14, 15, 9, 26, 0, time.UTC)

func fixedClock() time.Time { return fixedNow }

// testNamespace is the Temporal namespace the test buses' subjects are under.
const testNamespace = "default"

// barrierKind marks the deltas a test publishes itself to learn that every
// delta the activities published before it has reached a follower: NATS
// delivers one connection's messages to a subscriber in the order they were
// published.
const barrierKind longhaul.DeltaKind = "test_barrier"

// follower records the deltas of one run as a second NATS connection, an
// API process say, sees them.
type follower struct {
	run   string
	pub   *natsbus.Bus // the bus the activities publish on
	subj  natsbus.Subjects
	poke  chan struct{}
	nbars atomic.Int64

	mu     sync.Mutex
	deltas []longhaul.Delta
}

// follow starts recording the deltas of run. The subscription is in place
// when it returns, so a call started afterwards is seen from its first delta.
func (f *fixture) follow(t *testing.T, run string) *follower {
	t.Helper()
	fl := &follower{run: run, pub: f.acts.Bus, subj: f.subj, poke: make(chan struct{}, 1)}
	stop, err := f.watcher.Follow(run, func(d longhaul.Delta) {
		fl.mu.Lock()
		fl.deltas = append(fl.deltas, d)
		fl.mu.Unlock()
		select {
		case fl.poke <- struct{}{}:
		default:
		}
	})
	if err != nil {
		t.Fatalf("Follow(%q): %v", run, err)
	}
	t.Cleanup(stop)
	// The server knows the subscription once it answered a ping sent after it.
	if err := f.watcher.Conn().Flush(); err != nil {
		t.Fatalf("flush the following connection: %v", err)
	}
	return fl
}

// waitFor waits until cond holds for the deltas received so far (barriers
// included) and returns them; it fails the test if that takes too long.
func (fl *follower) waitFor(t *testing.T, what string, cond func([]longhaul.Delta) bool) []longhaul.Delta {
	t.Helper()
	timeout := time.NewTimer(promptly)
	defer timeout.Stop()
	for {
		fl.mu.Lock()
		got := slices.Clone(fl.deltas)
		fl.mu.Unlock()
		if cond(got) {
			return got
		}
		select {
		case <-fl.poke:
		case <-timeout.C:
			t.Fatalf("no %s within %v; deltas so far: %+v", what, promptly, got)
			return nil
		}
	}
}

// waitText waits until the content deltas received so far spell want (or
// more) and returns them.
func (fl *follower) waitText(t *testing.T, want string) []longhaul.Delta {
	t.Helper()
	return fl.waitFor(t, fmt.Sprintf("content deltas spelling %q", want), func(ds []longhaul.Delta) bool {
		return strings.HasPrefix(textOf(ds), want)
	})
}

// drain returns every delta the activities published for the run before
// it was called, barriers left out: it publishes a barrier on the
// activities' own connection and waits for it to come round.
func (fl *follower) drain(t *testing.T) []longhaul.Delta {
	t.Helper()
	id := strconv.FormatInt(fl.nbars.Add(1), 10)
	data, err := json.Marshal(longhaul.Delta{Kind: barrierKind, Text: id})
	if err != nil {
		t.Fatalf("encode barrier: %v", err)
	}
	if err := fl.pub.Conn().Publish(fl.subj.Tool(fl.run), data); err != nil {
		t.Fatalf("publish barrier: %v", err)
	}
	got := fl.waitFor(t, "barrier "+id, func(ds []longhaul.Delta) bool {
		return slices.ContainsFunc(ds, func(d longhaul.Delta) bool { return d.Kind == barrierKind && d.Text == id })
	})
	return slices.DeleteFunc(got, func(d longhaul.Delta) bool { return d.Kind == barrierKind })
}

// textOf concatenates the text of the content deltas of ds.
func textOf(ds []longhaul.Delta) string {
	var sb strings.Builder
	for _, d := range ds {
		if d.Kind == longhaul.DeltaContent {
			sb.WriteString(d.Text)
		}
	}
	return sb.String()
}

// checkContent checks that ds are the content deltas of one attempt of a
// model call, numbered as call, attempt and after, whose From positions
// follow on from each other from 0, and that they spell text.
func checkContent(t *testing.T, ds []longhaul.Delta, call string, attempt int, after int64, text string) {
	t.Helper()
	from := 0
	for i, d := range ds {
		if d.Kind != longhaul.DeltaContent || d.Call != call || d.Attempt != attempt || d.After != after {
			t.Errorf("delta %d = {Kind:%s Call:%s Attempt:%d After:%d}, want {Kind:%s Call:%s Attempt:%d After:%d}",
				i, d.Kind, d.Call, d.Attempt, d.After, longhaul.DeltaContent, call, attempt, after)
		}
		if d.Text == "" {
			t.Errorf("delta %d carries no text", i)
		}
		if d.From != from {
			t.Errorf("delta %d: From = %d, want %d (where the delta before it ended)", i, d.From, from)
		}
		from = d.From + len(d.Text)
	}
	if got := textOf(ds); got != text {
		t.Errorf("the deltas spell %q, want %q", got, text)
	}
}

// probe is a tool for the tests: it counts its calls, records the calls it
// got, reports the configured progress and returns the configured result or
// error. Its arguments must carry a string "q".
type probe struct {
	progress []string
	content  string
	result   tools.Result
	err      error
	// failFirst makes the first n calls fail with err, the later ones succeed.
	failFirst int
	// block, when not nil, makes Call wait for it to close or for the context.
	block chan struct{}

	n     atomic.Int64
	mu    sync.Mutex
	calls []tools.Call
}

var _ tools.Tool = (*probe)(nil)

func (*probe) Name() string        { return "probe" }
func (*probe) Description() string { return "Probes something for the tests." }
func (*probe) Parameters() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","minLength":1}},"required":["q"],"additionalProperties":false}`)
}

func (p *probe) Call(ctx context.Context, call tools.Call) (tools.Result, error) {
	n := p.n.Add(1)
	p.mu.Lock()
	p.calls = append(p.calls, call)
	p.mu.Unlock()
	for i, msg := range p.progress {
		if call.Progress != nil {
			call.Progress(msg, float64(i+1)/float64(len(p.progress)))
		}
	}
	if p.block != nil {
		select {
		case <-p.block:
		case <-ctx.Done():
			return tools.Result{}, ctx.Err()
		}
	}
	if p.err != nil && (p.failFirst == 0 || n <= int64(p.failFirst)) {
		return tools.Result{}, p.err
	}
	r := p.result
	if r.Content == "" {
		r.Content = p.content
	}
	return r, nil
}

// count reports how many times the tool ran.
func (p *probe) count() int { return int(p.n.Load()) }

// received returns the calls the tool got, in order.
func (p *probe) received() []tools.Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]tools.Call(nil), p.calls...)
}

// fixture is everything an activity test needs: the scripted model, an
// embedded NATS server, the test tool and the activities wired to them.
type fixture struct {
	srv  *llmtest.Server
	nats *natsbus.Server
	subj natsbus.Subjects
	// watcher is a bus on a connection of its own, as an API process has:
	// what follows and snapshots the activities' calls.
	watcher *natsbus.Bus
	probe   *probe
	reg     *tools.Registry
	catalog *skills.Catalog
	acts    *activities.Activities
}

// newFixture builds activities on the built-in catalog, a registry of
// current_time (at fixedNow) and probe, a fresh llmtest server and a fresh
// in-process NATS server, whose bus the activities publish on.
// llm, when not nil, adjusts the model configuration.
func newFixture(t *testing.T, p *probe, llm func(*activities.LLMConfig)) *fixture {
	t.Helper()
	if p == nil {
		p = &probe{content: "probed"}
	}
	srv := llmtest.New(t)
	reg, err := tools.NewRegistry(&tools.CurrentTime{Now: fixedClock}, p)
	if err != nil {
		t.Fatalf("NewRegistry: %v", err)
	}
	catalog, err := skills.Load(skills.Builtin(), testAgents)
	if err != nil {
		t.Fatalf("skills.Load: %v", err)
	}
	cfg := activities.LLMConfig{BaseURL: srv.URL(), Model: "llmtest"}
	if llm != nil {
		llm(&cfg)
	}
	ns, err := natsbus.StartServer("")
	if err != nil {
		t.Fatalf("StartServer: %v", err)
	}
	t.Cleanup(ns.Shutdown)
	subj := natsbus.NewSubjects("", testNamespace)
	quiet := slog.New(slog.DiscardHandler)
	acts := activities.New(cfg, catalog, reg, quiet)
	acts.Bus = natsbus.New(connect(t, ns), subj, quiet)
	watcher := natsbus.New(connect(t, ns), subj, quiet)
	return &fixture{srv: srv, nats: ns, subj: subj, watcher: watcher, probe: p, reg: reg, catalog: catalog, acts: acts}
}

// connect opens a connection to the in-process NATS server ns, closed when
// the test ends.
func connect(t *testing.T, ns *natsbus.Server) *nats.Conn {
	t.Helper()
	nc, err := natsbus.Connect(natsbus.ClientOptions{InProcess: ns}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("natsbus.Connect: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// quietSuite returns a test suite whose Temporal logger discards everything,
// so expected activity failures do not flood the test output.
func quietSuite() *testsuite.WorkflowTestSuite {
	s := &testsuite.WorkflowTestSuite{}
	s.SetLogger(tlog.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	return s
}

// activityEnv returns a test activity environment with the fixture's
// activities and workflowIDActivity registered.
func (f *fixture) activityEnv() *testsuite.TestActivityEnvironment {
	env := quietSuite().NewTestActivityEnvironment()
	env.RegisterActivity(f.acts)
	env.RegisterActivity(workflowIDActivity)
	return env
}

// workflowIDActivity reports the workflow execution its activity context
// belongs to, so tests learn the test environment's ids from the environment.
func workflowIDActivity(ctx context.Context) ([2]string, error) {
	we := activity.GetInfo(ctx).WorkflowExecution
	return [2]string{we.ID, we.RunID}, nil
}

// followedEnv is an activity environment and a follower of the run its
// activities run in.
func (f *fixture) followedEnv(t *testing.T) (*testsuite.TestActivityEnvironment, *follower) {
	t.Helper()
	env := f.activityEnv()
	wfID, _ := envWorkflow(t, env)
	return env, f.follow(t, wfID)
}

// envWorkflow returns the workflow id and run id activities in env run under.
func envWorkflow(t *testing.T, env *testsuite.TestActivityEnvironment) (id, runID string) {
	t.Helper()
	ids, err := execute[[2]string](t, env, workflowIDActivity)
	if err != nil {
		t.Fatalf("workflowIDActivity: %v", err)
	}
	return ids[0], ids[1]
}

// execute runs activity fn with args in env and decodes its result as an
// R. The activity's error is returned; a result that does not decode fails
// the test.
func execute[R any](t *testing.T, env *testsuite.TestActivityEnvironment, fn any, args ...any) (R, error) {
	t.Helper()
	var r R
	val, err := env.ExecuteActivity(fn, args...)
	if err != nil {
		return r, err
	}
	if err := val.Get(&r); err != nil {
		t.Fatalf("decode %T: %v", r, err)
	}
	return r, nil
}

// chat runs ChatCompletion in env and decodes its response.
func chat(t *testing.T, env *testsuite.TestActivityEnvironment, acts *activities.Activities, req contract.ModelRequest) (contract.ModelResponse, error) {
	t.Helper()
	return execute[contract.ModelResponse](t, env, acts.ChatCompletion, req)
}

// callTool runs CallTool in env and decodes its response.
func callTool(t *testing.T, env *testsuite.TestActivityEnvironment, acts *activities.Activities, req contract.ToolRequest) (contract.ToolResponse, error) {
	t.Helper()
	return execute[contract.ToolResponse](t, env, acts.CallTool, req)
}

// wantAppError checks that err carries an application error of type typ,
// retryable or not as told, whose message contains msg, and returns it.
func wantAppError(t *testing.T, err error, typ string, nonRetryable bool, msg string) *temporal.ApplicationError {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil, want a %s application error", typ)
	}
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) {
		t.Fatalf("err = %v (%T), want a *temporal.ApplicationError", err, err)
	}
	if appErr.Type() != typ {
		t.Errorf("error type = %q, want %q (error: %v)", appErr.Type(), typ, err)
	}
	if appErr.NonRetryable() != nonRetryable {
		t.Errorf("NonRetryable() = %v, want %v (error: %v)", appErr.NonRetryable(), nonRetryable, err)
	}
	if !strings.Contains(appErr.Error(), msg) {
		t.Errorf("error %q does not contain %q", appErr.Error(), msg)
	}
	return appErr
}

// diff fails the test with a (-want +got) diff when want and got differ.
func diff(t *testing.T, what string, want, got any, opts ...cmp.Option) {
	t.Helper()
	if d := cmp.Diff(want, got, opts...); d != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", what, d)
	}
}

// userMessage is a one-message conversation.
func userMessage(s string) []longhaul.Message {
	return []longhaul.Message{{Role: longhaul.RoleUser, Content: s}}
}
