// The runs API's listing, event stream and cancellation, end to end.

package api_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// TestListRuns lists a user's runs through visibility: newest first (open
// runs first), filtered by agent and status, page by page, and never
// another user's, whatever the user id holds.
func TestListRuns(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	ctx := within(t, time.Minute)
	env.Model.On(llmtest.LastUserContains("hang"), llmtest.Hang())
	env.Model.SetDefault(llmtest.Text("ok"))
	ann, bob := user("ann"), user("bob")
	quoted := user(`o'brien`)
	first := startRun(t, env, map[string]any{"agent": "naked", "input": "first"}, ann)
	followToDone(t, ctx, env, first.ID, ann)
	second := startRun(t, env, map[string]any{"agent": "assistant", "input": "second"}, ann)
	followToDone(t, ctx, env, second.ID, ann)
	open := startRun(t, env, map[string]any{"agent": "naked", "input": "hang on"}, ann)
	bobs := startRun(t, env, map[string]any{"agent": "naked", "input": "bob's"}, bob)
	followToDone(t, ctx, env, bobs.ID, bob)
	obrien := startRun(t, env, map[string]any{"agent": "naked", "input": "quoted"}, quoted)
	followToDone(t, ctx, env, obrien.ID, quoted)

	tests := []struct {
		name    string
		query   url.Values
		headers map[string]string
		want    []string
	}{
		{"all, open first then newest", url.Values{}, ann, []string{open.ID, second.ID, first.ID}},
		{"one per page", url.Values{"limit": {"1"}}, ann, []string{open.ID, second.ID, first.ID}},
		{"agent", url.Values{"agent": {"naked"}}, ann, []string{open.ID, first.ID}},
		{"status completed", url.Values{"status": {"completed"}}, ann, []string{second.ID, first.ID}},
		{"status running", url.Values{"status": {"running"}}, ann, []string{open.ID}},
		{"agent and status", url.Values{"agent": {"naked"}, "status": {"completed"}}, ann, []string{first.ID}},
		{"status failed", url.Values{"status": {"failed"}}, ann, nil},
		{"another user", url.Values{}, bob, []string{bobs.ID}},
		{"a user id with a quote", url.Values{}, quoted, []string{obrien.ID}},
		{"a user id that tries to widen the query", url.Values{}, user(`x' OR LonghaulUser != '`), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eventually(t, ctx, func() string {
				got := ids(listRuns(t, env, tt.query, tt.headers))
				if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
					return "runs (-want +got):\n" + diff
				}
				return ""
			})
		})
	}
	// A page token belongs to its user and filters.
	page := decode[wire.RunList](t, do(t, env, "GET", "/v1/runs?limit=1", nil, ann))
	if page.NextPageToken == "" {
		t.Fatal("no next page token")
	}
	for _, q := range []string{"limit=1&agent=naked&page_token=", "limit=1&page_token="} {
		h := ann
		if !strings.Contains(q, "agent") {
			h = bob
		}
		if resp := do(t, env, "GET", "/v1/runs?"+q+page.NextPageToken, nil, h); resp.StatusCode != 400 {
			t.Errorf("%s with another's token = %d", q, resp.StatusCode)
		}
	}

	runs := listRuns(t, env, url.Values{}, ann)
	for _, r := range runs {
		if r.CreatedAt == nil || r.Summary == "" || r.Agent == "" {
			t.Errorf("summary %+v", r)
		}
	}
	want := wire.RunSummary{ID: first.ID, Agent: "naked", Status: "completed", Summary: "naked: first", Door: "runs", CreatedAt: runs[2].CreatedAt, FinishedAt: runs[2].FinishedAt}
	if diff := cmp.Diff(want, runs[2]); diff != "" || runs[2].FinishedAt == nil {
		t.Errorf("listed run (-want +got):\n%s", diff)
	}
	if r := runs[0]; r.Status != "running" || r.FinishedAt != nil {
		t.Errorf("open run listed as %+v", r)
	}
}

