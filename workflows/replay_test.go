package workflows_test

import (
	"bytes"
	"context"
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/workflows"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// updateHistory regenerates the committed histories in testdata from real
// runs on the embedded server: every one, or with -run those of the
// selected replay tests:
//
//	go test ./workflows -run TestReplay -update-history
//	go test ./workflows -run TestReplayHistories/memory -update-history
var updateHistory = flag.Bool("update-history", false, "regenerate the histories in testdata of the replay tests that run, from real runs")

var historyFile = filepath.Join("testdata", "agent_history.json")

// signalsHistoryFile is a run of the earlier AgentWorkflow whose streamed
// text arrived as publish signals: runs like it may still be in flight (or
// be queried after they closed), so it must replay too.
var signalsHistoryFile = filepath.Join("testdata", "agent_signals_history.json")

// TestReplayAgentHistory replays committed histories of real AgentWorkflow
// runs (a tool call, then a streamed answer) against the current code: a
// change that makes old runs non-deterministic fails here instead of in
// production.
func TestReplayAgentHistory(t *testing.T) {
	if *updateHistory {
		generateHistory(t)
	}
	for _, tc := range []struct {
		file    string
		signals bool
	}{{historyFile, false}, {signalsHistoryFile, true}} {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			checkHistoryShape(t, loadHistoryFile(t, tc.file), tc.signals)
			replay(t, workflows.AgentWorkflow, contract.AgentWorkflowName, tc.file)
		})
	}
}

// TestReplayDetectsNonDeterminism shows the replay test has teeth: the same
// history replayed against an edited workflow must fail as non-deterministic.
func TestReplayDetectsNonDeterminism(t *testing.T) {
	replayer := worker.NewWorkflowReplayer()
	replayer.RegisterWorkflowWithOptions(changedAgentWorkflow, workflow.RegisterOptions{Name: contract.AgentWorkflowName})
	quiet := log.NewStructuredLogger(slog.New(slog.DiscardHandler)) // the SDK logs the failure as a workflow panic
	err := replayer.ReplayWorkflowHistoryFromJSONFile(quiet, historyFile)
	if err == nil {
		t.Fatal("replaying against an edited workflow succeeded, want a non-determinism error")
	}
	// TMPRL1100 marks the SDK's non-determinism errors, whichever check of
	// history against the replayed commands fails first.
	if !strings.Contains(err.Error(), "[TMPRL1100]") {
		t.Errorf("replay error = %v, want a non-determinism error ([TMPRL1100])", err)
	}
}

// changedAgentWorkflow stands for an incompatible edit of AgentWorkflow: it
// starts like it (search attributes, ResolveAgent), then runs a tool before
// the first model call.
func changedAgentWorkflow(ctx workflow.Context, in contract.AgentInput) (contract.AgentResult, error) {
	var acts *activities.Activities
	err := workflow.UpsertTypedSearchAttributes(ctx,
		contract.SearchAttrAgent.ValueSet(in.Agent),
		contract.SearchAttrUser.ValueSet(in.User.Key()),
		contract.SearchAttrStatus.ValueSet(contract.StatusRunning))
	if err != nil {
		return contract.AgentResult{}, err
	}
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: 10 * time.Second})
	var spec contract.AgentSpec
	if err := workflow.ExecuteLocalActivity(lctx, acts.ResolveAgent, in.Agent, in.User).Get(ctx, &spec); err != nil {
		return contract.AgentResult{}, err
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	var res contract.ToolResponse
	err = workflow.ExecuteActivity(actx, acts.CallTool, contract.ToolRequest{
		Call:  longhaul.ToolCall{ID: "call_0", Name: "current_time", Arguments: `{}`},
		Agent: spec.ID,
		Seq:   1,
	}).Get(ctx, &res)
	return contract.AgentResult{Content: res.Content}, err
}

func loadHistoryFile(t *testing.T, file string) *historypb.History {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (generate it with: go test ./workflows -run TestReplay -update-history)", err)
	}
	h, err := client.HistoryFromJSON(bytes.NewReader(b), client.HistoryJSONOptions{})
	if err != nil {
		t.Fatalf("parse %s: %v", file, err)
	}
	return h
}

