package schedulesapi_test

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul/api/runsapi"
	"github.com/longhaul-dev/longhaul/api/schedulesapi"
	"github.com/longhaul-dev/longhaul/api/sse"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/longhaul-dev/longhaul/internal/testing/runsfake"
	"github.com/longhaul-dev/longhaul/internal/testing/webtest"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// The schedules API served from runsfake: no Temporal. What these tests
// check is the HTTP side — statuses, error envelopes, owners, limits — and
// that a fire is a run of the runs API listed by its schedule; the
// end-to-end test in package api fires schedules on the embedded Temporal.

// limits are the tests' limits: three schedules a principal, a minute
// between fires.
var limits = schedulesapi.Limits{Schedules: 3, MinInterval: time.Minute, CatchupWindow: time.Hour}

// serve is the schedules API's routes and the runs API's over fakes, as
// the server registers them.
func serve(t *testing.T, sched *runsfake.Schedules) *fiber.App {
	t.Helper()
	rw, gate := webtest.RunsOver(sched.Runs)
	r := &runsapi.Handlers{Runs: rw, Gate: gate, Streams: &sse.Streams{}}
	h := &schedulesapi.Handlers{Schedules: sched, Gate: gate, Limits: limits}
	return webtest.App(t, func(_, v1 fiber.Router) {
		v1.Get("/runs", r.ListRuns)
		v1.Get("/runs/:id", r.GetRun)
		v1.Post("/runs", r.CreateRun)
		v1.Post("/schedules", h.Require, h.Create)
		v1.Get("/schedules", h.Require, h.List)
		v1.Get("/schedules/:id", h.Require, h.Get)
		v1.Patch("/schedules/:id", h.Require, h.Update)
		v1.Delete("/schedules/:id", h.Require, h.Delete)
		v1.Post("/schedules/:id/pause", h.Require, h.Pause)
		v1.Post("/schedules/:id/resume", h.Require, h.Resume)
		v1.Post("/schedules/:id/trigger", h.Require, h.Trigger)
	})
}

func newFakes() *runsfake.Schedules { return runsfake.NewSchedules(runsfake.New()) }

// create creates a schedule of body as headers' principal and returns it.
func create(t *testing.T, a *fiber.App, body string, headers map[string]string) wire.Schedule {
	t.Helper()
	resp := webtest.Do(t, a, "POST", "/v1/schedules", body, headers)
	if resp.StatusCode != http.StatusCreated {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("create %s = %d %s", body, resp.StatusCode, b)
	}
	return webtest.Decode[wire.Schedule](t, resp)
}

const hourly = `{"agent":"assistant","input":"What is new?","every":"1h","metadata":{"topic":"news"}}`

// TestCreateRefuses is every bad request POST /v1/schedules answers 400 in
// OpenAI's envelope, before the engine is asked.
func TestCreateRefuses(t *testing.T) {
	for _, tc := range []struct{ name, body, msg string }{
		{"both every and cron", `{"agent":"assistant","input":"x","every":"1h","cron":"0 7 * * *"}`, "either every or cron"},
		{"neither", `{"agent":"assistant","input":"x"}`, "every or cron: required"},
		{"bad cron", `{"agent":"assistant","input":"x","cron":"0 25 * * *"}`, "cron"},
		{"cron of six words", `{"agent":"assistant","input":"x","cron":"a b c d e f g h"}`, "cron"},
		{"bad timezone", `{"agent":"assistant","input":"x","cron":"0 7 * * *","timezone":"Mars/Olympus"}`, "timezone"},
		{"interval under the minimum", `{"agent":"assistant","input":"x","every":"30s"}`, "every: must be at least 1m0s"},
		{"cron under the minimum", `{"agent":"assistant","input":"x","cron":"@every 10s"}`, "less than the least interval"},
		{"seconds cron under the minimum", `{"agent":"assistant","input":"x","cron":"*/5 * * * * * *"}`, "less than the least interval"},
		{"cron that never fires", `{"agent":"assistant","input":"x","cron":"0 0 30 2 *"}`, "never fires"},
		{"bad every", `{"agent":"assistant","input":"x","every":"daily"}`, "every: must be a positive duration"},
		{"bad overlap", `{"agent":"assistant","input":"x","every":"1h","overlap":"queue"}`, "overlap: must be one of skip, buffer_one, allow"},
		{"short catch-up window", `{"agent":"assistant","input":"x","every":"1h","catchup_window":"1s"}`, "catchup_window: must be at least 10s"},
		{"catch-up window past the bound", `{"agent":"assistant","input":"x","every":"1h","catchup_window":"8760h"}`, "catchup_window: at most 24h0m0s"},
		{"no input", `{"agent":"assistant","every":"1h"}`, "messages or input: required"},
		{"unknown field", `{"agent":"assistant","input":"x","every":"1h","when":"now"}`, "when"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := serve(t, newFakes())
			webtest.WantCode(t, webtest.Do(t, a, "POST", "/v1/schedules", tc.body, webtest.Alice), http.StatusBadRequest, "invalid_request", tc.msg)
		})
	}
}

