package activities_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/internal/testing/storetest"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// fakeRuns answers DescribeWorkflowExecution from a table: a run not in it
// is unknown to Temporal (its history is gone).
type fakeRuns struct {
	closed map[string]time.Time // closed runs and when they closed
	open   map[string]bool
	err    error // returned for every run when set
}

var _ activities.RunDescriber = (*fakeRuns)(nil)

func (f *fakeRuns) DescribeWorkflowExecution(_ context.Context, id, runID string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	if f.err != nil {
		return nil, f.err
	}
	if runID != "" {
		return nil, errors.New("the retention job must ask for the latest execution")
	}
	info := &workflowpb.WorkflowExecutionInfo{}
	switch closed, ok := f.closed[id]; {
	case f.open[id]:
		info.Status = enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	case ok:
		info.Status = enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
		info.CloseTime = timestamppb.New(closed)
	default:
		return nil, serviceerror.NewNotFound("workflow not found for ID: " + id)
	}
	return &workflowservice.DescribeWorkflowExecutionResponse{WorkflowExecutionInfo: info}, nil
}

// knownRuns is what Temporal knows at now of the runs the tests store
// for: run-open is open, run-closed-long-ago closed 30 hours ago,
// run-closed-lately 2 hours ago; any other run is gone.
func knownRuns(now time.Time) *fakeRuns {
	return &fakeRuns{
		open:   map[string]bool{"run-open": true},
		closed: map[string]time.Time{"run-closed-long-ago": now.Add(-30 * time.Hour), "run-closed-lately": now.Add(-2 * time.Hour)},
	}
}

// retentionJob returns a function that runs the DeleteExpiredBlobs
// activity over blobs with a retention, asking runs about the runs, each
// time in the same test environment.
func retentionJob(blobs store.Store, runs activities.RunDescriber) func(retention time.Duration) (contract.RetentionResult, error) {
	return retentionJobWith(blobs, runs, nil)
}

// retentionJobWith is retentionJob with the worker's webhooks (nil: none).
func retentionJobWith(blobs store.Store, runs activities.RunDescriber, hooks store.Webhooks) func(retention time.Duration) (contract.RetentionResult, error) {
	acts := activities.New(activities.LLMConfig{BaseURL: "http://127.0.0.1:1/v1"}, nil, nil, slog.New(slog.DiscardHandler))
	acts.Blobs = blobs
	acts.Webhooks = hooks
	acts.Runs = runs
	env := quietSuite().NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	return func(retention time.Duration) (contract.RetentionResult, error) {
		var res contract.RetentionResult
		v, err := env.ExecuteActivity(acts.DeleteExpiredBlobs, contract.RetentionRequest{Retention: retention})
		if err == nil {
			err = v.Get(&res)
		}
		return res, err
	}
}

// TestDeleteExpiredBlobs runs the retention activity on each store backend
// with a retention of a day: blobs two days old go when their run is gone
// from Temporal or closed over a day ago; they stay when the run is open or
// closed within the day; blobs an hour old always stay.
func TestDeleteExpiredBlobs(t *testing.T) {
	storetest.Each(t, func(t *testing.T, u string) {
		now := time.Now()
		putAt := func(at time.Time, run, name string) string {
			s, err := store.Open(t.Context(), u, store.WithClock(func() time.Time { return at }))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ref, err := s.Put(t.Context(), store.Blob{Run: run, Kind: "tool_output", Name: name, Data: []byte(run + name)})
			if err != nil {
				t.Fatal(err)
			}
			return ref
		}
		old, recent := now.Add(-48*time.Hour), now.Add(-time.Hour)
		gone := []string{putAt(old, "run-gone", "a"), putAt(old, "run-gone", "b"), putAt(old, "run-closed-long-ago", "a")}
		kept := []string{
			putAt(recent, "run-gone", "c"),
			putAt(old, "run-open", "a"),
			putAt(old, "run-closed-lately", "a"),
			putAt(recent, "run-new", "a"),
		}
		blobs, err := store.Open(t.Context(), u)
		if err != nil {
			t.Fatal(err)
		}
		defer blobs.Close()
		res, err := retentionJob(blobs, knownRuns(now))(24 * time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(contract.RetentionResult{Deleted: 3, Runs: 2, Kept: 2}, res); diff != "" {
			t.Errorf("result (-want +got):\n%s", diff)
		}
		for _, ref := range gone {
			if _, err := blobs.Get(t.Context(), ref); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("Get(%s) after the retention job: %v, want ErrNotFound", ref, err)
			}
		}
		for _, ref := range kept {
			if _, err := blobs.Get(t.Context(), ref); err != nil {
				t.Errorf("Get(%s) after the retention job: %v, want the blob kept", ref, err)
			}
		}
	})
}

