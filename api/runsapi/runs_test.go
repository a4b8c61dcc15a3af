package runsapi_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul/api/runsapi"
	"github.com/longhaul-dev/longhaul/api/sse"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/longhaul-dev/longhaul/internal/testing/runsfake"
	"github.com/longhaul-dev/longhaul/internal/testing/ssetest"
	"github.com/longhaul-dev/longhaul/internal/testing/webtest"
)

// The runs API served from runsfake: no Temporal, no worker, no model.
// What these tests check is the HTTP side of a run — statuses, error
// envelopes, SSE frames — for runs whose events the test scripts; the
// end-to-end tests in package api run them on the whole stack.

// serve is the runs API's routes over fake, as the server registers them,
// with limits when given.
func serve(t *testing.T, fake *runsfake.Service, limits ...runs.Limits) *fiber.App {
	t.Helper()
	rw, gate := webtest.RunsOver(fake, limits...)
	h := &runsapi.Handlers{Runs: rw, Gate: gate, Streams: &sse.Streams{}}
	return webtest.App(t, func(_, v1 fiber.Router) {
		v1.Post("/runs", h.CreateRun)
		v1.Get("/runs", h.ListRuns)
		v1.Get("/runs/:id", h.GetRun)
		v1.Get("/runs/:id/events", h.Events)
		v1.Post("/runs/:id/cancel", h.Cancel)
		v1.Post("/runs/:id/input", h.Input)
		v1.Get("/runs/:id/outputs/:ref", h.Output)
		v1.Get("/runs/:id/audit", h.Audit)
	})
}

func TestRunsAPI(t *testing.T) {
	const start = `{"agent":"assistant","messages":[{"role":"user","content":"hi"}]}`
	add := func(owner string, script ...func(*runsfake.Run)) func(*runsfake.Service) {
		return func(f *runsfake.Service) {
			r := f.Add("run-1", owner, contract.AgentInput{Agent: "assistant"})
			for _, s := range script {
				s(r)
			}
		}
	}
	for _, tc := range []struct {
		name         string
		setup        func(*runsfake.Service)
		method, path string
		body         string
		status       int
		// want is a piece of the answer's body.
		want string
	}{
		{name: "start", method: "POST", path: "/v1/runs", body: start, status: 202, want: `"status":"running"`},
		{name: "start an unknown agent", method: "POST", path: "/v1/runs", body: `{"agent":"nobody","messages":[{"role":"user","content":"hi"}]}`,
			status: 404},
		{name: "start refused", setup: func(f *runsfake.Service) { f.StartErr = runsfake.ErrUnreachable },
			method: "POST", path: "/v1/runs", body: start, status: 503, want: "could not start the run"},
		{name: "state", setup: add("alice"), method: "GET", path: "/v1/runs/run-1", status: 200, want: `"status":"running"`},
		{name: "unknown run", method: "GET", path: "/v1/runs/run-none", status: 404, want: `"message":"no run run-none"`},
		{name: "another's run", setup: add("bob"), method: "GET", path: "/v1/runs/run-1", status: 404, want: `"message":"no run run-1"`},
		{name: "cancel", setup: add("alice"), method: "POST", path: "/v1/runs/run-1/cancel", status: 202, want: `"status":"cancelling"`},
		{name: "cancel a finished run", setup: add("alice", runsfake.Answered("x")),
			method: "POST", path: "/v1/runs/run-1/cancel", status: 409, want: "has already finished"},
		{name: "input to a run that waits for nothing", setup: add("alice"),
			method: "POST", path: "/v1/runs/run-1/input", body: `{"text":"yes"}`, status: 409, want: "is not waiting for input"},
		{name: "input to a waiting run", setup: add("alice", (*runsfake.Run).Wait),
			method: "POST", path: "/v1/runs/run-1/input", body: `{"text":"yes"}`, status: 200},
		{name: "list", setup: add("alice"), method: "GET", path: "/v1/runs", status: 200, want: `"id":"run-1"`},
		{name: "audit", setup: add("alice", runsfake.Answered("x")), method: "GET", path: "/v1/runs/run-1/audit", status: 200, want: `"status":"completed"`},
		{name: "outputs on a server that keeps none", setup: add("alice"),
			method: "GET", path: "/v1/runs/run-1/outputs/blob", status: 404, want: "keeps no stored outputs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := runsfake.New()
			if tc.setup != nil {
				tc.setup(fake)
			}
			resp := webtest.Do(t, serve(t, fake), tc.method, tc.path, tc.body, webtest.Alice)
			body := readBody(t, resp)
			if resp.StatusCode != tc.status || !strings.Contains(body, tc.want) {
				t.Errorf("%s %s = %d %s, want %d with %s", tc.method, tc.path, resp.StatusCode, body, tc.status, tc.want)
			}
		})
	}
}

// TestRunDoor: a run started through the runs API says so in its memo,
// and GET /v1/runs/{id} and the listing show it.
func TestRunDoor(t *testing.T) {
	fake := runsfake.New()
	app := serve(t, fake)
	resp := webtest.Do(t, app, "POST", "/v1/runs", `{"agent":"assistant","messages":[{"role":"user","content":"hi"}]}`, webtest.Alice)
	if body := readBody(t, resp); resp.StatusCode != 202 {
		t.Fatalf("start = %d %s", resp.StatusCode, body)
	}
	id := resp.Header.Get("X-Longhaul-Run-Id")
	if r := fake.Run(id); r == nil || r.Memo[runs.MemoDoor] != runs.DoorRuns {
		t.Fatalf("the run's memo = %+v", r)
	}
	for _, path := range []string{"/v1/runs/" + id, "/v1/runs"} {
		resp := webtest.Do(t, app, "GET", path, "", webtest.Alice)
		if body := readBody(t, resp); !strings.Contains(body, `"door":"runs"`) {
			t.Errorf("GET %s = %d %s, want the door", path, resp.StatusCode, body)
		}
	}
}

func TestRunEvents(t *testing.T) {
	fake := runsfake.New()
	runsfake.Answered("Hello.")(fake.Add("run-1", "alice", contract.AgentInput{Agent: "assistant"}))
	app := serve(t, fake)
	for _, tc := range []struct {
		name, path string
		want       []string
	}{
		{"from the start", "/v1/runs/run-1/events", []string{
			`1 content {"offset":1,"type":"content",`,
			`2 done {"offset":2,"type":"done",`,
		}},
		{"after the first", "/v1/runs/run-1/events?after=1", []string{`2 done {"offset":2,"type":"done",`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := webtest.Do(t, app, "GET", tc.path, nil, webtest.Alice)
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get("X-Longhaul-Run-Id") != "run-1" {
				t.Fatalf("GET %s = %d %s", tc.path, resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			frames, err := ssetest.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for i, fr := range frames {
				line := strings.TrimSpace(fr.ID + " " + fr.Event + " " + fr.Data)
				if i < len(tc.want) && strings.HasPrefix(line, tc.want[i]) {
					line = tc.want[i]
				}
				got = append(got, line)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("frames (-want +got):\n%s", diff)
			}
		})
	}
}

// readBody is resp's body as a string.
func readBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
