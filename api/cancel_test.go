package api_test

import (
	"context"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"go.temporal.io/api/enums/v1"
)

// TestCancelRunMidTool: cancelling a run while a declared HTTP tool works
// reaches the tool's request through the activity's heartbeat (the service
// sees its client go), the run ends cancelled, and the call is not retried.
func TestCancelRunMidTool(t *testing.T) {
	started := make(chan struct{}, 4)
	gone := make(chan struct{}, 4)
	release := make(chan struct{})
	var calls atomic.Int32
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		// Read the body first: only then does the server watch the
		// connection and cancel r.Context() when the caller hangs up.
		_, _ = io.Copy(io.Discard, r.Body)
		started <- struct{}{}
		select { // a long job: it ends when the caller leaves
		case <-r.Context().Done():
			gone <- struct{}{}
		case <-release: // the test is over
		}
	}))
	defer svc.Close()
	defer close(release)
	layer := fstest.MapFS{
		"jobs.md": {Data: []byte(`---
skill: jobs
description: Runs long jobs
tools: [run_job]
http_tools:
  - name: run_job
    description: Run a long job
    method: POST
    url: ${JOBS_URL}/jobs
    parameters: {type: object, properties: {name: {type: string}}, required: [name]}
---
Run the job.`)},
		"jobber.md": {Data: []byte("---\nagent: jobber\ndescription: Runs jobs\nmode: chat\nskills: [jobs]\n---\nYou run jobs.\n")},
	}
	env := testenv.Start(t, testenv.Options{Layers: []fs.FS{layer}, Env: map[string]string{"JOBS_URL": svc.URL}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ann := user("ann")
	env.Model.Enqueue(llmtest.ToolCalls(llmtest.ToolCall{ID: "j1", Name: "run_job", Arguments: `{"name":"reindex"}`}))
	r := startRun(t, env, map[string]any{"agent": "jobber", "input": "Reindex everything."}, ann)
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the tool was never called")
	}
	stream := openEvents(t, ctx, env, r.ID, "", ann)
	if resp := do(t, env, "POST", "/v1/runs/"+r.ID+"/cancel", nil, ann); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("cancel = %d", resp.StatusCode)
	}
	select {
	case <-gone:
	case <-ctx.Done():
		t.Fatal("the tool's request was never cancelled")
	}
	events, ended := readEvents(t, stream, nil)
	if !ended || doneData(t, events).Status != contract.StatusCancelled {
		t.Fatalf("stream ended %v with %v", ended, types(events))
	}
	if got := getRun(t, env, r.ID, ann); got.Status != contract.StatusCancelled {
		t.Fatalf("status %s", got.Status)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the job service was called %d times, want once", n)
	}
}

// TestCancelRunKeepsPartialAnswer: a run cancelled while its answer streams
// ends cancelled with the text it had.
func TestCancelRunKeepsPartialAnswer(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	run, text, events := cancelWhileStreaming(t, env)
	got := getRun(t, env, run, user("ann"))
	if got.Status != contract.StatusCancelled || got.Result != contentText(t, events) || got.Result != text {
		t.Fatalf("run %s with result %q; streamed %q, durably %q", got.Status, got.Result, text, contentText(t, events))
	}
}

// cancelWhileStreaming starts ann's run of the naked agent, whose answer
// stalls after two chunks, cancels it once both streamed, and returns
// the run, the text streamed and the run's events to its end, which say
// it was cancelled.
func cancelWhileStreaming(t *testing.T, env *testenv.Env) (run, text string, events []sseEvent) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ann := user("ann")
	env.Model.Enqueue(llmtest.Text("The first part of a long answer and then much more", llmtest.ChunkSize(3), llmtest.StallAfter(2)))
	run = startRun(t, env, map[string]any{"agent": "naked", "input": "Tell me everything."}, ann).ID
	seen, _ := readEvents(t, openEvents(t, ctx, env, run, "", ann), func(e sseEvent) bool {
		var d longhaul.Delta
		if e.Type == string(longhaul.EventContentDelta) && e.Event.Decode(&d) == nil {
			text += d.Text
		}
		return text == "The first part of a long answer"[:len(text)] && len([]rune(text)) >= 6
	})
	if len(seen) == 0 {
		t.Fatal("no content streamed")
	}
	if resp := do(t, env, "POST", "/v1/runs/"+run+"/cancel", nil, ann); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("cancel = %d", resp.StatusCode)
	}
	events = followToDone(t, ctx, env, run, ann)
	if d := doneData(t, events); d.Status != contract.StatusCancelled {
		t.Fatalf("done %+v", d)
	}
	return run, text, events
}

// TestCancelReachesTheModelCallOverNATS: with heartbeats an hour apart, so
// that no heartbeat can carry Temporal's cancellation to the worker, a run
// cancelled while its answer streams still ends cancelled with the text it
// had, because the API says so over NATS and the call stops at once: the
// call ends with a failure of its own that holds the cancellation,
// neither a cancellation taken from a heartbeat nor the heartbeat timeout
// that would end it without NATS, and is not tried again.
func TestCancelReachesTheModelCallOverNATS(t *testing.T) {
	env := testenv.Start(t, testenv.Options{HeartbeatInterval: time.Hour})
	run, text, _ := cancelWhileStreaming(t, env)
	if got := getRun(t, env, run, user("ann")); got.Result != text {
		t.Errorf("result %q, streamed %q", got.Result, text)
	}
	ctx := within(t, time.Minute)
	ends := map[enums.EventType]int{}
	cancelledFailure := false
	it := env.Client.GetWorkflowHistory(ctx, run, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		ends[ev.GetEventType()]++
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil && a.GetAttempt() != 1 {
			t.Errorf("the model call was tried again: attempt %d", a.GetAttempt())
		}
		f := ev.GetActivityTaskFailedEventAttributes().GetFailure()
		if f.GetApplicationFailureInfo().GetType() == longhaul.ErrTypeRunCancelled && f.GetCause().GetCanceledFailureInfo() != nil {
			cancelledFailure = true
		}
	}
	if !cancelledFailure || ends[enums.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT] > 0 || ends[enums.EVENT_TYPE_ACTIVITY_TASK_CANCELED] > 0 {
		t.Errorf("the model call did not end on the NATS cancel: cancelled failure %v, events %v", cancelledFailure, ends)
	}
}
