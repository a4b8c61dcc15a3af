package responsesapi_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul/api/responsesapi"
	"github.com/longhaul-dev/longhaul/api/runweb"
	"github.com/longhaul-dev/longhaul/api/sse"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/longhaul-dev/longhaul/internal/testing/runsfake"
	"github.com/longhaul-dev/longhaul/internal/testing/webtest"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// The Responses API served from runsfake: no Temporal, no worker, no
// model. These tests check the HTTP side of a response — statuses, error
// envelopes, the response object and its stream — for runs the test
// scripts; the end-to-end tests in package api run them on the whole
// stack (client tools, previous_response_id, store: false).

// anyStores takes any vector stores a request names.
type anyStores struct{}

func (anyStores) CheckVectorStores(context.Context, string, []string) error { return nil }

// serve is the Responses API's routes over fake, as the server registers
// them, with limits when given.
func serve(t *testing.T, fake *runsfake.Service, limits ...runs.Limits) *fiber.App {
	t.Helper()
	rw, gate := webtest.RunsOver(fake, limits...)
	h := &responsesapi.Handlers{
		Runs: rw, Gate: gate, Agents: &runweb.Agents{Catalog: webtest.Catalog(t)}, Streams: &sse.Streams{},
		VectorStores: anyStores{}, Ranking: func(string) error { return nil },
	}
	return webtest.App(t, func(_, v1 fiber.Router) {
		v1.Post("/responses", h.Create)
		v1.Get("/responses/:id", h.Get)
		v1.Post("/responses/:id/cancel", h.Cancel)
		v1.Delete("/responses/:id", h.Delete)
		v1.Get("/responses/:id/input_items", h.InputItems)
	})
}

func TestResponsesAPI(t *testing.T) {
	const ask = `{"model":"assistant","input":"hi"`
	id1, none := wire.ResponseID("run-1", 0), wire.ResponseID("run-none", 0)
	// add puts a finished response of owner, run-1, as if created before.
	add := func(owner string, script func(*runsfake.Run)) func(*runsfake.Service) {
		return func(f *runsfake.Service) {
			r := f.Add("run-1", owner, contract.AgentInput{Agent: "assistant", Response: &contract.ResponseState{Store: true}})
			if script != nil {
				script(r)
			}
		}
	}
	for _, tc := range []struct {
		name         string
		setup        func(*runsfake.Service)
		limits       runs.Limits
		method, path string
		body         string
		status       int
		// want are pieces of the answer's body, in order.
		want []string
	}{
		{name: "create", setup: func(f *runsfake.Service) { f.OnStart = runsfake.Answered("Hello.") },
			method: "POST", path: "/v1/responses", body: ask + `}`, status: 200, want: []string{`"status":"completed"`, `"text":"Hello."`}},
		{name: "create streamed", setup: func(f *runsfake.Service) { f.OnStart = runsfake.Answered("Hello.") },
			method: "POST", path: "/v1/responses", body: ask + `,"stream":true}`, status: 200,
			want: []string{"event: response.created", `"delta":"Hello."`, "event: response.completed"}},
		{name: "create in the background", setup: func(f *runsfake.Service) { f.OnStart = runsfake.Answered("Hello.") },
			method: "POST", path: "/v1/responses", body: ask + `,"background":true}`, status: 200, want: []string{`"status":"queued"`}},
		{name: "create in the background, with a run running already", setup: add("alice", nil), limits: runs.Limits{Runs: 1},
			method: "POST", path: "/v1/responses", body: ask + `,"background":true}`, status: 429, want: []string{`"type":"rate_limit_error"`}},
		{name: "create for an unknown model", method: "POST", path: "/v1/responses", body: `{"model":"nobody","input":"hi"}`,
			status: 404, want: []string{`"code":"model_not_found"`}},
		{name: "create with invalid JSON", method: "POST", path: "/v1/responses", body: `{"model":`,
			status: 400, want: []string{"invalid JSON body"}},
		{name: "create refused", setup: func(f *runsfake.Service) { f.StartErr = runsfake.ErrUnreachable },
			method: "POST", path: "/v1/responses", body: ask + `}`, status: 503},
		{name: "get", setup: add("alice", runsfake.Answered("Hello.")), method: "GET", path: "/v1/responses/" + id1, status: 200,
			want: []string{`"id":"` + id1 + `"`, `"status":"completed"`, `"text":"Hello."`}},
		{name: "get an unknown response", method: "GET", path: "/v1/responses/" + none, status: 404, want: []string{"no response " + none}},
		{name: "get another's response", setup: add("bob", runsfake.Answered("Hello.")), method: "GET", path: "/v1/responses/" + id1, status: 404},
		{name: "get what is no response id", method: "GET", path: "/v1/responses/run-1", status: 404, want: []string{"no response run-1"}},
		{name: "cancel an ended response", setup: add("alice", runsfake.Answered("Hello.")), method: "POST", path: "/v1/responses/" + id1 + "/cancel",
			status: 409, want: []string{"has already ended (completed)"}},
		{name: "delete", setup: add("alice", runsfake.Answered("Hello.")), method: "DELETE", path: "/v1/responses/" + id1,
			status: 200, want: []string{`"deleted":true`}},
		{name: "input items", setup: add("alice", runsfake.Answered("Hello.")), method: "GET", path: "/v1/responses/" + id1 + "/input_items",
			status: 200, want: []string{`"object":"list"`}},
		{name: "input items, a bad limit", setup: add("alice", runsfake.Answered("Hello.")), method: "GET", path: "/v1/responses/" + id1 + "/input_items?limit=0",
			status: 400, want: []string{"limit"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := runsfake.New()
			if tc.setup != nil {
				tc.setup(fake)
			}
			resp := webtest.Do(t, serve(t, fake, tc.limits), tc.method, tc.path, tc.body, webtest.Alice)
			if tc.status == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "" {
				t.Errorf("a 429 without Retry-After")
			}
			b, _ := io.ReadAll(resp.Body)
			body := string(b)
			if resp.StatusCode != tc.status {
				t.Fatalf("%s %s = %d %s, want %d", tc.method, tc.path, resp.StatusCode, body, tc.status)
			}
			rest := body
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("%s %s = %s, want %q (in order: %q)", tc.method, tc.path, body, w, tc.want)
				}
				rest = rest[i+len(w):]
			}
		})
	}
}
