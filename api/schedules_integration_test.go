package api_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/identity"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/internal/wire"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/client"
)

// createSchedule creates a schedule and checks the 201 answer.
func createSchedule(t *testing.T, env *testenv.Env, body any, headers map[string]string) wire.Schedule {
	t.Helper()
	return decode[wire.Schedule](t, doWant(t, env.URL, "POST", "/v1/schedules", body, headers, http.StatusCreated))
}

// scheduleInfo is what Temporal itself says of schedule id: whether it is
// paused and how many runs it started.
func scheduleInfo(t *testing.T, ctx context.Context, env *testenv.Env, id string) (paused bool, actions int) {
	t.Helper()
	d, err := env.Client.ScheduleClient().GetHandle(ctx, id).Describe(ctx)
	if err != nil {
		t.Fatalf("describe schedule %s: %v", id, err)
	}
	return d.Schedule.State.Paused, d.Info.NumActions
}

// listAndCount checks that Temporal visibility lists owner's schedules
// (want) and no one else's, and counts them against the limit of two.
func listAndCount(t *testing.T, ctx context.Context, env *testenv.Env, want []string, owner, other map[string]string) {
	t.Helper()
	eventually(t, ctx, func() string {
		var got []string
		for _, s := range decode[wire.ScheduleList](t, do(t, env, "GET", "/v1/schedules", nil, owner)).Data {
			got = append(got, s.ID)
		}
		if len(got) != len(want) || !slices.Contains(got, want[0]) || !slices.Contains(got, want[1]) {
			return fmt.Sprintf("listed schedules %v, want %v", got, want)
		}
		return ""
	})
	if l := decode[wire.ScheduleList](t, do(t, env, "GET", "/v1/schedules", nil, other)); len(l.Data) != 0 {
		t.Errorf("another principal lists %+v", l.Data)
	}
	eventually(t, ctx, func() string {
		resp := do(t, env, "POST", "/v1/schedules", map[string]any{"agent": "naked", "input": "x", "every": "1h", "paused": true}, owner)
		if resp.StatusCode == http.StatusForbidden {
			return ""
		}
		if resp.StatusCode == http.StatusCreated {
			do(t, env, "DELETE", "/v1/schedules/"+decode[wire.Schedule](t, resp).ID, nil, owner)
		}
		return fmt.Sprintf("a third schedule = %d, want 403 quota_exceeded", resp.StatusCode)
	})
}

