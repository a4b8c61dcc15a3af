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
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/internal/llmtest"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
)

// promptly bounds how long a cancelled activity may take to return; the
// calls under test would otherwise never return.
const promptly = 10 * time.Second

func TestActivitiesStopWhenCancelledOrTimedOut(t *testing.T) {
	// model scripts reply; the call is under way once the model got the
	// request and, when streaming, once the first text was published.
	model := func(reply llmtest.Reply, streaming bool) func(*fixture) (any, any, func(context.Context) error) {
		return func(f *fixture) (any, any, func(context.Context) error) {
			f.srv.Enqueue(reply)
			req := activities.ModelRequest{Call: "turn-1", Agent: "assistant", Messages: userMessage("hi"), Publish: true}
			return f.acts.ChatCompletion, req, func(ctx context.Context) error {
				if err := f.srv.WaitRequests(ctx, 1); err != nil || !streaming {
					return err
				}
				select {
				case <-f.rec.calls:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			}
		}
	}
	blockedTool := func(f *fixture) (any, any, func(context.Context) error) {
		started := make(chan struct{})
		f.probe.progress = []string{"started"}
		f.probe.block = make(chan struct{})
		go func() {
			// The tool's first progress event is published at once.
			<-f.rec.calls
			close(started)
		}()
		req := activities.ToolRequest{Call: longhaul.ToolCall{ID: "c1", Name: "probe", Arguments: `{"q":"x"}`}, Scope: []string{"probe"}}
		return f.acts.CallTool, req, func(ctx context.Context) error {
			select {
			case <-started:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}

	calls := []struct {
		name  string
		setup func(*fixture) (fn any, req any, running func(context.Context) error)
	}{
		{name: "model never answers", setup: model(llmtest.Hang(), false)},
		{name: "model stalls mid-stream", setup: model(llmtest.Text("one two three four").With(llmtest.StallAfter(2)), true)},
		{name: "tool blocks", setup: blockedTool},
	}
	for _, c := range calls {
		t.Run(c.name+"/cancelled", func(t *testing.T) {
			f := newFixture(t, nil, nil)
			fn, req, running := c.setup(f)
			bg, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			err := runUntil(t, f, bg, fn, req, func() {
				ctx, stop := context.WithTimeout(context.Background(), promptly)
				defer stop()
				if err := running(ctx); err != nil {
					t.Errorf("the call did not start: %v", err)
				}
				cancel(temporal.NewCanceledError())
			})
			var canceled *temporal.CanceledError
			if !errors.As(err, &canceled) {
				t.Errorf("err = %v (%T), want a *temporal.CanceledError", err, err)
			}
		})
		t.Run(c.name+"/timed out", func(t *testing.T) {
			f := newFixture(t, nil, nil)
			fn, req, _ := c.setup(f)
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
