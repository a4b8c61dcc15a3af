package activities_test

// The test activity environment runs every activity with a 10 minute
// start-to-close timeout and no way to cancel it from outside, but its
// activity context derives from worker.Options.BackgroundActivityContext. A
// background context cancelled with a CanceledError cause is what the worker
// does when the server reports the activity cancelled; one with a short
// deadline stands in for a start-to-close timeout. ExecuteActivity returns
// only once the activity function has, so a prompt return proves the
// activity itself stopped.

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
)

// promptly bounds how long a cancelled activity may take to return; the
// calls under test would otherwise never return.
const promptly = 10 * time.Second

func TestActivitiesStopWhenCancelledOrTimedOut(t *testing.T) {
	// model scripts reply; the call is under way once the model got the
	// request and, when streaming, once the text before the stall was
	// published. A cancelled call returns the text it had.
	model := func(reply llmtest.Reply, before string) setupFunc {
		return func(t *testing.T, f *fixture, fl *follower) (any, any, func(), *string) {
			f.srv.Enqueue(reply)
			req := contract.ModelRequest{Call: "turn-1", Agent: "assistant", Messages: userMessage("hi"), Publish: true}
			return f.acts.ChatCompletion, req, func() {
				ctx, stop := context.WithTimeout(context.Background(), promptly)
				defer stop()
				if err := f.srv.WaitRequests(ctx, 1); err != nil {
					t.Errorf("the call did not start: %v", err)
				}
				if before != "" {
					fl.waitText(t, before)
				}
			}, &before
		}
	}
	blockedTool := func(t *testing.T, f *fixture, fl *follower) (any, any, func(), *string) {
		f.probe.progress = []string{"started"}
		f.probe.block = make(chan struct{})
		req := contract.ToolRequest{Call: longhaul.ToolCall{ID: "c1", Name: "probe", Arguments: `{"q":"x"}`}, Agent: "prober", Seq: 9}
		return f.acts.CallTool, req, func() {
			// The tool's progress is published at once.
			fl.waitFor(t, "tool_status delta", func(ds []longhaul.Delta) bool {
				return slices.ContainsFunc(ds, func(d longhaul.Delta) bool { return d.Kind == longhaul.DeltaToolStatus })
			})
		}, nil
	}

	calls := []struct {
		name  string
		setup setupFunc
	}{
		{name: "model never answers", setup: model(llmtest.Hang(), "")},
		{name: "model stalls mid-stream", setup: model(llmtest.Text("one two three four").With(llmtest.StallAfter(2)), "one two")},
		{name: "tool blocks", setup: blockedTool},
	}
	for _, c := range calls {
		t.Run(c.name+"/cancelled", func(t *testing.T) {
			f := newFixture(t, nil, nil)
			fl := f.followTestEnv(t)
			fn, req, running, partial := c.setup(t, f, fl)
			bg, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			err := runUntil(t, f, bg, fn, req, func() {
				running()
				cancel(temporal.NewCanceledError())
			})
			var canceled *temporal.CanceledError
			if !errors.As(err, &canceled) {
				t.Fatalf("err = %v (%T), want a *temporal.CanceledError", err, err)
			}
			if partial == nil {
				return
			}
			if !canceled.HasDetails() {
				t.Fatal("the cancellation carries no details, want the partial response")
			}
			var got contract.ModelResponse
			if err := canceled.Details(&got); err != nil {
				t.Fatalf("decode the cancellation's details: %v", err)
			}
			diff(t, "partial response", contract.ModelResponse{
				Message: longhaul.Message{Role: longhaul.RoleAssistant, Content: *partial},
				Model:   "llmtest",
				Attempt: 1,
			}, got)
		})
		t.Run(c.name+"/timed out", func(t *testing.T) {
			f := newFixture(t, nil, nil)
			fl := f.followTestEnv(t)
			fn, req, _, _ := c.setup(t, f, fl)
			bg, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			err := runUntil(t, f, bg, fn, req, func() {})
			var timeout *temporal.TimeoutError
			if !errors.As(err, &timeout) {
				t.Errorf("err = %v (%T), want a *temporal.TimeoutError", err, err)
			}
		})
	}
}

// setupFunc scripts a call that will not finish on its own: it returns the
// activity and its request, a function that returns once the call is under
// way, and for a model call the text the call has when it is stopped.
type setupFunc func(t *testing.T, f *fixture, fl *follower) (fn any, req any, running func(), partial *string)

// followTestEnv follows the run every test activity environment runs its
// activities in.
func (f *fixture) followTestEnv(t *testing.T) *follower {
	t.Helper()
	_, fl := f.followedEnv(t)
	return fl
}

// runUntil runs fn(req) in a test activity environment whose activity
// contexts derive from bg, calls during once it is under way, and returns the
// activity's error, failing the test if the activity does not return
// promptly.
func runUntil(t *testing.T, f *fixture, bg context.Context, fn, req any, during func()) error {
	t.Helper()
	env := quietSuite().NewTestActivityEnvironment()
	env.SetWorkerOptions(worker.Options{BackgroundActivityContext: bg})
	env.RegisterActivity(f.acts)
	done := make(chan error, 1)
	go func() {
		_, err := env.ExecuteActivity(fn, req)
		done <- err
	}()
	during()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the activity succeeded, want it stopped")
		}
		return err
	case <-time.After(promptly):
		t.Fatalf("the activity did not return within %v", promptly)
		return nil
	}
}