// TestUnknownAgentOneError: a schedule and a run that name an agent there
// is not answer the same 404, in the same words, from the runs gate that
// resolves every start's agent.
func TestUnknownAgentOneError(t *testing.T) {
	a := serve(t, newFakes())
	const want = `the agent "nobody" does not exist; GET /v1/models lists the agents`
	webtest.WantCode(t, webtest.Do(t, a, "POST", "/v1/schedules", `{"agent":"nobody","input":"x","every":"1h"}`, webtest.Alice), http.StatusNotFound, "model_not_found", want)
	webtest.WantCode(t, webtest.Do(t, a, "POST", "/v1/runs", `{"agent":"nobody","input":"x"}`, webtest.Alice), http.StatusNotFound, "model_not_found", want)
}

// TestScheduleLifecycle creates, reads, lists, changes, pauses, resumes
// and deletes a schedule, and reads what each answer says of it.
func TestScheduleLifecycle(t *testing.T) {
	a := serve(t, newFakes())
	s := create(t, a, hourly, webtest.Alice)
	if !strings.HasPrefix(s.ID, "sched-") || s.Object != "schedule" || s.Agent != "assistant" || s.Input != "What is new?" ||
		s.Every != "1h0m0s" || s.Overlap != "skip" || s.CatchupWindow != "1h0m0s" || s.Timezone != "UTC" || s.Paused ||
		s.NextRunAt == nil || s.Metadata["topic"] != "news" {
		t.Fatalf("created %+v", s)
	}
	if d := time.Until(*s.NextRunAt); d <= 0 || d > time.Hour {
		t.Errorf("next_run_at %v is not within the hour", s.NextRunAt)
	}
	path := "/v1/schedules/" + s.ID
	got := webtest.Decode[wire.Schedule](t, webtest.Do(t, a, "GET", path, nil, webtest.Alice))
	if got.ID != s.ID || got.Every != s.Every {
		t.Errorf("GET = %+v", got)
	}
	list := webtest.Decode[wire.ScheduleList](t, webtest.Do(t, a, "GET", "/v1/schedules", nil, webtest.Alice))
	if list.Object != "list" || len(list.Data) != 1 || list.Data[0].ID != s.ID {
		t.Errorf("list = %+v", list)
	}
	patched := webtest.Decode[wire.Schedule](t, webtest.Do(t, a, "PATCH", path,
		`{"cron":"0 7 * * *","timezone":"Europe/Berlin","overlap":"buffer_one"}`, webtest.Alice))
	if patched.Cron != "0 7 * * *" || patched.Every != "" || patched.Timezone != "Europe/Berlin" || patched.Overlap != "buffer_one" ||
		patched.Input != "What is new?" || patched.Metadata["topic"] != "news" {
		t.Errorf("patched = %+v", patched)
	}
	if at := patched.NextRunAt.In(mustZone(t, "Europe/Berlin")); at.Hour() != 7 || at.Minute() != 0 {
		t.Errorf("next_run_at %v is not 07:00 in Berlin", at)
	}
	paused := webtest.Decode[wire.Schedule](t, webtest.Do(t, a, "POST", path+"/pause", nil, webtest.Alice))
	if !paused.Paused || paused.NextRunAt != nil {
		t.Errorf("paused = %+v", paused)
	}
	if resumed := webtest.Decode[wire.Schedule](t, webtest.Do(t, a, "POST", path+"/resume", nil, webtest.Alice)); resumed.Paused || resumed.NextRunAt == nil {
		t.Errorf("resumed = %+v", resumed)
	}
	webtest.WantError(t, webtest.Do(t, a, "PATCH", path, `{"every":"5s"}`, webtest.Alice), http.StatusBadRequest, "at least 1m0s")
	del := webtest.Decode[wire.ScheduleDeleted](t, webtest.Do(t, a, "DELETE", path, nil, webtest.Alice))
	if !del.Deleted || del.ID != s.ID {
		t.Errorf("delete = %+v", del)
	}
	webtest.WantCode(t, webtest.Do(t, a, "GET", path, nil, webtest.Alice), http.StatusNotFound, "not_found", "no schedule "+s.ID)
}

