package runsapi_test

import (
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul/api/runsapi"
	"github.com/longhaul-dev/longhaul/api/runweb"
	"github.com/longhaul-dev/longhaul/api/sse"
	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/longhaul-dev/longhaul/internal/testing/runsfake"
	"github.com/longhaul-dev/longhaul/internal/testing/webtest"
)

// TestRunInputIsTheGates: a run of the runs API starts with the input the
// gate built — its agent resolved, the operator's settings in it, and its
// text streamed (a run of this API is followed through its events, so
// its deltas must be published).
func TestRunInputIsTheGates(t *testing.T) {
	fake := runsfake.New()
	settings := runs.Settings{ModelTimeout: 7 * time.Minute, HistoryLimit: 321, ApprovalTimeout: 3 * time.Hour}
	gate := runs.NewGate(fake, runs.GateConfig{
		Log: slog.New(slog.DiscardHandler), Settings: settings, Agents: &runweb.Agents{Catalog: webtest.Catalog(t)},
	})
	h := &runsapi.Handlers{Runs: &runweb.Runs{Service: fake}, Gate: gate, Streams: &sse.Streams{}}
	a := webtest.App(t, func(_, v1 fiber.Router) { v1.Post("/runs", h.CreateRun) })

	resp := webtest.Do(t, a, "POST", "/v1/runs", `{"agent":"assistant","input":"hi","metadata":{"k":"v"}}`, webtest.Alice)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /v1/runs = %d", resp.StatusCode)
	}
	r := fake.Run(resp.Header.Get(web.HeaderRunID))
	if r == nil {
		t.Fatalf("no run under %q", resp.Header.Get(web.HeaderRunID))
	}
	in := r.Input
	switch {
	case in.Agent != "assistant" || in.User.Key() != "alice" || in.Metadata["k"] != "v":
		t.Errorf("input names %q for %q with %v", in.Agent, in.User.Key(), in.Metadata)
	case in.Quiet:
		t.Error("a run of the runs API starts quiet: its followers would get no deltas")
	case in.ModelTimeout != settings.ModelTimeout || in.HistoryLimit != settings.HistoryLimit || in.ApprovalTimeout != settings.ApprovalTimeout:
		t.Errorf("settings in the input: %v %d %v; want the gate's %+v", in.ModelTimeout, in.HistoryLimit, in.ApprovalTimeout, settings)
	}
	before := fake.Len()
	webtest.WantCode(t, webtest.Do(t, a, "POST", "/v1/runs", `{"agent":"nobody","input":"hi"}`, webtest.Alice),
		http.StatusNotFound, "model_not_found", `the agent "nobody" does not exist`)
	if fake.Len() != before {
		t.Error("a run of an unknown agent was started")
	}
}
