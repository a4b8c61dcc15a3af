package activities_test

// The test activity environment always runs attempt 1 (newTestActivityTask in
// go.temporal.io/sdk/internal hard-codes Attempt: 1 and offers no option to
// change it), so behaviour that depends on the attempt is tested in the test
// workflow environment, which retries activities by their retry policy and
// numbers the attempts.

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/nats-io/nats.go"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

var retryOptions = workflow.ActivityOptions{
	StartToCloseTimeout: time.Minute,
	RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 3},
}

// chatWorkflow runs one ChatCompletion with retries.
func chatWorkflow(ctx workflow.Context, req contract.ModelRequest) (contract.ModelResponse, error) {
	var a *activities.Activities
	var resp contract.ModelResponse
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, retryOptions), a.ChatCompletion, req).Get(ctx, &resp)
	return resp, err
}

// toolWorkflow runs one CallTool with retries and, as the run workflows
// do, no limit on attempts: CallTool itself stops a failing tool at
// contract.ToolAttempts.
func toolWorkflow(ctx workflow.Context, req contract.ToolRequest) (contract.ToolResponse, error) {
	var a *activities.Activities
	var resp contract.ToolResponse
	opts := retryOptions
	opts.RetryPolicy = &temporal.RetryPolicy{InitialInterval: time.Second}
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), a.CallTool, req).Get(ctx, &resp)
	return resp, err
}

// runChat runs chatWorkflow with req in env and returns its answer; a run
// that does not complete, or fails, fails t.
func runChat(t *testing.T, env *testsuite.TestWorkflowEnvironment, req contract.ModelRequest) contract.ModelResponse {
	t.Helper()
	env.ExecuteWorkflow(chatWorkflow, req)
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow: %v", err)
	}
	var resp contract.ModelResponse
	if err := env.GetWorkflowResult(&resp); err != nil {
		t.Fatalf("decode result: %v", err)
	}
	return resp
}

func (f *fixture) workflowEnv(t *testing.T, workflowID string) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	env := quietSuite().NewTestWorkflowEnvironment()
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: workflowID})
	// Loaded CI machines under -race: no false deadlock after 1 s.
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: 30 * time.Second})
	env.RegisterWorkflow(chatWorkflow)
	env.RegisterWorkflow(toolWorkflow)
	env.RegisterActivity(f.acts)
	return env
}

func TestChatCompletionRetryPublishesUnderTheNewAttempt(t *testing.T) {
	const text = "alpha beta gamma delta epsilon"
	f := newFixture(t, nil, nil)
	f.srv.Enqueue(
		llmtest.Text(text).With(llmtest.CutAfter(2)),
		llmtest.Text(text),
	)
	env := f.workflowEnv(t, "run-7")
	fl := f.follow(t, "run-7")
	// Subscribers of each attempt's subject check the deltas go where the
	// subjects say.
	var raw [2]*nats.Subscription
	for i := range raw {
		sub, err := f.watcher.Conn().SubscribeSync(f.subj.Call("run-7", "turn-4", i+1))
		if err != nil {
			t.Fatalf("SubscribeSync: %v", err)
		}
		raw[i] = sub
	}
	if err := f.watcher.Conn().Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	resp := runChat(t, env, contract.ModelRequest{Call: "turn-4", Agent: "naked", Messages: userMessage("hi"), Publish: true, After: 30})
	if resp.Message.Content != text {
		t.Errorf("content = %q, want %q", resp.Message.Content, text)
	}
	if resp.Attempt != 2 {
		t.Errorf("response attempt = %d, want 2", resp.Attempt)
	}
	if n := len(f.srv.Requests()); n != 2 {
		t.Fatalf("model got %d requests, want 2 (one per attempt)", n)
	}

	// Each attempt's text starts at 0 under its own attempt number, so a
	// subscriber replaces attempt 1's words with attempt 2's.
	ds := fl.drain(t)
	var first, second []longhaul.Delta
	for _, d := range ds {
		if d.Attempt == 1 {
			first = append(first, d)
		} else {
			second = append(second, d)
		}
	}
	if i := slices.IndexFunc(ds, func(d longhaul.Delta) bool { return d.Attempt != 1 }); i != len(first) {
		t.Errorf("attempt 1's deltas are not all before attempt 2's: %+v", ds)
	}
	checkContent(t, first, "turn-4", 1, 30, "alpha beta")
	checkContent(t, second, "turn-4", 2, 30, text)
	for i, want := range []int{len(first), len(second)} {
		if n, _, err := raw[i].Pending(); err != nil || n != want {
			t.Errorf("subject %s holds %d messages (err %v), want attempt %d's %d deltas", f.subj.Call("run-7", "turn-4", i+1), n, err, i+1, want)
		}
	}
}