// TestDeleteExpiredBlobsFailures: a Temporal that does not answer fails
// the job (to be retried) and deletes nothing; a worker without a Temporal
// client or a retention that is not positive fail for good.
func TestDeleteExpiredBlobsFailures(t *testing.T) {
	u := storetest.Backends[0].Fresh(t)
	s, err := store.Open(t.Context(), u, store.WithClock(func() time.Time { return time.Now().Add(-48 * time.Hour) }))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ref, err := s.Put(t.Context(), store.Blob{Run: "run-1", Kind: "tool_output", Name: "a", Data: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name         string
		runs         activities.RunDescriber
		retention    time.Duration
		nonRetryable bool
	}{
		{"temporal unavailable", &fakeRuns{err: serviceerror.NewUnavailable("connection refused")}, time.Hour, false},
		{"no temporal client", nil, time.Hour, true},
		{"zero retention", &fakeRuns{}, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := retentionJob(s, tc.runs)(tc.retention)
			var appErr *temporal.ApplicationError
			if err == nil {
				t.Fatal("the job succeeded")
			}
			if got := errors.As(err, &appErr) && appErr.NonRetryable(); got != tc.nonRetryable {
				t.Errorf("error %v: non-retryable %v, want %v", err, got, tc.nonRetryable)
			}
			if _, err := s.Get(t.Context(), ref); err != nil {
				t.Errorf("the blob is gone after a failed job: %v", err)
			}
		})
	}
}

