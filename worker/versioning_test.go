package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/internal/wire"
	lhworker "github.com/longhaul-dev/longhaul/worker"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

// approvalStack starts a stack without a worker whose clerk agent orders
// from a shop through a tool that needs a person's approval, and counts
// the orders the shop took.
func approvalStack(t *testing.T) (*testenv.Env, *atomic.Int32) {
	t.Helper()
	var orders atomic.Int32
	shop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := orders.Add(1)
		fmt.Fprintf(w, "order %d placed", n)
	}))
	t.Cleanup(shop.Close)
	env := testenv.Start(t, testenv.Options{NoWorker: true, Layers: []fs.FS{testenv.Clerk}, Env: map[string]string{"SHOP_URL": shop.URL}})
	// The model orders a book, and says so once the shop answered: each
	// run, whenever it asks and whichever worker asks for it.
	env.Model.SetDefault(llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		if res := r.ToolResults(); len(res) > 0 {
			return llmtest.Text("Ordered: " + res[0].Content)
		}
		return llmtest.ToolCalls(llmtest.ToolCall{ID: "o1", Name: "place_order", Arguments: `{"item":"book"}`})
	}))
	return env, &orders
}

// call sends a JSON request to the env's API and decodes a 2xx answer
// into out (if not nil).
func call(t *testing.T, env *testenv.Env, method, path string, body, out any) {
	t.Helper()
	var raw []byte
	// A 503 is the API saying Temporal cannot answer yet (a query while no
	// worker of the run's version polls, as right after a switch of
	// versions); like a client, try again when it says to, for a while.
	for attempt := 0; ; attempt++ {
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := http.NewRequest(method, env.URL+path, rd)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable && method == "GET" && attempt < 60 {
			wait, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
			time.Sleep(time.Duration(min(max(wait, 1), 2)) * time.Second)
			continue
		}
		if resp.StatusCode/100 != 2 {
			t.Fatalf("%s %s = %d %s", method, path, resp.StatusCode, raw)
		}
		break
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, raw)
		}
	}
}

// startOrder starts a clerk run through the API and returns once the run
// waits for a person's approval of its order.
func startOrder(t *testing.T, ctx context.Context, env *testenv.Env) string {
	t.Helper()
	var run wire.RunCreated
	call(t, env, "POST", "/v1/runs", map[string]any{"agent": "clerk", "input": "Order a book"}, &run)
	waitWaiting(t, ctx, env, run.ID)
	return run.ID
}