// TestCreatePaused creates a schedule paused: it says so and names no
// next run until resumed; PATCH {"paused": false} resumes it too.
func TestCreatePaused(t *testing.T) {
	a := serve(t, newFakes())
	s := create(t, a, `{"agent":"assistant","input":"x","cron":"0 7 * * *","timezone":"Europe/Berlin","paused":true,"overlap":"allow","catchup_window":"15m"}`, webtest.Alice)
	if !s.Paused || s.NextRunAt != nil || len(s.NextRuns) != 0 || s.Overlap != "allow" || s.CatchupWindow != "15m0s" {
		t.Fatalf("created paused: %+v", s)
	}
	got := webtest.Decode[wire.Schedule](t, webtest.Do(t, a, "PATCH", "/v1/schedules/"+s.ID, `{"paused":false}`, webtest.Alice))
	if got.Paused || got.NextRunAt == nil || got.Cron != "0 7 * * *" || got.Overlap != "allow" || got.CatchupWindow != "15m0s" {
		t.Errorf("after PATCH paused false: %+v", got)
	}
}

// TestSchedulePatchRun changes the run a schedule starts: its input, then
// its agent alone (the conversation stays).
func TestSchedulePatchRun(t *testing.T) {
	sched := newFakes()
	a := serve(t, sched)
	s := create(t, a, hourly, webtest.Alice)
	path := "/v1/schedules/" + s.ID
	got := webtest.Decode[wire.Schedule](t, webtest.Do(t, a, "PATCH", path, `{"input":"And the weather?","metadata":{}}`, webtest.Alice))
	if got.Input != "And the weather?" || len(got.Metadata) != 0 {
		t.Errorf("patched input = %+v", got)
	}
	got = webtest.Decode[wire.Schedule](t, webtest.Do(t, a, "PATCH", path, `{"agent":"researcher"}`, webtest.Alice))
	if got.Agent != "researcher" || got.Input != "And the weather?" {
		t.Errorf("patched agent = %+v", got)
	}
	webtest.WantCode(t, webtest.Do(t, a, "PATCH", path, `{"agent":"nobody"}`, webtest.Alice), http.StatusNotFound, "model_not_found", `the agent "nobody" does not exist`)
	webtest.WantError(t, webtest.Do(t, a, "PATCH", path, `{"every":"1h","cron":"0 7 * * *"}`, webtest.Alice), http.StatusBadRequest, "either every or cron")
}