// openAged opens the store at u with its clock stopped at then, so what
// it writes is that old, and closes it when the test ends.
func openAged(t *testing.T, u string, then time.Time) store.Store {
	t.Helper()
	s, err := store.Open(t.Context(), u, store.WithClock(func() time.Time { return then }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestRetentionDeletesTurns runs the retention activity on each store
// backend over stored chat turns: the turns (and messages) of a run gone
// from Temporal or closed over the retention ago go, with the archived
// events of the run and every chat left without a turn; the turns of an
// open run or one closed lately stay, and so does their chat.
func TestRetentionDeletesTurns(t *testing.T) {
	storetest.Each(t, func(t *testing.T, u string) {
		now := time.Now()
		old := now.Add(-48 * time.Hour)
		s := openAged(t, u, old)
		put := func(chat, run string) {
			t.Helper()
			err := s.PutTurn(t.Context(), store.Turn{
				User: "key/ann", Chat: chat, Run: run, Turn: 1, Agent: "chat", Status: "completed", Title: "Hi",
				StartedAt: old, FinishedAt: old.Add(time.Minute),
				Messages: []store.TurnMessage{{Seq: 0, Data: []byte(`{"role":"assistant","content":"Hello."}`)}},
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		put("chat-mixed", "run-gone")          // expired: its run is gone
		put("chat-mixed", "run-closed-lately") // kept: closed within the retention
		put("chat-expired", "run-closed-long-ago")
		put("chat-open", "run-open")
		archive, err := s.Put(t.Context(), store.Blob{Run: "run-gone", Kind: contract.ArchiveKind, Name: "1-40", Data: []byte(`[]`)})
		if err != nil {
			t.Fatal(err)
		}

		job := retentionJob(s, knownRuns(now))
		res, err := job(24 * time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(contract.RetentionResult{Deleted: 1, Turns: 2, Runs: 2, Kept: 2}, res); diff != "" {
			t.Errorf("result (-want +got):\n%s", diff)
		}

		runsOf := func(chat string) []string {
			t.Helper()
			turns, err := s.Turns(t.Context(), "key/ann", chat, store.TurnQuery{Messages: true})
			if err != nil {
				t.Fatal(err)
			}
			var runs []string
			for _, tn := range turns {
				if len(tn.Messages) != 1 {
					t.Errorf("turn of %s in %s has %d messages, want 1", tn.Run, chat, len(tn.Messages))
				}
				runs = append(runs, tn.Run)
			}
			return runs
		}
		if diff := cmp.Diff([]string{"run-closed-lately"}, runsOf("chat-mixed")); diff != "" {
			t.Errorf("turns of chat-mixed (-want +got):\n%s", diff)
		}
		if c, err := s.Conversation(t.Context(), "key/ann", "chat-mixed"); err != nil || c.Turns != 1 {
			t.Errorf("chat-mixed = %+v, %v; want it kept with 1 turn", c, err)
		}
		if runs := runsOf("chat-expired"); len(runs) != 0 {
			t.Errorf("turns of chat-expired = %v, want none", runs)
		}
		if _, err := s.Conversation(t.Context(), "key/ann", "chat-expired"); !errors.Is(err, store.ErrNoConversation) {
			t.Errorf("chat-expired after the job: %v, want ErrNoConversation", err)
		}
		if diff := cmp.Diff([]string{"run-open"}, runsOf("chat-open")); diff != "" {
			t.Errorf("turns of chat-open (-want +got):\n%s", diff)
		}
		if _, err := s.Get(t.Context(), archive); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("the archived events of run-gone: %v, want ErrNotFound", err)
		}
		// A second job finds nothing more to do.
		res, err = job(24 * time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(contract.RetentionResult{Kept: 2}, res); diff != "" {
			t.Errorf("second job (-want +got):\n%s", diff)
		}
	})
}

// TestRetentionDeletesRunWebhooksAndOldDeliveries: webhook data grew
// without end (a run's own webhook was never deleted, and retention
// touched no delivery row). The retention activity, on each store
// backend, deletes a run's own webhook once its run closed over the
// retention ago or is gone from Temporal, with its deliveries, and every
// delivery record older than the retention; a subscription, the webhook
// of a run open or closed lately, a recent run's webhook and recent
// deliveries stay.
func TestRetentionDeletesRunWebhooksAndOldDeliveries(t *testing.T) {
	storetest.Each(t, func(t *testing.T, u string) {
		now := time.Now()
		old, recent := now.Add(-48*time.Hour), now.Add(-time.Hour)
		at := func(when time.Time) store.Webhooks {
			s, err := store.Open(t.Context(), u, store.WithClock(func() time.Time { return when }))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s.(store.Webhooks)
		}
		oldWs, recentWs := at(old), at(recent)
		create := func(ws store.Webhooks, id, run string) {
			if _, err := ws.CreateWebhook(t.Context(), store.Webhook{ID: id, Owner: "alice", URL: "https://hooks.example.com/", Secret: "whsec_x", Run: run}, 0); err != nil {
				t.Fatal(err)
			}
		}
		deliver := func(ws store.Webhooks, id string) {
			if err := ws.AddDelivery(t.Context(), store.Delivery{Webhook: id, EventID: "evt_" + id, EventType: "run.completed", Attempt: 1, StatusCode: 503}); err != nil {
				t.Fatal(err)
			}
		}
		create(oldWs, "wh_sub", "")
		create(oldWs, "wh_closed_long_ago", "run-closed-long-ago")
		create(oldWs, "wh_gone", "run-gone")
		create(oldWs, "wh_open", "run-open")
		create(oldWs, "wh_closed_lately", "run-closed-lately")
		create(recentWs, "wh_new", "run-new")
		deliver(oldWs, "wh_sub")
		deliver(oldWs, "wh_open")
		deliver(oldWs, "wh_closed_long_ago")
		deliver(recentWs, "wh_sub")
		deliver(recentWs, "wh_new")

		ws := at(now)
		res, err := retentionJobWebhooks(ws.(store.Store), knownRuns(now))(24 * time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(contract.RetentionResult{Webhooks: 2, Deliveries: 2}, res); diff != "" {
			t.Errorf("result (-want +got):\n%s", diff)
		}
		for id, want := range map[string]bool{
			"wh_sub": true, "wh_open": true, "wh_closed_lately": true, "wh_new": true,
			"wh_closed_long_ago": false, "wh_gone": false,
		} {
			_, err := ws.GetWebhook(t.Context(), id)
			if got := err == nil; got != want {
				t.Errorf("webhook %s kept = %v (%v), want %v", id, got, err, want)
			}
		}
		for id, want := range map[string]int{"wh_sub": 1, "wh_open": 0, "wh_closed_long_ago": 0, "wh_new": 1} {
			ds, err := ws.ListDeliveries(t.Context(), id, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(ds) != want {
				t.Errorf("webhook %s keeps %d deliveries, want %d", id, len(ds), want)
			}
		}
	})
}

// retentionJobWebhooks is retentionJob on a worker that also keeps
// webhooks, in the same store.
func retentionJobWebhooks(s store.Store, runs activities.RunDescriber) func(retention time.Duration) (contract.RetentionResult, error) {
	return retentionJobWith(s, runs, s.(store.Webhooks))
}

// fakeSchedules keeps the schedules in kept: the schedule exists, or a
// run it started is open.
type fakeSchedules map[string]bool

var _ activities.ScheduleKeeper = fakeSchedules(nil)

func (f fakeSchedules) ScheduleKept(_ context.Context, id string) (bool, error) { return f[id], nil }

// TestRetentionKeepsScheduleImages: the images a schedule stored under its
// id stay, however old, while the schedule is kept (it exists, or a run of
// it is open: every fire reads them), and go once it is not; a schedule is
// never taken for a run that is gone.
func TestRetentionKeepsScheduleImages(t *testing.T) {
	storetest.Each(t, func(t *testing.T, u string) {
		now := time.Now()
		old := now.Add(-48 * time.Hour)
		s := openAged(t, u, old)
		put := func(sched string) string {
			ref, err := s.Put(t.Context(), store.Blob{Run: sched, Kind: "image", Name: "0.1", Data: []byte("data:image/png;base64," + sched)})
			if err != nil {
				t.Fatal(err)
			}
			return ref
		}
		live, deleted := put("sched-live"), put("sched-deleted")
		s.Close()
		blobs, err := store.Open(t.Context(), u)
		if err != nil {
			t.Fatal(err)
		}
		defer blobs.Close()
		acts := activities.New(activities.LLMConfig{BaseURL: "http://127.0.0.1:1/v1"}, nil, nil, slog.New(slog.DiscardHandler))
		acts.Blobs, acts.Runs, acts.Schedules = blobs, knownRuns(now), fakeSchedules{"sched-live": true}
		env := quietSuite().NewTestActivityEnvironment()
		env.RegisterActivity(acts)
		v, err := env.ExecuteActivity(acts.DeleteExpiredBlobs, contract.RetentionRequest{Retention: 24 * time.Hour})
		var res contract.RetentionResult
		if err == nil {
			err = v.Get(&res)
		}
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(contract.RetentionResult{Deleted: 1, Runs: 1, Kept: 1}, res); diff != "" {
			t.Errorf("result (-want +got):\n%s", diff)
		}
		if _, err := blobs.Get(t.Context(), live); err != nil {
			t.Errorf("the live schedule's image: %v, want it kept", err)
		}
		if _, err := blobs.Get(t.Context(), deleted); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("the deleted schedule's image: %v, want ErrNotFound", err)
		}
	})
}