// checkHistoryShape makes sure a committed history still covers what it is
// meant to: the local activity, a tool call between two model calls, publish
// signals (or, since streamed text left history, none), and a completed run.
func checkHistoryShape(t *testing.T, h *historypb.History, wantSignals bool) {
	t.Helper()
	var scheduled []string
	var markers, signals int
	for _, e := range h.GetEvents() {
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			scheduled = append(scheduled, e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName())
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			markers++
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
			if name := e.GetWorkflowExecutionSignaledEventAttributes().GetSignalName(); name != "publish" {
				t.Errorf("history has a %q signal, want only publish", name)
			}
			signals++
		}
	}
	if diff := cmp.Diff([]string{"ChatCompletion", "CallTool", "ChatCompletion"}, scheduled); diff != "" {
		t.Errorf("scheduled activities mismatch (-want +got):\n%s", diff)
	}
	if markers == 0 {
		t.Error("history has no marker: the ResolveAgent local activity is missing")
	}
	if wantSignals && signals < 2 {
		t.Errorf("history has %d publish signals, want at least 2", signals)
	}
	if !wantSignals && signals > 0 {
		t.Errorf("history has %d publish signals, want none", signals)
	}
	events := h.GetEvents()
	if n := len(events); n == 0 || events[n-1].GetEventType() != enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED {
		t.Error("history does not end with the run's completion")
	}
}