// TestSchedulesFireRuns runs schedules on the embedded Temporal's own
// scheduler (its worker service's per-namespace scheduler worker): a
// schedule with a one-second interval fires runs of the agent workflow
// that complete on the scripted model; each is an ordinary run of its
// owner's, read with its schedule_id and listed by GET
// /v1/runs?schedule_id=. Paused, it fires none: while a second schedule
// on the same interval fires three more runs (so the scheduler ran and
// three intervals passed), Temporal's count of the first's runs stays
// what it was at the pause, and the runs listed for it are exactly that
// many; a trigger of the paused schedule then starts one, so the count
// was live all along. Visibility lists the owner's schedules, no one
// else's, and counts them against the limit; a change, a resume and a
// delete reach Temporal's schedule.
func TestSchedulesFireRuns(t *testing.T) {
	env := testenv.Start(t, testenv.Options{API: api.Config{Limits: api.Limits{MinScheduleInterval: time.Second, Schedules: 2}}})
	env.Model.SetDefault(llmtest.Text("Good morning."))
	ctx := within(t, 3*time.Minute)
	ann, bob := user("ann"), user("bob")

	a := createSchedule(t, env, map[string]any{"agent": "naked", "input": "Brief me.", "every": "1s"}, ann)
	t.Cleanup(func() { do(t, env, "DELETE", "/v1/schedules/"+a.ID, nil, ann) })
	runsOf := url.Values{"schedule_id": {a.ID}}
	// Two of its runs finish and are listed as its own.
	var first wire.RunSummary
	eventually(t, ctx, func() string {
		done := 0
		for _, r := range listRuns(t, env, runsOf, ann) {
			if r.Status == contract.StatusCompleted && r.ScheduleID == a.ID {
				done, first = done+1, r
			}
		}
		if done < 2 {
			return fmt.Sprintf("%d of schedule %s's runs completed, want 2", done, a.ID)
		}
		return ""
	})
	run := getRun(t, env, first.ID, ann)
	if run.ScheduleID != a.ID || run.Agent != "naked" || run.Result != "Good morning." || run.Status != contract.StatusCompleted {
		t.Fatalf("a scheduled run: %+v", run)
	}
	if resp := do(t, env, "GET", "/v1/runs/"+first.ID, nil, bob); resp.StatusCode != http.StatusNotFound {
		t.Errorf("another principal's GET of a scheduled run = %d, want 404", resp.StatusCode)
	}
	if resp := do(t, env, "GET", "/v1/schedules/"+a.ID, nil, bob); resp.StatusCode != http.StatusNotFound {
		t.Errorf("another principal's GET of the schedule = %d, want 404", resp.StatusCode)
	}

	paused := decode[wire.Schedule](t, do(t, env, "POST", "/v1/schedules/"+a.ID+"/pause", nil, ann))
	isPaused, atPause := scheduleInfo(t, ctx, env, a.ID)
	if !paused.Paused || paused.NextRunAt != nil || !isPaused {
		t.Fatalf("after pause: API %+v, Temporal paused=%v", paused, isPaused)
	}
	// Three fires of another schedule, each a second apart, prove the
	// scheduler kept going while the first stayed paused.
	b := createSchedule(t, env, map[string]any{"agent": "naked", "input": "Tick.", "every": "1s"}, ann)
	t.Cleanup(func() { do(t, env, "DELETE", "/v1/schedules/"+b.ID, nil, ann) })
	_, bStart := scheduleInfo(t, ctx, env, b.ID)
	eventually(t, ctx, func() string {
		if _, n := scheduleInfo(t, ctx, env, b.ID); n < bStart+3 {
			return fmt.Sprintf("schedule %s started %d runs, want %d", b.ID, n, bStart+3)
		}
		return ""
	})
	if _, n := scheduleInfo(t, ctx, env, a.ID); n != atPause {
		t.Fatalf("the paused schedule started %d runs after its pause", n-atPause)
	}
	listAndCount(t, ctx, env, []string{a.ID, b.ID}, ann, bob)
	// Its runs are exactly as many as Temporal counts, and all finished,
	// so the trigger below is not skipped under the skip overlap policy.
	eventually(t, ctx, func() string {
		listed, done := listRuns(t, env, runsOf, ann), 0
		for _, r := range listed {
			if r.Status == contract.StatusCompleted {
				done++
			}
		}
		if len(listed) != atPause || done != atPause {
			return fmt.Sprintf("%d runs listed for the paused schedule (%d completed), Temporal counts %d", len(listed), done, atPause)
		}
		return ""
	})

	trig := do(t, env, "POST", "/v1/schedules/"+a.ID+"/trigger", nil, ann)
	if trig.StatusCode != http.StatusAccepted {
		t.Fatalf("trigger = %d", trig.StatusCode)
	}
	eventually(t, ctx, func() string {
		if _, n := scheduleInfo(t, ctx, env, a.ID); n != atPause+1 {
			return fmt.Sprintf("the paused schedule counts %d runs after a trigger, want %d", n, atPause+1)
		}
		return ""
	})
	changeAndDelete(t, ctx, env, a.ID, ann)
}

// changeAndDelete changes schedule id (paused) through the API, and reads
// the change back from Temporal's schedule: its input and spec change, it
// stays paused until resumed; deleted, it is gone.
func changeAndDelete(t *testing.T, ctx context.Context, env *testenv.Env, id string, owner map[string]string) {
	t.Helper()
	path := "/v1/schedules/" + id
	do(t, env, "PATCH", path, map[string]any{"every": "1h", "input": "Brief me again.", "metadata": map[string]string{"k": "v"}}, owner)
	got := decode[wire.Schedule](t, do(t, env, "GET", path, nil, owner))
	if got.Every != "1h0m0s" || got.Cron != "" || got.Input != "Brief me again." || got.Metadata["k"] != "v" || !got.Paused || got.Agent != "naked" {
		t.Errorf("after PATCH: %+v", got)
	}
	resumed := decode[wire.Schedule](t, do(t, env, "POST", path+"/resume", nil, owner))
	if paused, _ := scheduleInfo(t, ctx, env, id); paused || resumed.Paused || resumed.NextRunAt == nil {
		t.Errorf("after resume: API %+v, Temporal paused=%v", resumed, paused)
	}
	if resp := do(t, env, "DELETE", path, nil, owner); resp.StatusCode != http.StatusOK {
		t.Errorf("DELETE = %d", resp.StatusCode)
	}
	if resp := do(t, env, "GET", path, nil, owner); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET of a deleted schedule = %d, want 404", resp.StatusCode)
	}
}

// adminOnly is an agent only the admin role may run.
var adminOnly = fstest.MapFS{
	"adminonly.md": {Data: []byte("---\nagent: adminonly\ndescription: Admin work\nmode: chat\nallow: {roles: [admin]}\n---\nYou administer.\n")},
}

