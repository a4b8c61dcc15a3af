package activities_test

// The test activity environment always runs attempt 1 (newTestActivityTask in
// go.temporal.io/sdk/internal hard-codes Attempt: 1 and offers no option to
// change it), so behaviour that depends on the attempt is tested in the test
// workflow environment, which retries activities by their retry policy and
// numbers the attempts.

import (
	"errors"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/internal/llmtest"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

var retryOptions = workflow.ActivityOptions{
	StartToCloseTimeout: time.Minute,
	RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 3},
}

// chatWorkflow runs one ChatCompletion with retries.
func chatWorkflow(ctx workflow.Context, req activities.ModelRequest) (activities.ModelResponse, error) {
	var a *activities.Activities
	var resp activities.ModelResponse
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, retryOptions), a.ChatCompletion, req).Get(ctx, &resp)
	return resp, err
}

// toolWorkflow runs one CallTool with retries.
func toolWorkflow(ctx workflow.Context, req activities.ToolRequest) (activities.ToolResponse, error) {
	var a *activities.Activities
	var resp activities.ToolResponse
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, retryOptions), a.CallTool, req).Get(ctx, &resp)
	return resp, err
}

func (f *fixture) workflowEnv(t *testing.T, workflowID string) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	env := quietSuite().NewTestWorkflowEnvironment()
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: workflowID})
	env.RegisterWorkflow(chatWorkflow)
	env.RegisterWorkflow(toolWorkflow)
	env.RegisterActivity(f.acts)
	return env
}

// byPublisher groups batches by publisher, publishers in order of their
// first batch.
func byPublisher(batches []longhaul.EventBatch) (order []string, groups map[string][]longhaul.EventBatch) {
	groups = map[string][]longhaul.EventBatch{}
	for _, b := range batches {
		if _, ok := groups[b.Publisher]; !ok {
			order = append(order, b.Publisher)
		}
		groups[b.Publisher] = append(groups[b.Publisher], b)
	}
	return order, groups
}

func TestChatCompletionRetryResetsContent(t *testing.T) {
	const text = "alpha beta gamma delta epsilon"
	f := newFixture(t, nil, nil)
	f.srv.Enqueue(
		llmtest.Text(text).With(llmtest.CutAfter(2)),
		llmtest.Text(text),
	)
	env := f.workflowEnv(t, "run-7")
	env.ExecuteWorkflow(chatWorkflow, activities.ModelRequest{Call: "turn-4", Agent: "naked", Messages: userMessage("hi"), Publish: true})
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow: %v", err)
	}
	var resp activities.ModelResponse
	if err := env.GetWorkflowResult(&resp); err != nil {
		t.Fatalf("decode result: %v", err)
	}
	if resp.Message.Content != text {
		t.Errorf("content = %q, want %q", resp.Message.Content, text)
	}
	if n := len(f.srv.Requests()); n != 2 {
		t.Fatalf("model got %d requests, want 2 (one per attempt)", n)
	}
	for _, s := range f.rec.sent() {
		if s.WorkflowID != "run-7" || s.Name != longhaul.PublishSignal {
			t.Errorf("signal %q to workflow %q, want %q to %q", s.Name, s.WorkflowID, longhaul.PublishSignal, "run-7")
		}
	}

	batches := f.rec.batches()
	checkSeqs(t, batches)
	pubs, groups := byPublisher(batches)
	if len(pubs) != 2 {
		t.Fatalf("got batches from publishers %q, want one per attempt", pubs)
	}
	first, second := eventsOf(groups[pubs[0]]), eventsOf(groups[pubs[1]])

	for _, e := range first {
		if e.Type == longhaul.EventContentReset {
			t.Error("attempt 1 published a content_reset")
		}
	}
	if got := contentText(t, first, "turn-4"); got != "alpha beta" {
		t.Errorf("attempt 1 published %q, want the text before the cut %q", got, "alpha beta")
	}

	if len(second) == 0 || second[0].Type != longhaul.EventContentReset {
		t.Fatalf("attempt 2 events = %v, want a content_reset first", second)
	}
	var reset longhaul.ContentResetData
	if err := second[0].Decode(&reset); err != nil {
		t.Fatalf("decode content_reset: %v", err)
	}
	if reset.Call != "turn-4" || reset.Attempt != 2 {
		t.Errorf("content_reset = %+v, want call %q, attempt 2", reset, "turn-4")
	}
	if got := contentText(t, second[1:], "turn-4"); got != text {
		t.Errorf("attempt 2 published %q after the reset, want %q", got, text)
	}
}

func TestChatCompletionRetryWithoutPublishSendsNothing(t *testing.T) {
	f := newFixture(t, nil, nil)
	f.srv.Enqueue(llmtest.Status(503, "overloaded"), llmtest.Text("fine now"))
	env := f.workflowEnv(t, "run-8")
	env.ExecuteWorkflow(chatWorkflow, activities.ModelRequest{Call: "turn-1", Agent: "naked", Messages: userMessage("hi")})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow: %v", err)
	}
	if n := len(f.srv.Requests()); n != 2 {
		t.Errorf("model got %d requests, want 2", n)
	}
	if n := len(f.rec.sent()); n != 0 {
		t.Errorf("sent %d signals, want none", n)
	}
}

func TestChatCompletionRejectionIsNotRetried(t *testing.T) {
	f := newFixture(t, nil, nil)
	f.srv.SetDefault(llmtest.Status(401, "invalid api key"))
	env := f.workflowEnv(t, "run-9")
	env.ExecuteWorkflow(chatWorkflow, activities.ModelRequest{Call: "turn-1", Agent: "naked", Messages: userMessage("hi")})
	wantAppError(t, env.GetWorkflowError(), activities.ErrTypeModelRejected, true, "invalid api key")
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
		{name: "fails every time", probe: &probe{err: errors.New("down")}, wantCalls: 3, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.probe, nil)
			env := f.workflowEnv(t, "run-42")
			env.ExecuteWorkflow(toolWorkflow, activities.ToolRequest{
				Call: longhaul.ToolCall{ID: "call_9", Name: "probe", Arguments: `{"q":"x"}`}, Scope: []string{"probe"},
			})
			if err := env.GetWorkflowError(); (err != nil) != tt.wantErr {
				t.Fatalf("workflow error = %v, want error %v", err, tt.wantErr)
			}
			calls := tt.probe.received()
			if len(calls) != tt.wantCalls {
				t.Fatalf("the tool ran %d times, want %d", len(calls), tt.wantCalls)
			}
			for i, c := range calls {
				if c.IdempotencyKey != "run-42/call_9" {
					t.Errorf("attempt %d: idempotency key = %q, want %q", i+1, c.IdempotencyKey, "run-42/call_9")
				}
			}
		})
	}
}

func TestCallToolRefusalIsNotRetried(t *testing.T) {
	f := newFixture(t, nil, nil)
	env := f.workflowEnv(t, "run-43")
	env.ExecuteWorkflow(toolWorkflow, activities.ToolRequest{
		Call: longhaul.ToolCall{ID: "call_9", Name: "probe", Arguments: `{"q":"x"}`}, Scope: []string{"current_time"},
	})
	wantAppError(t, env.GetWorkflowError(), activities.ErrTypeToolRefused, true, "not allowed")
	if n := f.probe.count(); n != 0 {
		t.Errorf("the tool ran %d times, want never", n)
	}
}
