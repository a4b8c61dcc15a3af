package api_test

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
)

// TestNastyPrincipals lists and counts the runs of principals whose ids
// Temporal's SQL visibility reads wrongly when quoted as they are (quotes at
// either end are stripped), against the embedded server: each lists exactly
// its own run, never bob's, and its run limit counts that run.
func TestNastyPrincipals(t *testing.T) {
	env := testenv.Start(t, testenv.Options{API: api.Config{Limits: api.Limits{Runs: 1}}})
	ctx := within(t, time.Minute)
	env.Model.On(llmtest.LastUserContains("hang"), llmtest.Hang())
	body := map[string]any{"agent": "naked", "input": "hang on"}
	bob := user("bob")
	bobs := startRun(t, env, body, bob)
	for _, id := range []string{"bob", "' OR LonghaulUser != '", "x' OR LonghaulUser != '", "bob'", "'bob", "''", "o'brien"} {
		t.Run(id, func(t *testing.T) {
			h, want := user(id), bobs
			if id != "bob" {
				want = startRun(t, env, body, h)
			}
			eventually(t, ctx, func() string {
				if diff := cmp.Diff([]string{want.ID}, ids(listRuns(t, env, nil, h))); diff != "" {
					return "runs (-want +got):\n" + diff
				}
				return ""
			})
			// Visibility shows the run: the limit counts it.
			resp := do(t, env, "POST", "/v1/runs", body, h)
			if resp.StatusCode != http.StatusTooManyRequests {
				b, _ := io.ReadAll(resp.Body)
				t.Fatalf("a second run = %d %s, want 429", resp.StatusCode, b)
			}
		})
	}
}