// TestScheduleOwners proves another principal's schedule is a 404 on
// every route, and missing from their list, as another's run is.
func TestScheduleOwners(t *testing.T) {
	a := serve(t, newFakes())
	s := create(t, a, hourly, webtest.Alice)
	path := "/v1/schedules/" + s.ID
	for _, r := range []struct{ method, path, body string }{
		{"GET", path, ""}, {"PATCH", path, `{"every":"2h"}`}, {"DELETE", path, ""},
		{"POST", path + "/pause", ""}, {"POST", path + "/resume", ""}, {"POST", path + "/trigger", ""},
	} {
		var body any
		if r.body != "" {
			body = r.body
		}
		webtest.WantCode(t, webtest.Do(t, a, r.method, r.path, body, webtest.Bob), http.StatusNotFound, "not_found", "no schedule "+s.ID)
	}
	if list := webtest.Decode[wire.ScheduleList](t, webtest.Do(t, a, "GET", "/v1/schedules", nil, webtest.Bob)); len(list.Data) != 0 {
		t.Errorf("Bob lists %+v", list.Data)
	}
	if got := webtest.Decode[wire.Schedule](t, webtest.Do(t, a, "GET", path, nil, webtest.Alice)); got.Paused || got.Every != "1h0m0s" {
		t.Errorf("Bob's requests changed Alice's schedule: %+v", got)
	}
}

// TestScheduleQuota refuses a principal's schedule beyond the limit with
// 403 quota_exceeded, and another principal's not.
func TestScheduleQuota(t *testing.T) {
	a := serve(t, newFakes())
	var first wire.Schedule
	for i := range limits.Schedules {
		s := create(t, a, hourly, webtest.Alice)
		if i == 0 {
			first = s
		}
	}
	webtest.WantCode(t, webtest.Do(t, a, "POST", "/v1/schedules", hourly, webtest.Alice), http.StatusForbidden, "quota_exceeded", "LONGHAUL_MAX_SCHEDULES")
	create(t, a, hourly, webtest.Bob)
	webtest.Do(t, a, "DELETE", "/v1/schedules/"+first.ID, nil, webtest.Alice)
	create(t, a, hourly, webtest.Alice)
}

// TestScheduleFires proves a fire is an ordinary run of the schedule's
// owner: read by GET /v1/runs/{id} with its schedule_id, listed by
// GET /v1/runs?schedule_id=, and no one else's.
func TestScheduleFires(t *testing.T) {
	sched := newFakes()
	a := serve(t, sched)
	s := create(t, a, hourly, webtest.Alice)
	other := create(t, a, hourly, webtest.Alice)
	trig := webtest.Do(t, a, "POST", "/v1/schedules/"+s.ID+"/trigger", nil, webtest.Alice)
	if trig.StatusCode != http.StatusAccepted {
		t.Fatalf("trigger = %d", trig.StatusCode)
	}
	fired := webtest.Decode[wire.Schedule](t, trig)
	if fired.RunCount != 1 || len(fired.RecentRuns) != 1 {
		t.Fatalf("after a trigger: %+v", fired)
	}
	run := fired.RecentRuns[0].ID
	if _, err := sched.Fire(other.ID); err != nil {
		t.Fatal(err)
	}
	got := webtest.Decode[wire.Run](t, webtest.Do(t, a, "GET", "/v1/runs/"+run, nil, webtest.Alice))
	if got.ScheduleID != s.ID || got.Agent != "assistant" {
		t.Errorf("run = %+v", got)
	}
	webtest.WantCode(t, webtest.Do(t, a, "GET", "/v1/runs/"+run, nil, webtest.Bob), http.StatusNotFound, "not_found", "no run")
	list := webtest.Decode[wire.RunList](t, webtest.Do(t, a, "GET", "/v1/runs?schedule_id="+s.ID, nil, webtest.Alice))
	if len(list.Data) != 1 || list.Data[0].ID != run || list.Data[0].ScheduleID != s.ID {
		t.Errorf("runs of %s = %+v", s.ID, list.Data)
	}
	if list := webtest.Decode[wire.RunList](t, webtest.Do(t, a, "GET", "/v1/runs?schedule_id="+s.ID, nil, webtest.Bob)); len(list.Data) != 0 {
		t.Errorf("Bob lists Alice's scheduled runs: %+v", list.Data)
	}
	webtest.WantError(t, webtest.Do(t, a, "GET", "/v1/runs?schedule_id=x'%20OR%20'1", nil, webtest.Alice), http.StatusBadRequest, "schedule_id")
}

