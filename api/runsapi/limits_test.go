package runsapi_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/longhaul-dev/longhaul/internal/testing/runsfake"
	"github.com/longhaul-dev/longhaul/internal/testing/webtest"
)

// TestRunsLimits holds a principal to one run and one stream at a time
// (LONGHAUL_MAX_RUNS, LONGHAUL_MAX_STREAMS): the next is a 429 with
// Retry-After, another principal is not held back, and a run or stream
// that ends frees its place.
func TestRunsLimits(t *testing.T) {
	fake := runsfake.New()
	run := fake.Add("run-1", "alice", contract.AgentInput{Agent: "naked"})
	run.Wait()
	app := serve(t, fake, runs.Limits{Runs: 1, Streams: 1})
	// Her run waits for her, and she follows it.
	held, err := http.DefaultClient.Do(webtest.NewRequest("GET", webtest.Listen(t, app)+"/v1/runs/run-1/events", nil, webtest.Alice))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Body.Close()
	if held.StatusCode != http.StatusOK {
		t.Fatalf("her stream = %d", held.StatusCode)
	}
	const start = `{"agent":"naked","input":"Order a book"}`
	for _, tc := range []struct {
		name, method, path, body string
		who                      map[string]string
		status                   int
	}{
		{"a second run", "POST", "/v1/runs", start, webtest.Alice, http.StatusTooManyRequests},
		{"a second stream", "GET", "/v1/runs/run-1/events", "", webtest.Alice, http.StatusTooManyRequests},
		{"another's run", "POST", "/v1/runs", start, webtest.Bob, http.StatusAccepted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := webtest.Do(t, app, tc.method, tc.path, tc.body, tc.who)
			if tc.status != http.StatusTooManyRequests {
				if resp.StatusCode != tc.status {
					t.Errorf("%s = %d, want %d", tc.name, resp.StatusCode, tc.status)
				}
				return
			}
			webtest.WantTooMany(t, resp)
		})
	}

	// Her run ends, and with it her stream: both places are free again.
	runsfake.Answered("Ordered.")(run)
	if _, err := io.ReadAll(held.Body); err != nil {
		t.Fatalf("her stream did not end with her run: %v", err)
	}
	for _, again := range []struct {
		method, path, body string
		status             int
	}{{"POST", "/v1/runs", start, http.StatusAccepted}, {"GET", "/v1/runs/run-1/events", "", http.StatusOK}} {
		if resp := webtest.DoAdmitted(t, app, again.method, again.path, again.body, webtest.Alice); resp.StatusCode != again.status {
			t.Errorf("%s %s after her run and stream ended = %d, want %d", again.method, again.path, resp.StatusCode, again.status)
		}
	}
}