// generateHistory runs AgentWorkflow on the real embedded server with a
// scripted model and writes the run's history to historyFile.
func generateHistory(t *testing.T) {
	t.Helper()
	env := testenv.Start(t, testenv.Options{})
	env.Model.Enqueue(
		llmtest.ToolCalls(llmtest.ToolCall{ID: "call_1", Name: "current_time", Arguments: `{"timezone":"UTC"}`}),
		// Small chunks, slowly: the streamed text goes over NATS, and
		// history gets none of it.
		llmtest.Text("It is Thursday, 2 January 2025, and the time is 03:04 UTC.",
			llmtest.ChunkSize(3), llmtest.ChunkDelay(25*time.Millisecond)),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var res contract.AgentResult
	run := execute(ctx, t, env, "replay-1", contract.AgentWorkflowName, contract.AgentInput{
		Agent:    "assistant",
		Messages: []longhaul.Message{{Role: longhaul.RoleUser, Content: "What time is it?"}},
	}, &res)
	if !strings.HasPrefix(res.Content, "It is Thursday") || len(res.Messages) != 3 {
		t.Fatalf("unexpected result: %+v", res)
	}
	h := fetchHistory(t, env, run)
	checkHistoryShape(t, h, false)
	writeHistory(t, h, historyFile)
}

// fetchHistory reads a finished run's whole history.
func fetchHistory(t *testing.T, env *testenv.Env, run client.WorkflowRun) *historypb.History {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h := &historypb.History{}
	it := env.Client.GetWorkflowHistory(ctx, run.GetID(), run.GetRunID(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatalf("read history: %v", err)
		}
		h.Events = append(h.Events, e)
	}
	return h
}

// writeHistory writes h to file in the format `temporal workflow show
// --output json` writes and ReplayWorkflowHistoryFromJSONFile reads.
func writeHistory(t *testing.T, h *historypb.History, file string) {
	t.Helper()
	// The format `temporal workflow show --output json` writes and
	// ReplayWorkflowHistoryFromJSONFile reads.
	b, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(h)
	if err != nil {
		t.Fatalf("encode history: %v", err)
	}
	back, err := client.HistoryFromJSON(bytes.NewReader(b), client.HistoryJSONOptions{})
	if err != nil {
		t.Fatalf("decode the encoded history: %v", err)
	}
	if !temporalproto.DeepEqual(h, back) {
		t.Fatal("the history does not survive a JSON round trip")
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s: %d events", file, len(h.Events))
}

// replayTest is a committed history of one run: the workflow it replays
// against, registered as name, what its shape must be (the activities it
// schedules, in order, before it completes, and what its markers name),
// and, for -update-history, a real run to make it again from.
type replayTest struct {
	file      string
	fn        any
	name      string
	scheduled []string
	markers   []string
	generate  func(*testing.T) (*testenv.Env, client.WorkflowRun)
	// id is the run's workflow id, for a workflow whose commands name it
	// (an evaluation's children's ids start with it); empty replays it
	// under the replayer's own id.
	id string
}

func (r replayTest) shape(t *testing.T, h *historypb.History) {
	t.Helper()
	checkScheduledThenCompleted(t, h, r.scheduled)
	checkMarkers(t, h, r.markers...)
}

// run checks the committed history's shape and replays it; with
// -update-history it first writes it again from a fresh run, checked
// likewise.
func (r replayTest) run(t *testing.T) {
	t.Helper()
	if *updateHistory {
		env, run := r.generate(t)
		h := fetchHistory(t, env, run)
		r.shape(t, h)
		writeHistory(t, h, r.file)
	}
	r.shape(t, loadHistoryFile(t, r.file))
	if r.id != "" {
		replayAs(t, r.fn, r.name, r.file, r.id)
		return
	}
	replay(t, r.fn, r.name, r.file)
}

// replays are the committed histories of single runs that
// TestReplayHistories replays, a subtest each, named for its file.
var replays = []replayTest{
	{
		// A real agentic run of the built-in researcher: plan, plan check,
		// a tool step, its review, the streamed answer.
		file: filepath.Join("testdata", "agentic_history.json"),
		fn:   workflows.AgentWorkflow, name: contract.AgentWorkflowName,
		scheduled: []string{"Plan", "SupervisePlan", "CallTool", "ReviewStep", "ChatCompletion"},
		generate:  generateAgenticHistory,
	},
	{
		// A chat turn whose older turns do not fit a window of 4,096
		// tokens: the first model call asks for a compaction, Compact
		// summarizes them, and the call is made again with the summary.
		file: filepath.Join("testdata", "context_history.json"),
		fn:   workflows.AgentWorkflow, name: contract.AgentWorkflowName,
		scheduled: []string{"ChatCompletion", "Compact", "ChatCompletion"},
		generate:  generateContextHistory,
	},
	{
		// The second turn of a chat whose first turn called a tool: it
		// restores that turn and records its own (local activities, so
		// markers, as is the version marker), and calls the model once.
		file: filepath.Join("testdata", "conversation_history.json"),
		fn:   workflows.AgentWorkflow, name: contract.AgentWorkflowName,
		scheduled: []string{"ChatCompletion"},
		markers:   []string{"conversation-store", "RestoreConversation", "RecordTurn"},
		generate:  generateConversationHistory,
	},
	{
		// A turn of an agent with memory: recall and remember: true: it
		// recalls a fact an earlier run saved, answers, and extracts and
		// saves a new one, behind the version markers of recall and
		// remember.
		file: filepath.Join("testdata", "memory_history.json"),
		fn:   workflows.AgentWorkflow, name: contract.AgentWorkflowName,
		scheduled: []string{"RecallMemories", "ChatCompletion", "ExtractMemories", "SaveMemories"},
		markers:   []string{"memory-recall", "memory-remember"},
		generate:  generateMemoryHistory,
	},
	{
		// A real ingestion of a two-page PDF: extracted, chunked, embedded
		// in batches, completed. Ingestions of big files run for minutes,
		// so an upgraded worker meets them mid-way.
		file: filepath.Join("testdata", "ingest_history.json"),
		fn:   workflows.IngestWorkflow, name: contract.IngestWorkflow,
		scheduled: []string{"ExtractChunks", "EmbedChunks", "FinishIngest"},
		generate:  generateIngestHistory,
	},
	{
		// A researcher run whose plan is a graph: three page reads that
		// need nothing from each other, each in a StepWorkflow child
		// started at once (so the run schedules no CallTool itself),
		// each reviewed as it ends, then the answer, which needs them.
		file: filepath.Join("testdata", "fanout_history.json"),
		fn:   workflows.AgentWorkflow, name: contract.AgentWorkflowName,
		scheduled: []string{"Plan", "SupervisePlan", "ReviewStep", "ReviewStep", "ReviewStep", "ChatCompletion"},
		markers:   []string{"plan-graph"},
		generate:  generateFanoutHistory,
		id:        fanoutRun,
	},
	{
		// A run of RetentionWorkflow. Its runs are short, but the schedule
		// starts one every hour, so one may be in flight when a worker is
		// upgraded.
		file: filepath.Join("testdata", "retention_history.json"),
		fn:   workflows.RetentionWorkflow, name: contract.RetentionWorkflowName,
		scheduled: []string{"DeleteExpiredBlobs"},
		generate:  generateRetentionHistory,
	},
}

// TestReplayHistories replays each of replays against the current code,
// after checking the committed history is what it stands for.
func TestReplayHistories(t *testing.T) {
	for _, r := range replays {
		t.Run(strings.TrimSuffix(filepath.Base(r.file), "_history.json"), r.run)
	}
}

// execute starts the workflow name with in on env's task queue, as id, and
// waits for its result into res (nil drops it).
func execute(ctx context.Context, t *testing.T, env *testenv.Env, id, name string, in, res any) client.WorkflowRun {
	t.Helper()
	run, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: testenv.TaskQueue}, name, in)
	if err != nil {
		t.Fatalf("start workflow: %v", err)
	}
	if err := run.Get(ctx, res); err != nil {
		t.Fatalf("workflow: %v", err)
	}
	return run
}