// TestRunEvents reads a finished run's whole log, and a live run's log in
// three parts cut in the middle of the answer, resuming with Last-Event-ID
// and with ?after: the parts' durable events add up to the whole log and
// their deltas to the answer, with nothing missed or repeated.
func TestRunEvents(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	ctx := within(t, time.Minute)
	ann := user("ann")

	answer := strings.TrimSpace(strings.Repeat("every word arrives once and in order ", 8))
	env.Model.Enqueue(llmtest.Text(answer, llmtest.ChunkDelay(15*time.Millisecond)))
	r := startRun(t, env, map[string]any{"agent": "naked", "input": "talk"}, ann)
	contents := 0
	stopAfter := func(n int) func(sseEvent) bool {
		contents = 0
		return func(e sseEvent) bool {
			if e.Type == string(longhaul.EventContentDelta) {
				contents++
			}
			return contents == n
		}
	}
	part1, ended := readEvents(t, openEvents(t, ctx, env, r.ID, "", ann), stopAfter(3))
	if ended {
		t.Fatalf("the run ended before the first part was read: %v", types(part1))
	}
	h := merge(ann, map[string]string{"Last-Event-ID": part1[len(part1)-1].Pos})
	part2, ended := readEvents(t, openEvents(t, ctx, env, r.ID, "", h), stopAfter(3))
	if ended {
		t.Fatalf("the run ended before the second part was read: %v", types(part2))
	}
	after := "?after=" + url.QueryEscape(part2[len(part2)-1].Pos)
	part3, ended := readEvents(t, openEvents(t, ctx, env, r.ID, after, ann), nil)
	if !ended || part3[len(part3)-1].Type != string(longhaul.EventDone) {
		t.Fatalf("the third part does not end with done: %v", types(part3))
	}
	if deltaText(t, part3) == "" {
		t.Fatalf("the answer was over before the third part: %v", types(part3))
	}

	whole := followToDone(t, ctx, env, r.ID, ann)
	if whole[0].ID != 1 {
		t.Errorf("the whole log starts at %d", whole[0].ID)
	}
	parts := append(append(append([]sseEvent(nil), part1...), part2...), part3...)
	checkIncreasing(t, parts)
	if diff := cmp.Diff(whole, durableOnly(parts)); diff != "" {
		t.Errorf("parts differ from the whole log (-whole +parts):\n%s", diff)
	}
	if got := deltaText(t, parts); got != answer {
		t.Errorf("streamed text across three parts\n got %q\nwant %q", got, answer)
	}
	if got := contentText(t, whole); got != answer {
		t.Errorf("content %q, want %q", got, answer)
	}
	if d := doneData(t, whole); d.Status != contract.StatusCompleted {
		t.Errorf("done %+v", d)
	}

	t.Run("Last-Event-ID wins over after", func(t *testing.T) {
		h := merge(ann, map[string]string{"Last-Event-ID": "1"})
		events, ended := readEvents(t, openEvents(t, ctx, env, r.ID, "?after=2", h), nil)
		if !ended || len(events) != len(whole)-1 || events[0].ID != 2 {
			t.Fatalf("resumed with %v", types(events))
		}
	})
	t.Run("after the end", func(t *testing.T) {
		last := whole[len(whole)-1].ID
		events, ended := readEvents(t, openEvents(t, ctx, env, r.ID, "?after="+strconv.FormatInt(last, 10), ann), nil)
		if !ended || len(events) != 0 {
			t.Fatalf("after the last event: %v, ended %v", types(events), ended)
		}
	})
}

// TestCancelRun cancels a run whose model call hangs: the call is cut off,
// the run ends cancelled, its stream ends with error and done.
func TestCancelRun(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ann := user("ann")
	env.Model.Enqueue(llmtest.Hang())
	r := startRun(t, env, map[string]any{"agent": "naked", "input": "never answered"}, ann)
	if err := env.Model.WaitRequests(ctx, 1); err != nil {
		t.Fatal(err)
	}
	stream := openEvents(t, ctx, env, r.ID, "", ann)

	resp := do(t, env, "POST", "/v1/runs/"+r.ID+"/cancel", nil, ann)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("cancel = %d", resp.StatusCode)
	}
	if got := decode[wire.RunCancelling](t, resp); got != (wire.RunCancelling{ID: r.ID, Status: "cancelling"}) {
		t.Fatalf("cancel answered %+v", got)
	}

	events, ended := readEvents(t, stream, nil)
	n := len(events)
	if !ended || n < 2 || events[n-2].Type != string(longhaul.EventError) || events[n-1].Type != string(longhaul.EventDone) {
		t.Fatalf("stream ends with %v", types(events))
	}
	if d := doneData(t, events); d.Status != contract.StatusCancelled {
		t.Fatalf("done %+v", d)
	}
	got := getRun(t, env, r.ID, ann)
	if got.Status != contract.StatusCancelled || got.Error == "" || got.FinishedAt == nil {
		t.Fatalf("run after cancel %+v", got)
	}
	// The model call was cut off, not left hanging.
	if err := env.Model.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if resp := do(t, env, "POST", "/v1/runs/"+r.ID+"/cancel", nil, ann); resp.StatusCode != http.StatusConflict {
		t.Errorf("second cancel = %d", resp.StatusCode)
	}
	eventually(t, ctx, func() string {
		if got := ids(listRuns(t, env, url.Values{"status": {"cancelled"}}, ann)); len(got) != 1 || got[0] != r.ID {
			return "cancelled runs " + strings.Join(got, ",")
		}
		return ""
	})
}
