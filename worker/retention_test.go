package worker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/internal/testing/storetest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	lhworker "github.com/longhaul-dev/longhaul/worker"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdkworker "go.temporal.io/sdk/worker"
)

// TestRetentionSchedule runs the retention job as a worker starts it, on
// the real embedded server: the namespace's retention is read, the
// schedule is created and starts a job at once, the job deletes the
// two-day-old blobs and chat turn of a run Temporal does not know and
// keeps those of an open run and of a run that has just closed.
// Scheduling again is a no-op, and a new retention updates the schedule.
func TestRetentionSchedule(t *testing.T) {
	env := testenv.Start(t, testenv.Options{NoWorker: true})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	retention, err := lhworker.NamespaceRetention(ctx, env.Client, "default")
	if err != nil {
		t.Fatal(err)
	}
	if retention != 24*time.Hour {
		t.Errorf("the embedded namespace's retention is %v, want 24h", retention)
	}

	// Two runs that exist: one open (nobody polls its task queue) and one
	// closed a moment ago.
	start := func(id string) client.WorkflowRun {
		run, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: "nobody-polls"}, "Idle")
		if err != nil {
			t.Fatal(err)
		}
		return run
	}
	start("run-open")
	closed := start("run-closed")
	if err := env.Client.TerminateWorkflow(ctx, closed.GetID(), closed.GetRunID(), "closed for the test"); err != nil {
		t.Fatal(err)
	}

	u := storetest.Backends[0].Fresh(t)
	old, err := store.Open(ctx, u, store.WithClock(func() time.Time { return time.Now().Add(-48 * time.Hour) }))
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	put := func(run, name string) string {
		ref, err := old.Put(ctx, store.Blob{Run: run, Kind: "tool_output", Name: name, Data: []byte(name)})
		if err != nil {
			t.Fatal(err)
		}
		return ref
	}
	gone := []string{put("run-gone", "a"), put("run-gone", "b")}
	kept := []string{put("run-open", "a"), put("run-closed", "a")}
	// Chat turns: the gone run's, alone in its chat, and the open run's.
	for chat, run := range map[string]string{"chat-gone": "run-gone", "chat-open": "run-open"} {
		at := time.Now().Add(-48 * time.Hour)
		if err := old.PutTurn(ctx, store.Turn{User: "ann", Chat: chat, Run: run, Turn: 1, StartedAt: at, FinishedAt: at}); err != nil {
			t.Fatal(err)
		}
	}

	blobs, err := store.Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer blobs.Close()
	acts := env.Activities()
	acts.Blobs = blobs
	w := sdkworker.New(env.Client, testenv.TaskQueue, lhworker.Options(0))
	lhworker.Register(w, acts)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	if err := lhworker.ScheduleRetention(ctx, env.Client, testenv.TaskQueue, retention); err != nil {
		t.Fatalf("ScheduleRetention: %v", err)
	}
	h := env.Client.ScheduleClient().GetHandle(ctx, contract.RetentionScheduleID(testenv.TaskQueue))
	var action client.ScheduleActionResult
	for {
		d, err := h.Describe(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Info.RecentActions) > 0 {
			action = d.Info.RecentActions[0]
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the schedule started no job")
		case <-time.After(50 * time.Millisecond):
		}
	}
	var res contract.RetentionResult
	if err := env.Client.GetWorkflow(ctx, action.StartWorkflowResult.WorkflowID, action.StartWorkflowResult.FirstExecutionRunID).Get(ctx, &res); err != nil {
		t.Fatalf("the retention job: %v", err)
	}
	if diff := cmp.Diff(contract.RetentionResult{Deleted: 2, Turns: 1, Runs: 1, Kept: 2}, res); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	if _, err := blobs.Conversation(ctx, "ann", "chat-gone"); !errors.Is(err, store.ErrNoConversation) {
		t.Errorf("the gone run's chat: %v, want ErrNoConversation", err)
	}
	if c, err := blobs.Conversation(ctx, "ann", "chat-open"); err != nil || c.Turns != 1 {
		t.Errorf("the open run's chat = %+v, %v; want it kept with its turn", c, err)
	}
	for _, ref := range gone {
		if _, err := blobs.Get(ctx, ref); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Get(%s): %v, want ErrNotFound", ref, err)
		}
	}
	for _, ref := range kept {
		if _, err := blobs.Get(ctx, ref); err != nil {
			t.Errorf("Get(%s): %v, want the blob kept", ref, err)
		}
	}

	// Another worker starting with the same setting changes nothing; one
	// with another retention updates the schedule.
	if err := lhworker.ScheduleRetention(ctx, env.Client, testenv.TaskQueue, retention); err != nil {
		t.Fatalf("ScheduleRetention again: %v", err)
	}
	if got := scheduledRetention(ctx, t, h); got != retention {
		t.Errorf("scheduled retention %v, want %v", got, retention)
	}
	if err := lhworker.ScheduleRetention(ctx, env.Client, testenv.TaskQueue, 72*time.Hour); err != nil {
		t.Fatalf("ScheduleRetention with 72h: %v", err)
	}
	if got := scheduledRetention(ctx, t, h); got != 72*time.Hour {
		t.Errorf("scheduled retention %v after the update, want 72h", got)
	}
}

// scheduledRetention reads the retention the schedule starts its jobs with.
func scheduledRetention(ctx context.Context, t *testing.T, h client.ScheduleHandle) time.Duration {
	t.Helper()
	d, err := h.Describe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a, ok := d.Schedule.Action.(*client.ScheduleWorkflowAction)
	if !ok || len(a.Args) != 1 {
		t.Fatalf("schedule action %+v", d.Schedule.Action)
	}
	var in contract.RetentionInput
	if err := converter.GetDefaultDataConverter().FromPayload(a.Args[0].(*commonpb.Payload), &in); err != nil {
		t.Fatal(err)
	}
	return in.Retention
}
