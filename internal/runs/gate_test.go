package runs_test

import (
	"context"
	"errors"
	"testing"

	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/longhaul-dev/longhaul/internal/testing/runsfake"
)

// refusal is err as the gate's refusal, or fails the test.
func refusal(t *testing.T, err error, kind error) *runs.Refusal {
	t.Helper()
	var r *runs.Refusal
	if !errors.As(err, &r) || !errors.Is(err, kind) {
		t.Fatalf("%v, want a refusal of kind %v", err, kind)
	}
	return r
}

// TestGateStreams: a principal past its streams is refused with a
// Retry-After, another principal is not, and a released stream (released
// twice) frees one place.
func TestGateStreams(t *testing.T) {
	g := runs.NewGate(runsfake.New(), runs.GateConfig{Limits: runs.Limits{Streams: 1}, Admission: runs.Admission{}})
	release, err := g.Stream("alice")
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Stream("alice")
	if r := refusal(t, err, runs.ErrTooMany); r.RetryAfter != runs.RetryStreams {
		t.Errorf("Retry-After %d, want %d", r.RetryAfter, runs.RetryStreams)
	}
	other, err := g.Stream("bob")
	if err != nil {
		t.Fatalf("bob's first stream: %v", err)
	}
	other()
	release()
	release()
	again, err := g.Stream("alice")
	if err != nil {
		t.Fatalf("after the release: %v", err)
	}
	again()
}

// TestGateRuns: a principal with as many runs running as the limit is
// refused a new one; a closed run does not count, nor a name that no
// visibility query can match exactly, which is refused as internal.
func TestGateRuns(t *testing.T) {
	fake := runsfake.New()
	g := runs.NewGate(fake, runs.GateConfig{Limits: runs.Limits{Runs: 1}, Admission: runs.Admission{}})
	ctx := context.Background()
	if err := g.CheckRuns(ctx, "alice"); err != nil {
		t.Fatalf("no run yet: %v", err)
	}
	r := fake.Add("run-1", "alice", contract.AgentInput{})
	if rf := refusal(t, g.CheckRuns(ctx, "alice"), runs.ErrTooMany); rf.RetryAfter != runs.RetryRuns {
		t.Errorf("Retry-After %d, want %d", rf.RetryAfter, runs.RetryRuns)
	}
	r.Finish(contract.AgentResult{Content: "done"})
	if err := g.CheckRuns(ctx, "alice"); err != nil {
		t.Fatalf("its run ended: %v", err)
	}
	refusal(t, g.CheckRuns(ctx, "x'"), runs.ErrInternal)
}

// TestGateAdmitLeft: a request that ends while it waits in the admission
// queue is refused as too many (nobody reads it), not with ctx's error.
func TestGateAdmitLeft(t *testing.T) {
	g := runs.NewGate(runsfake.New(), runs.GateConfig{Limits: runs.Limits{}, Admission: runs.Admission{Concurrency: 1, Queue: 1}})
	hold, err := g.Admit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer hold()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = g.Admit(ctx)
	if r := refusal(t, err, runs.ErrTooMany); r.RetryAfter != runs.RetryAdmission {
		t.Errorf("Retry-After %d, want %d", r.RetryAfter, runs.RetryAdmission)
	}
}

// TestCheckPayload: a value over MaxPayload encoded is refused as too
// large.
func TestCheckPayload(t *testing.T) {
	if err := runs.CheckPayload("the input", "small"); err != nil {
		t.Fatal(err)
	}
	big := make([]byte, runs.MaxPayload)
	refusal(t, runs.CheckPayload("the input", big), runs.ErrTooLarge)
}