// TestScheduleEngineErrors says an engine that does not answer as a 503,
// and a server without schedules as a 404.
func TestScheduleEngineErrors(t *testing.T) {
	sched := newFakes()
	sched.Err = runsfake.ErrUnreachable
	a := serve(t, sched)
	webtest.WantType(t, webtest.Do(t, a, "GET", "/v1/schedules/sched-1", nil, webtest.Alice), http.StatusServiceUnavailable, "", "", "cannot read")
	sched.Err = nil
	none := &schedulesapi.Handlers{}
	b := webtest.App(t, func(_, v1 fiber.Router) { v1.Get("/schedules", none.Require, none.List) })
	webtest.WantCode(t, webtest.Do(t, b, "GET", "/v1/schedules", nil, webtest.Alice), http.StatusNotFound, "not_found", "not available")
	if _, err := sched.Get(context.Background(), "sched-1"); err == nil {
		t.Error("the fake found a schedule never made")
	}
}

// TestOverlapsAgree holds the overlap policies the wire types accept to
// those the runs package maps to Temporal's.
func TestOverlapsAgree(t *testing.T) {
	if !slices.Equal(wire.ScheduleOverlaps, runs.Overlaps) {
		t.Errorf("wire.ScheduleOverlaps %v, runs.Overlaps %v", wire.ScheduleOverlaps, runs.Overlaps)
	}
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// TestScheduleTimingPatchDoesNotFreezeIdentity: a schedule stored with
// its owner's role of then (an admin since demoted) runs as the owner is
// now after any change, a PATCH of its timing alone included, and after
// a resume.
func TestScheduleTimingPatchDoesNotFreezeIdentity(t *testing.T) {
	sched := newFakes()
	a := serve(t, sched)
	for _, tc := range []struct{ name, method, path, body string }{
		{"timing patch", "PATCH", "", `{"every":"2h"}`},
		{"resume", "POST", "/resume", ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := create(t, a, hourly, webtest.Alice)
			stored, err := sched.Get(context.Background(), s.ID)
			if err != nil {
				t.Fatal(err)
			}
			stored.Input.User.Role = "admin" // what the owner was when it was made
			if err := sched.Update(context.Background(), stored); err != nil {
				t.Fatal(err)
			}
			var body any
			if tc.body != "" {
				body = tc.body
			}
			if resp := webtest.Do(t, a, tc.method, "/v1/schedules/"+s.ID+tc.path, body, webtest.Alice); resp.StatusCode != http.StatusOK {
				t.Fatalf("%s = %d", tc.name, resp.StatusCode)
			}
			after, err := sched.Get(context.Background(), s.ID)
			if err != nil {
				t.Fatal(err)
			}
			if u := after.Input.User; u.Role != "" || u.Principal != stored.Input.User.Principal {
				t.Errorf("after a %s the schedule runs as %+v, want its owner as now (no role)", tc.name, u)
			}
		})
	}
}

// TestDeleteOwnerSchedules: deleting a principal's data (DELETE /v1/me)
// deletes their schedules through runs.DeleteOwnerSchedules, every page
// of them, and no one else's.
func TestDeleteOwnerSchedules(t *testing.T) {
	sched := newFakes()
	a := serve(t, sched)
	for range 3 {
		create(t, a, hourly, webtest.Alice)
	}
	bobs := create(t, a, hourly, webtest.Bob)
	alice := webtest.Principal(t, webtest.Alice).Name
	n, err := runs.DeleteOwnerSchedules(context.Background(), sched, alice)
	if err != nil || n != 3 {
		t.Fatalf("deleted %d, %v; want 3", n, err)
	}
	if c, _ := sched.Count(context.Background(), alice); c != 0 {
		t.Errorf("%d of alice's schedules left", c)
	}
	if _, err := sched.Get(context.Background(), bobs.ID); err != nil {
		t.Errorf("bob's schedule: %v", err)
	}
}