// scheduleNote is the note Temporal keeps with schedule id's state.
func scheduleNote(t *testing.T, ctx context.Context, env *testenv.Env, id string) string {
	t.Helper()
	d, err := env.Client.ScheduleClient().GetHandle(ctx, id).Describe(ctx)
	if err != nil {
		t.Fatalf("describe schedule %s: %v", id, err)
	}
	return d.Schedule.State.Note
}

// TestScheduleOfDemotedAdminOrRemovedKeyIsPaused is the attack of a
// schedule that keeps its creator's identity: an admin makes a schedule
// of an admin-only agent, and a second key one of its own; then the
// operator demotes the admin and removes the second key (the worker
// restarts with the keys of now). Each fire is re-resolved: neither
// schedule runs its agent again; each is paused with the reason, and its
// refused fire says it.
func TestScheduleOfDemotedAdminOrRemovedKeyIsPaused(t *testing.T) {
	keys, err := identity.ParseKeys([]string{"ops:sk-ops:role=admin", "temp:sk-temp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	env := testenv.Start(t, testenv.Options{Layers: []fs.FS{adminOnly}, API: api.Config{Keys: keys, Limits: api.Limits{MinScheduleInterval: time.Second}}})
	env.Model.SetDefault(llmtest.Text("Done."))
	ctx := within(t, 3*time.Minute)
	ops, temp := map[string]string{"Authorization": "Bearer sk-ops"}, map[string]string{"Authorization": "Bearer sk-temp"}
	a := createSchedule(t, env, map[string]any{"agent": "adminonly", "input": "Rotate the keys.", "every": "1s", "paused": true}, ops)
	b := createSchedule(t, env, map[string]any{"agent": "naked", "input": "Tick.", "every": "1s", "paused": true}, temp)

	now, err := identity.ParseKeys([]string{"ops:sk-ops"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	env.StopWorker()
	env.WorkerKeys = now
	env.StartWorker()
	// Resumed by their owners while the API still knew them as they were.
	doWant(t, env.URL, "POST", "/v1/schedules/"+a.ID+"/resume", nil, ops, http.StatusOK)
	doWant(t, env.URL, "POST", "/v1/schedules/"+b.ID+"/resume", nil, temp, http.StatusOK)
	for _, tc := range []struct {
		id, why string
		who     map[string]string
	}{{a.ID, "may no longer run the agent", ops}, {b.ID, "no longer configured", temp}} {
		eventually(t, ctx, func() string {
			if paused, _ := scheduleInfo(t, ctx, env, tc.id); !paused {
				return "schedule " + tc.id + " still fires"
			}
			if note := scheduleNote(t, ctx, env, tc.id); !strings.Contains(note, tc.why) {
				return fmt.Sprintf("schedule %s paused with note %q, want it to say %q", tc.id, note, tc.why)
			}
			return ""
		})
		for _, r := range listRuns(t, env, url.Values{"schedule_id": {tc.id}}, tc.who) {
			eventually(t, ctx, func() string {
				run := getRun(t, env, r.ID, tc.who)
				switch {
				case run.Status == contract.StatusCompleted:
					t.Fatalf("schedule %s's run %s ran its agent: %+v", tc.id, r.ID, run)
				case run.Status != contract.StatusFailed:
					return "run " + r.ID + " is " + run.Status
				case !strings.Contains(run.Error, "refused") || !strings.Contains(run.Error, tc.why):
					t.Errorf("refused run %s says %q", r.ID, run.Error)
				}
				return ""
			})
		}
	}
	if n := len(env.Model.Requests()); n != 0 {
		t.Errorf("the model was called %d times by refused fires", n)
	}
}

// TestScheduleTriggerEverySecondOverRunLimitIsRefused is the attack of a
// schedule that passes no gate: overlap "allow" and a trigger every
// second, over LONGHAUL_MAX_RUNS (1 here). The first trigger starts a run
// (which hangs); the next is refused with 429 as POST /v1/runs is; and
// the schedule's own fires, started by the engine, are refused at their
// start rather than run beside it.
func TestScheduleTriggerEverySecondOverRunLimitIsRefused(t *testing.T) {
	env := testenv.Start(t, testenv.Options{API: api.Config{Limits: api.Limits{Runs: 1, MinScheduleInterval: time.Second}}})
	env.Model.SetDefault(llmtest.Hang())
	ctx := within(t, 3*time.Minute)
	ann := user("ann")
	s := createSchedule(t, env, map[string]any{"agent": "naked", "input": "Go.", "every": "1s", "overlap": "allow", "paused": true}, ann)
	t.Cleanup(func() { do(t, env, "DELETE", "/v1/schedules/"+s.ID, nil, ann) })
	doWant(t, env.URL, "POST", "/v1/schedules/"+s.ID+"/trigger", nil, ann, http.StatusAccepted)
	runsOf := url.Values{"schedule_id": {s.ID}, "status": {contract.StatusRunning}}
	eventually(t, ctx, func() string {
		if n := len(listRuns(t, env, runsOf, ann)); n != 1 {
			return fmt.Sprintf("%d of the schedule's runs running, want 1", n)
		}
		return ""
	})
	for range 3 {
		resp := do(t, env, "POST", "/v1/schedules/"+s.ID+"/trigger", nil, ann)
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("a trigger over the run limit = %d, want 429 with Retry-After", resp.StatusCode)
		}
	}
	doWant(t, env.URL, "POST", "/v1/runs", map[string]any{"agent": "naked", "input": "x"}, ann, http.StatusTooManyRequests)
	// Its fires, every second, are refused at their start.
	doWant(t, env.URL, "POST", "/v1/schedules/"+s.ID+"/resume", nil, ann, http.StatusOK)
	failed := url.Values{"schedule_id": {s.ID}, "status": {contract.StatusFailed}}
	eventually(t, ctx, func() string {
		got := listRuns(t, env, failed, ann)
		if len(got) < 1 {
			return "none of the schedule's fires refused yet"
		}
		if run := getRun(t, env, got[0].ID, ann); !strings.Contains(run.Error, "too many runs") {
			t.Fatalf("a fire over the limit failed with %q", run.Error)
		}
		return ""
	})
	// Paused again (a fire every second keeps a loaded machine's Temporal
	// busy: the pause may take a second try).
	eventually(t, ctx, func() string {
		if resp := do(t, env, "POST", "/v1/schedules/"+s.ID+"/pause", nil, ann); resp.StatusCode != http.StatusOK {
			return fmt.Sprintf("pause = %d", resp.StatusCode)
		}
		return ""
	})
	// Only the first run got past the gate to the model (a refused fire
	// runs for a moment, its gate, and calls none).
	if n := len(env.Model.Requests()); n != 1 {
		t.Errorf("%d of the schedule's runs reached the model, over the limit of 1", n)
	}
}

// TestScheduleImageClaimedForEveryFire: a schedule's big image goes to the
// blob store under the schedule's id when it is created, as a run's goes
// under the run's, so Temporal's schedule carries a reference; each of its
// fires reads the image back and sends it to the model.
func TestScheduleImageClaimedForEveryFire(t *testing.T) {
	env := testenv.Start(t, testenv.Options{API: api.Config{Limits: api.Limits{MinScheduleInterval: time.Second}}})
	env.Model.SetDefault(llmtest.Text("A lighthouse."))
	ctx := within(t, 3*time.Minute)
	ann := user("ann")
	img := "data:image/png;base64," + strings.Repeat("iVBORw0KGgo", 3000)
	s := createSchedule(t, env, map[string]any{"agent": "naked", "every": "1s", "messages": []any{map[string]any{
		"role": "user", "content": []any{
			map[string]any{"type": "text", "text": "What is in the picture?"},
			map[string]any{"type": "image_url", "image_url": map[string]any{"url": img}},
		},
	}}}, ann)
	t.Cleanup(func() { do(t, env, "DELETE", "/v1/schedules/"+s.ID, nil, ann) })

	stored, err := env.Blobs.List(ctx, s.ID)
	if err != nil || len(stored) != 1 || stored[0].Kind != "image" {
		t.Fatalf("blobs under the schedule: %+v, %v; want its image", stored, err)
	}
	d, err := env.Client.ScheduleClient().GetHandle(ctx, s.ID).Describe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := d.Schedule.Action.(*client.ScheduleWorkflowAction)
	if p, ok := a.Args[0].(*commonpb.Payload); !ok || len(p.GetData()) >= len(img) || !bytes.Contains(p.GetData(), []byte(stored[0].Ref)) {
		t.Fatalf("the schedule's input does not carry the image's reference %s", stored[0].Ref)
	}
	// Two fires, each a run that sends the model the image.
	eventually(t, ctx, func() string {
		done := 0
		for _, r := range listRuns(t, env, url.Values{"schedule_id": {s.ID}}, ann) {
			if r.Status == contract.StatusCompleted {
				done++
			}
		}
		sent := 0
		for _, r := range env.Model.Requests() {
			if bytes.Contains(r.Body, []byte(img)) {
				sent++
			}
		}
		if done < 2 || sent < 2 {
			return fmt.Sprintf("%d of the schedule's runs completed and %d model calls had its image, want 2 of each", done, sent)
		}
		return ""
	})
}