func TestChatCompletionRetryWithoutPublishPublishesNothing(t *testing.T) {
	f := newFixture(t, nil, nil)
	f.srv.Enqueue(llmtest.Status(503, "overloaded"), llmtest.Text("fine now"))
	env := f.workflowEnv(t, "run-8")
	fl := f.follow(t, "run-8")
	env.ExecuteWorkflow(chatWorkflow, contract.ModelRequest{Call: "turn-1", Agent: "naked", Messages: userMessage("hi")})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow: %v", err)
	}
	if n := len(f.srv.Requests()); n != 2 {
		t.Errorf("model got %d requests, want 2", n)
	}
	if ds := fl.drain(t); len(ds) != 0 {
		t.Errorf("published %d deltas, want none: %+v", len(ds), ds)
	}
}

func TestChatCompletionRejectionIsNotRetried(t *testing.T) {
	f := newFixture(t, nil, nil)
	f.srv.SetDefault(llmtest.Status(401, "invalid api key"))
	env := f.workflowEnv(t, "run-9")
	env.ExecuteWorkflow(chatWorkflow, contract.ModelRequest{Call: "turn-1", Agent: "naked", Messages: userMessage("hi")})
	wantAppError(t, env.GetWorkflowError(), longhaul.ErrTypeModelRejected, true, "invalid api key")
	if n := len(f.srv.Requests()); n != 1 {
		t.Errorf("model got %d requests, want 1", n)
	}
}

func TestCallToolRetriesWithTheSameIdempotencyKey(t *testing.T) {
	tests := []struct {
		name      string
		probe     *probe
		wantCalls int
		wantErr   bool
	}{
		{name: "fails once, then succeeds", probe: &probe{err: errors.New("flaky"), failFirst: 1, content: "ok"}, wantCalls: 2},
		{name: "fails every time", probe: &probe{err: errors.New("down")}, wantCalls: contract.ToolAttempts, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.probe, nil)
			env := f.workflowEnv(t, "run-42")
			env.ExecuteWorkflow(toolWorkflow, contract.ToolRequest{
				Call: longhaul.ToolCall{ID: "call_9", Name: "probe", Arguments: `{"q":"x"}`}, Agent: "prober", Seq: 9,
			})
			if err := env.GetWorkflowError(); (err != nil) != tt.wantErr {
				t.Fatalf("workflow error = %v, want error %v", err, tt.wantErr)
			}
			calls := tt.probe.received()
			if len(calls) != tt.wantCalls {
				t.Fatalf("the tool ran %d times, want %d", len(calls), tt.wantCalls)
			}
			for i, c := range calls {
				if c.IdempotencyKey != "run-42/call-9" {
					t.Errorf("attempt %d: idempotency key = %q, want %q", i+1, c.IdempotencyKey, "run-42/call-9")
				}
			}
		})
	}
}

func TestCallToolRefusalIsNotRetried(t *testing.T) {
	f := newFixture(t, nil, nil)
	env := f.workflowEnv(t, "run-43")
	env.ExecuteWorkflow(toolWorkflow, contract.ToolRequest{
		Call: longhaul.ToolCall{ID: "call_9", Name: "probe", Arguments: `{"q":"x"}`}, Agent: "timekeeper", Seq: 9,
	})
	wantAppError(t, env.GetWorkflowError(), longhaul.ErrTypeToolRefused, true, "not allowed")
	if n := f.probe.count(); n != 0 {
		t.Errorf("the tool ran %d times, want never", n)
	}
}