// replay replays the committed histories files of the workflow fn,
// registered as name, against the current code.
func replay(t *testing.T, fn any, name string, files ...string) {
	t.Helper()
	replayer := worker.NewWorkflowReplayer()
	replayer.RegisterWorkflowWithOptions(fn, workflow.RegisterOptions{Name: name})
	for _, f := range files {
		if err := replayer.ReplayWorkflowHistoryFromJSONFile(nil, f); err != nil {
			t.Fatalf("replaying %s: %v\nIf the change is intended, version it with workflow.GetVersion; "+
				"regenerate the history only for runs that cannot exist any more.", f, err)
		}
	}
}

// replayAs replays the committed history file of the workflow fn,
// registered as name, as the run of workflow id id.
func replayAs(t *testing.T, fn any, name, file, id string) {
	t.Helper()
	replayer := worker.NewWorkflowReplayer()
	replayer.RegisterWorkflowWithOptions(fn, workflow.RegisterOptions{Name: name})
	opts := worker.ReplayWorkflowHistoryOptions{OriginalExecution: workflow.Execution{ID: id}}
	if err := replayer.ReplayWorkflowHistoryWithOptions(nil, loadHistoryFile(t, file), opts); err != nil {
		t.Fatalf("replaying %s: %v\nIf the change is intended, version it with workflow.GetVersion; "+
			"regenerate the history only for runs that cannot exist any more.", file, err)
	}
}

// checkScheduledThenCompleted checks that h schedules exactly the
// activities want, in order, and ends with the run's completion.
func checkScheduledThenCompleted(t *testing.T, h *historypb.History, want []string) {
	t.Helper()
	var scheduled []string
	for _, e := range h.GetEvents() {
		if e.GetEventType() == enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED {
			scheduled = append(scheduled, e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName())
		}
	}
	if diff := cmp.Diff(want, scheduled); diff != "" {
		t.Errorf("scheduled activities mismatch (-want +got):\n%s", diff)
	}
	events := h.GetEvents()
	if n := len(events); n == 0 || events[n-1].GetEventType() != enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED {
		t.Error("history does not end with the run's completion")
	}
}

// checkMarkers asserts that each of want (a version change id, a local
// activity's type) appears in a marker of h.
func checkMarkers(t *testing.T, h *historypb.History, want ...string) {
	t.Helper()
	var markers strings.Builder
	for _, e := range h.GetEvents() {
		if e.GetEventType() == enumspb.EVENT_TYPE_MARKER_RECORDED {
			markers.WriteString(e.String())
		}
	}
	for _, w := range want {
		if !strings.Contains(markers.String(), w) {
			t.Errorf("no marker of %s in the history", w)
		}
	}
}