// waitWaiting returns once the run waits for a person's approval.
func waitWaiting(t *testing.T, ctx context.Context, env *testenv.Env, id string) {
	t.Helper()
	// The run's state is a query; poll it until the run asks.
	for {
		var got wire.Run
		call(t, env, "GET", "/v1/runs/"+id, nil, &got)
		if got.Status == contract.StatusWaiting {
			return
		}
		if got.Status != contract.StatusRunning {
			t.Fatalf("run %s is %s before it asked for approval", id, got.Status)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("run %s never asked for approval: %v", id, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// taskVersions lists the build ids of the workers that completed the
// run's workflow tasks, in order, one entry per change of worker version.
func taskVersions(t *testing.T, ctx context.Context, c client.Client, id string) []string {
	t.Helper()
	var builds []string
	it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := e.GetWorkflowTaskCompletedEventAttributes(); a != nil {
			b := a.GetDeploymentVersion().GetBuildId()
			if len(builds) == 0 || builds[len(builds)-1] != b {
				builds = append(builds, b)
			}
		}
	}
	return builds
}

// runVersion is the deployment version and behavior Temporal records for
// the run.
func runVersion(t *testing.T, ctx context.Context, c client.Client, id string) (string, enumspb.VersioningBehavior) {
	t.Helper()
	d, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		t.Fatal(err)
	}
	vi := d.GetWorkflowExecutionInfo().GetVersioningInfo()
	return vi.GetDeploymentVersion().GetBuildId(), vi.GetBehavior()
}

// approveAndFinish approves the run's order and waits for the run to end.
func approveAndFinish(t *testing.T, ctx context.Context, env *testenv.Env, id string) {
	t.Helper()
	var res contract.InputResult
	call(t, env, "POST", "/v1/runs/"+id+"/input", map[string]any{"approve": true}, &res)
	if res.Decision != contract.DecisionApproved {
		t.Fatalf("input result %+v", res)
	}
	if err := env.Client.GetWorkflow(ctx, id, "").Get(ctx, nil); err != nil {
		t.Fatalf("run %s: %v", id, err)
	}
	var got wire.Run
	call(t, env, "GET", "/v1/runs/"+id, nil, &got)
	if got.Status != contract.StatusCompleted {
		t.Fatalf("run %s ended %s, want completed", id, got.Status)
	}
}

// TestRunOutlivesItsWorkerVersion deploys a new version of the worker while
// a run waits for a person, as a rolling update does: the run starts on
// version A, A's only worker stops, a worker of version B starts and makes
// itself current, and the approval given then is carried out by B. The
// run's history shows both versions at work, the order is placed once, and
// the run completes.
func TestRunOutlivesItsWorkerVersion(t *testing.T) {
	env, orders := approvalStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	a := lhworker.Versioning{Deployment: "longhaul", BuildID: "build-a"}
	b := lhworker.Versioning{Deployment: "longhaul", BuildID: "build-b"}

	wa := env.StartVersionedWorker(a)
	if err := lhworker.Promote(ctx, env.Client, a); err != nil {
		t.Fatal(err)
	}
	id := startOrder(t, ctx, env)
	if build, behavior := runVersion(t, ctx, env.Client, id); build != a.BuildID || behavior != enumspb.VERSIONING_BEHAVIOR_AUTO_UPGRADE {
		t.Fatalf("the waiting run is on %q (%v), want %q auto-upgrade", build, behavior, a.BuildID)
	}

	wa.Stop()
	env.StartVersionedWorker(b)
	if err := lhworker.Promote(ctx, env.Client, b); err != nil {
		t.Fatal(err)
	}
	approveAndFinish(t, ctx, env, id)

	if diff := cmp.Diff([]string{a.BuildID, b.BuildID}, taskVersions(t, ctx, env.Client, id)); diff != "" {
		t.Errorf("versions that ran the run's workflow tasks (-want +got):\n%s", diff)
	}
	if build, _ := runVersion(t, ctx, env.Client, id); build != b.BuildID {
		t.Errorf("the finished run is on %q, want %q", build, b.BuildID)
	}
	if n := orders.Load(); n != 1 {
		t.Errorf("the shop took %d orders, want 1", n)
	}

	// A new run goes to B, the current version, from its first task.
	id2 := startOrder(t, ctx, env)
	approveAndFinish(t, ctx, env, id2)
	if diff := cmp.Diff([]string{b.BuildID}, taskVersions(t, ctx, env.Client, id2)); diff != "" {
		t.Errorf("versions that ran the new run's workflow tasks (-want +got):\n%s", diff)
	}
}

// TestPinnedRunStaysOnItsVersion is the rainbow deployment: with pinned
// runs, a run started on version A is carried out by A's worker even after
// B became current, while a new run goes to B.
func TestPinnedRunStaysOnItsVersion(t *testing.T) {
	env, orders := approvalStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	a := lhworker.Versioning{Deployment: "longhaul", BuildID: "build-a", Pinned: true}
	b := lhworker.Versioning{Deployment: "longhaul", BuildID: "build-b", Pinned: true}

	env.StartVersionedWorker(a)
	if err := lhworker.Promote(ctx, env.Client, a); err != nil {
		t.Fatal(err)
	}
	old := startOrder(t, ctx, env)
	if build, behavior := runVersion(t, ctx, env.Client, old); build != a.BuildID || behavior != enumspb.VERSIONING_BEHAVIOR_PINNED {
		t.Fatalf("the waiting run is on %q (%v), want %q pinned", build, behavior, a.BuildID)
	}
	env.StartVersionedWorker(b)
	if err := lhworker.Promote(ctx, env.Client, b); err != nil {
		t.Fatal(err)
	}
	fresh := startOrder(t, ctx, env)

	approveAndFinish(t, ctx, env, old)
	approveAndFinish(t, ctx, env, fresh)
	if diff := cmp.Diff([]string{a.BuildID}, taskVersions(t, ctx, env.Client, old)); diff != "" {
		t.Errorf("versions that ran the pinned run's workflow tasks (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{b.BuildID}, taskVersions(t, ctx, env.Client, fresh)); diff != "" {
		t.Errorf("versions that ran the new run's workflow tasks (-want +got):\n%s", diff)
	}
	if n := orders.Load(); n != 2 {
		t.Errorf("the shop took %d orders, want 2", n)
	}
}

// TestPromote checks Promote's edges on the real server: an unversioned
// worker has nothing to promote, promoting the current version again is a
// no-op, and a bad name is refused at once rather than retried.
func TestPromote(t *testing.T) {
	env := testenv.Start(t, testenv.Options{NoWorker: true})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := lhworker.Promote(ctx, env.Client, lhworker.Versioning{}); err != nil {
		t.Fatalf("unversioned: %v", err)
	}
	v := lhworker.Versioning{Deployment: "longhaul", BuildID: "one"}
	env.StartVersionedWorker(v)
	for range 2 {
		if err := lhworker.Promote(ctx, env.Client, v); err != nil {
			t.Fatal(err)
		}
	}
	d, err := env.Client.WorkerDeploymentClient().GetHandle("longhaul").Describe(ctx, client.WorkerDeploymentDescribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cur := d.Info.RoutingConfig.CurrentVersion; cur == nil || cur.BuildID != "one" {
		t.Errorf("current version %+v, want build one", cur)
	}
	// A name the server would refuse fails at once, before any call.
	if err := lhworker.Promote(ctx, env.Client, lhworker.Versioning{Deployment: "bad.name", BuildID: "one"}); err == nil {
		t.Error("promoting a deployment named bad.name succeeded")
	}
}

func TestVersioningValidate(t *testing.T) {
	tests := []struct {
		v  lhworker.Versioning
		ok bool
	}{
		{lhworker.Versioning{}, true},
		{lhworker.Versioning{Deployment: "longhaul", BuildID: "v1.2.3"}, true},
		{lhworker.Versioning{Deployment: "longhaul", BuildID: "devel-0123456789ab-dirty"}, true},
		{lhworker.Versioning{Deployment: "longhaul"}, false},
		{lhworker.Versioning{Deployment: "long.haul", BuildID: "1"}, false},
		{lhworker.Versioning{Deployment: "long:haul", BuildID: "1"}, false},
		{lhworker.Versioning{Deployment: "__longhaul", BuildID: "1"}, false},
		{lhworker.Versioning{Deployment: "longhaul", BuildID: "__1"}, false},
		{lhworker.Versioning{Deployment: "longhaul", BuildID: strings.Repeat("x", 256)}, false},
	}
	for _, tt := range tests {
		if err := tt.v.Validate(); (err == nil) != tt.ok {
			t.Errorf("%+v: Validate() = %v, want ok %v", tt.v, err, tt.ok)
		}
	}
}

// TestUnversionedRunsMoveToFirstVersion is the first deploy of versioned
// workers onto a cluster that ran unversioned ones: a run an unversioned
// worker started waits for approval, the unversioned worker stops, and a
// second run starts while no worker polls and no version is current yet (as
// in the moment a first versioned worker takes to promote itself). Both
// complete once a versioned worker makes its version current.
func TestUnversionedRunsMoveToFirstVersion(t *testing.T) {
	env, orders := approvalStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env.StartWorker()
	old := startOrder(t, ctx, env)
	env.StopWorker()
	var early wire.RunCreated
	call(t, env, "POST", "/v1/runs", map[string]any{"agent": "clerk", "input": "Order a book"}, &early)

	v := lhworker.Versioning{Deployment: "longhaul", BuildID: "first"}
	env.StartVersionedWorker(v)
	if err := lhworker.Promote(ctx, env.Client, v); err != nil {
		t.Fatal(err)
	}
	approveAndFinish(t, ctx, env, old)
	waitWaiting(t, ctx, env, early.ID)
	approveAndFinish(t, ctx, env, early.ID)
	if diff := cmp.Diff([]string{"", v.BuildID}, taskVersions(t, ctx, env.Client, old)); diff != "" {
		t.Errorf("versions that ran the old run's workflow tasks (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{v.BuildID}, taskVersions(t, ctx, env.Client, early.ID)); diff != "" {
		t.Errorf("versions that ran the early run's workflow tasks (-want +got):\n%s", diff)
	}
	if n := orders.Load(); n != 2 {
		t.Errorf("the shop took %d orders, want 2", n)
	}
}
