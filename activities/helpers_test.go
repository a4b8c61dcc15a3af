package activities_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/internal/llmtest"
	"github.com/longhaul-dev/longhaul/internal/tools"
	"github.com/longhaul-dev/longhaul/skills"
	"go.temporal.io/sdk/activity"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
)

// fixedNow is the clock of the current_time tool in every test.
var fixedNow = time.Date(2025, time.March, 14, 15, 9, 26, 0, time.UTC)

func fixedClock() time.Time { return fixedNow }

// sentSignal is one SignalWorkflow call as the recorder saw it. The batch has
// been through JSON, as a real client's data converter would send it.
type sentSignal struct {
	WorkflowID string
	RunID      string
	Name       string
	Batch      longhaul.EventBatch
}

// recorder is the signaler the activities publish through: it records every
// signal, can be told to fail, and reports each call on a channel.
type recorder struct {
	mu      sync.Mutex
	signals []sentSignal
	fail    error
	calls   chan struct{}
}

var _ interface {
	SignalWorkflow(ctx context.Context, workflowID, runID, signalName string, arg any) error
} = (*recorder)(nil)

func newRecorder() *recorder { return &recorder{calls: make(chan struct{}, 1024)} }

func (r *recorder) SignalWorkflow(_ context.Context, workflowID, runID, signalName string, arg any) error {
	b, err := json.Marshal(arg)
	if err != nil {
		return fmt.Errorf("recorder: encode signal argument: %w", err)
	}
	var batch longhaul.EventBatch
	if err := json.Unmarshal(b, &batch); err != nil {
		return fmt.Errorf("recorder: signal argument is not an event batch: %w", err)
	}
	r.mu.Lock()
	r.signals = append(r.signals, sentSignal{WorkflowID: workflowID, RunID: runID, Name: signalName, Batch: batch})
	fail := r.fail
	r.mu.Unlock()
	select {
	case r.calls <- struct{}{}:
	default:
	}
	return fail
}

// setFail makes every later signal fail with err.
func (r *recorder) setFail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail = err
}

// sent returns the signals received so far, in order.
func (r *recorder) sent() []sentSignal {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]sentSignal(nil), r.signals...)
}

// batches returns the batches received so far, in order.
func (r *recorder) batches() []longhaul.EventBatch {
	var out []longhaul.EventBatch
	for _, s := range r.sent() {
		out = append(out, s.Batch)
	}
	return out
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

// fixture is everything an activity test needs: the scripted model, the
// signal recorder, the test tool and the activities wired to them.
type fixture struct {
	srv     *llmtest.Server
	rec     *recorder
	probe   *probe
	reg     *tools.Registry
	catalog *skills.Catalog
	acts    *activities.Activities
	logs    *logRecorder
}

// newFixture builds activities on the built-in catalog, a registry of
// current_time (at fixedNow) and probe, a fresh llmtest server and recorder.
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
	catalog, err := skills.Load(skills.Builtin())
	if err != nil {
		t.Fatalf("skills.Load: %v", err)
	}
	cfg := activities.LLMConfig{BaseURL: srv.URL(), Model: "llmtest"}
	if llm != nil {
		llm(&cfg)
	}
	rec := newRecorder()
	logs := &logRecorder{}
	acts := activities.New(cfg, catalog, reg, rec, slog.New(logs))
	return &fixture{srv: srv, rec: rec, probe: p, reg: reg, catalog: catalog, acts: acts, logs: logs}
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

// envWorkflow returns the workflow id and run id activities in env run under.
func envWorkflow(t *testing.T, env *testsuite.TestActivityEnvironment) (id, runID string) {
	t.Helper()
	val, err := env.ExecuteActivity(workflowIDActivity)
	if err != nil {
		t.Fatalf("workflowIDActivity: %v", err)
	}
	var ids [2]string
	if err := val.Get(&ids); err != nil {
		t.Fatalf("decode workflow ids: %v", err)
	}
	return ids[0], ids[1]
}

// chat runs ChatCompletion in env and decodes its response.
func chat(t *testing.T, env *testsuite.TestActivityEnvironment, acts *activities.Activities, req activities.ModelRequest) (activities.ModelResponse, error) {
	t.Helper()
	val, err := env.ExecuteActivity(acts.ChatCompletion, req)
	if err != nil {
		return activities.ModelResponse{}, err
	}
	var resp activities.ModelResponse
	if err := val.Get(&resp); err != nil {
		t.Fatalf("decode ModelResponse: %v", err)
	}
	return resp, nil
}

// callTool runs CallTool in env and decodes its response.
func callTool(t *testing.T, env *testsuite.TestActivityEnvironment, acts *activities.Activities, req activities.ToolRequest) (activities.ToolResponse, error) {
	t.Helper()
	val, err := env.ExecuteActivity(acts.CallTool, req)
	if err != nil {
		return activities.ToolResponse{}, err
	}
	var resp activities.ToolResponse
	if err := val.Get(&resp); err != nil {
		t.Fatalf("decode ToolResponse: %v", err)
	}
	return resp, nil
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

// eventsOf returns the events of batches, in order.
func eventsOf(batches []longhaul.EventBatch) []longhaul.Event {
	var out []longhaul.Event
	for _, b := range batches {
		out = append(out, b.Events...)
	}
	return out
}

// contentText concatenates the text of the content events of call.
func contentText(t *testing.T, events []longhaul.Event, call string) string {
	t.Helper()
	var sb strings.Builder
	for _, e := range events {
		if e.Type != longhaul.EventContent {
			continue
		}
		var d longhaul.ContentData
		if err := e.Decode(&d); err != nil {
			t.Fatalf("decode content event %s: %v", e.Data, err)
		}
		if d.Call != call {
			t.Errorf("content event names call %q, want %q", d.Call, call)
		}
		sb.WriteString(d.Text)
	}
	return sb.String()
}

// checkSeqs checks that every publisher numbers its batches 1, 2, 3… in the
// order they were delivered.
func checkSeqs(t *testing.T, batches []longhaul.EventBatch) {
	t.Helper()
	last := map[string]int64{}
	for _, b := range batches {
		if b.Publisher == "" {
			t.Errorf("batch %d has no publisher", b.Seq)
		}
		if want := last[b.Publisher] + 1; b.Seq != want {
			t.Errorf("publisher %q: batch seq = %d, want %d", b.Publisher, b.Seq, want)
		}
		last[b.Publisher] = b.Seq
		if len(b.Events) == 0 {
			t.Errorf("publisher %q: batch %d is empty", b.Publisher, b.Seq)
		}
	}
}

// diff fails the test with a (-want +got) diff when want and got differ.
func diff(t *testing.T, what string, want, got any, opts ...cmp.Option) {
	t.Helper()
	if d := cmp.Diff(want, got, opts...); d != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", what, d)
	}
}

// logRecorder is a slog handler that keeps the records it handles.
type logRecorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Clone())
	return nil
}
func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logRecorder) WithGroup(string) slog.Handler      { return h }

// warnings returns the messages of the warnings logged so far.
func (h *logRecorder) warnings() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, r := range h.records {
		if r.Level == slog.LevelWarn {
			out = append(out, r.Message)
		}
	}
	return out
}

// userMessage is a one-message conversation.
func userMessage(s string) []longhaul.Message {
	return []longhaul.Message{{Role: longhaul.RoleUser, Content: s}}
}
