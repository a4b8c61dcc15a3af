package devserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/devserver"
	"github.com/longhaul-dev/longhaul/internal/testing/proctest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/internal/testing/webtest"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// startServer starts a server on dir; retention, when given, is the
// namespace's.
func startServer(t *testing.T, dir, addr, ui, metrics string, retention ...time.Duration) *devserver.Server {
	t.Helper()
	return start(t, devserver.Options{DataDir: dir, FrontendAddr: addr, UIAddr: ui, MetricsAddr: metrics, Retention: slices.Max(append(retention, 0))})
}

// start starts a server with opts, on the default namespace with one
// search attribute.
func start(t *testing.T, opts devserver.Options) *devserver.Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	opts.Namespaces = []string{"default"}
	opts.SearchAttributes = map[string]enums.IndexedValueType{"LonghaulAgent": enums.INDEXED_VALUE_TYPE_KEYWORD}
	opts.Logger = slog.New(slog.DiscardHandler)
	s, err := devserver.Start(ctx, opts)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	return s
}

func greet(ctx workflow.Context, name string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	var out string
	err := workflow.ExecuteActivity(ctx, "Greeting", name).Get(ctx, &out)
	return out, err
}

func greeting(_ context.Context, name string) (string, error) { return "hello " + name, nil }

// TestRestartKeepsHistory runs a workflow through a real worker, stops the
// server, starts it again on the same file and finds the run still there.
// The first server serves its own metrics too, which count the run's
// writes; the second is told a retention, which the namespace takes.
func TestRestartKeepsHistory(t *testing.T) {
	dir := t.TempDir()
	addr, ui, metrics := testenv.FreeAddr(t), testenv.FreeAddr(t), testenv.FreeAddr(t)
	s := startServer(t, dir, addr, ui, metrics)

	// The UI serves.
	conn, err := net.DialTimeout("tcp", ui, time.Second)
	if err != nil {
		t.Fatalf("UI not listening: %v", err)
	}
	conn.Close()

	greetThrough(t, addr, "greet-1")
	resp, err := http.Get("http://" + metrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !regexp.MustCompile(`(?m)^persistence_requests_total\{[^}]*operation="CreateWorkflowExecution"[^}]*\} [1-9]`).Match(body) {
		t.Fatalf("metrics count no CreateWorkflowExecution:\n%.3000s", body)
	}
	s.Stop()

	s = startServer(t, dir, addr, "", "", 3*time.Hour)
	defer s.Stop()
	stillThere(t, addr, "greet-1", 3*time.Hour)
}

// greetThrough runs greet as id through a real worker on the server at
// addr, and checks its result.
func greetThrough(t *testing.T, addr, id string) {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w := worker.New(c, "test", worker.Options{})
	w.RegisterWorkflow(greet)
	w.RegisterActivityWithOptions(greeting, activity.RegisterOptions{Name: "Greeting"})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ctx := context.Background()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: "test"}, greet, "durable")
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil || got != "hello durable" {
		t.Fatalf("result = %q, %v", got, err)
	}
}

// stillThere checks, after a restart of the server at addr, that the
// namespace has the retention, the run id completed with its result and
// is listed by visibility, and the custom search attribute is registered.
func stillThere(t *testing.T, addr, id string, retention time.Duration) {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	ns, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: "default"})
	if err != nil || ns.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration() != retention {
		t.Fatalf("namespace %v, %v: want a retention of %v", ns.GetConfig(), err, retention)
	}
	// Visibility records are written by a queue after the run's own
	// writes, so one may still be on its way after the restart.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		list, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: "default", Query: "WorkflowId = '" + id + "'"})
		if err == nil && len(list.GetExecutions()) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("visibility lists %v, %v: want the one run", list.GetExecutions(), err)
		}
	}
	desc, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		t.Fatalf("run lost after restart: %v", err)
	}
	if st := desc.GetWorkflowExecutionInfo().GetStatus(); st != enums.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		t.Fatalf("status after restart = %v", st)
	}
	var again string
	if err := c.GetWorkflow(ctx, id, "").Get(ctx, &again); err != nil || again != "hello durable" {
		t.Fatalf("result after restart = %q, %v", again, err)
	}
	sa, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := sa.GetCustomAttributes()["LonghaulAgent"]; !ok {
		t.Fatalf("search attribute missing: %v", sa.GetCustomAttributes())
	}
}

func TestPortTakenFailsClearly(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = devserver.Start(context.Background(), devserver.Options{
		DataDir: t.TempDir(), FrontendAddr: l.Addr().String(), Namespaces: []string{"default"},
		Logger: slog.New(slog.DiscardHandler),
	})
	if err == nil {
		t.Fatal("started on a taken port")
	}
	if want := fmt.Sprintf("%s is not free", l.Addr()); !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not say %q", err, want)
	}
}

// TestFreePortIsOutsideTheEphemeralRange: FreePort's ports are free, not
// the kernel's to hand out, and never handed out twice in one process.
func TestFreePortIsOutsideTheEphemeralRange(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		proctest.Missing(t, fmt.Sprint("no ephemeral port range to compare with: ", err))
	}
	var lo, hi int
	if _, err := fmt.Sscan(string(b), &lo, &hi); err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for range 20 {
		port, err := devserver.FreePort("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		if port >= lo && port <= hi {
			t.Fatalf("port %d is in the ephemeral range %d-%d", port, lo, hi)
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			t.Fatalf("port %d is not free: %v", port, err)
		}
		l.Close()
		seen[port] = true
	}
	// Each was free again once closed, yet none came twice: a start
	// racing another in the same process must not get a port it has.
	if len(seen) != 20 {
		t.Errorf("20 picks gave %d distinct ports: %v", len(seen), seen)
	}
}

// TestUIReadOnlyByDefault: the embedded Web UI has no login, so by default
// it shows runs but cannot change them: its settings say so (the UI hides
// the buttons) and its server refuses a terminate. With UIWrite it can.
func TestUIReadOnlyByDefault(t *testing.T) {
	dir, addr, ui := t.TempDir(), testenv.FreeAddr(t), testenv.FreeAddr(t)
	for _, write := range []bool{false, true} {
		t.Run(fmt.Sprintf("write=%v", write), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			s := startWithUI(t, ctx, dir, addr, ui, write)

			resp, err := http.Get(s.UIURL() + "/api/v1/settings")
			if err != nil {
				t.Fatal(err)
			}
			var settings struct{ DisableWriteActions *bool }
			err = json.NewDecoder(resp.Body).Decode(&settings)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK || settings.DisableWriteActions == nil {
				t.Fatalf("settings: status %d, %+v, %v", resp.StatusCode, settings, err)
			}
			if got, want := *settings.DisableWriteActions, !write; got != want {
				t.Errorf("DisableWriteActions = %v, want %v", got, want)
			}

			// A terminate of a run that does not exist: refused by the UI
			// server when read-only, passed on to Temporal (which knows no
			// such run) otherwise. An Authorization header is how API
			// clients skip the UI's CSRF check.
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost,
				s.UIURL()+"/api/v1/namespaces/default/workflows/no-such-run/terminate", strings.NewReader(`{"reason":"test"}`))
			req.Header.Set("Authorization", "Bearer test")
			req.Header.Set("Content-Type", "application/json")
			resp, err = http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			want := http.StatusMethodNotAllowed
			if write {
				want = http.StatusNotFound
			}
			if resp.StatusCode != want {
				t.Errorf("terminate: status %d (%s), want %d", resp.StatusCode, body, want)
			}
		})
	}
}

// waitForGo waits for the signal "go"; its query "state" says so.
func waitForGo(ctx workflow.Context) (string, error) {
	if err := workflow.SetQueryHandler(ctx, "state", func() (string, error) { return "waiting", nil }); err != nil {
		return "", err
	}
	workflow.GetSignalChannel(ctx, "go").Receive(ctx, nil)
	return "went", nil
}

// uiPost posts body to the UI at target (an escaped path, sent as is) as
// an API client does: with an Authorization header, which skips the UI's
// CSRF check.
func uiPost(t *testing.T, ctx context.Context, base, target, body string, headers map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+target, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	// The path goes on the wire as written: no cleaning, no re-encoding.
	req.URL.Opaque = "//" + req.URL.Host + strings.SplitN(target, "?", 2)[0]
	req.Header.Set("Authorization", "Bearer anyone")
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return webtest.RoundTrip(t, req)
}

// TestUIReadOnlyRefusesCraftedWrites: the UI's own read-only switch lets
// through a POST whose decoded path holds "/workflows/" and "/query/";
// Longhaul's allow-list refuses those, read raw or decoded, while reads and
// a real query still work. The same crafted signal-with-start, with write
// actions on, does start a workflow: the requests are real attacks, not
// malformed ones.
func TestUIReadOnlyRefusesCraftedWrites(t *testing.T) {
	dir, addr, ui := t.TempDir(), testenv.FreeAddr(t), testenv.FreeAddr(t)
	const swsBody = `{"workflowType":{"name":"waitForGo"},"taskQueue":{"name":"ro"}}`
	for _, write := range []bool{false, true} {
		t.Run(fmt.Sprintf("write=%v", write), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			s := startWithUI(t, ctx, dir, addr, ui, write)
			c, err := client.Dial(client.Options{HostPort: addr, Logger: quietLog{}})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			w := worker.New(c, "ro", worker.Options{})
			w.RegisterWorkflow(waitForGo)
			if err := w.Start(); err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			started := func(id string) bool {
				t.Helper()
				_, err := c.DescribeWorkflowExecution(ctx, id, "")
				var nf *serviceerror.NotFound
				if err != nil && !errors.As(err, &nf) {
					t.Fatalf("describe %s: %v", id, err)
				}
				return err == nil
			}

			if write {
				code, body := uiPost(t, ctx, s.UIURL(), "/api/v1/namespaces/default/workflows/ctl%2Fquery%2Fx/signal-with-start/go", swsBody, nil)
				if code != http.StatusOK || !started("ctl/query/x") {
					t.Fatalf("with write actions on, the crafted signal-with-start = %d %s and started nothing", code, body)
				}
				return
			}

			target := "target-" + strconv.FormatInt(time.Now().UnixNano(), 36)
			if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: target, TaskQueue: "ro"}, waitForGo); err != nil {
				t.Fatal(err)
			}
			crafted := []struct {
				name, target, body string
				headers            map[string]string
				victim             string // a workflow that must not exist after
			}{
				{"signal-with-start, id with an encoded /query/", "/api/v1/namespaces/default/workflows/evil1%2Fquery%2Fx/signal-with-start/go", swsBody, nil, "evil1/query/x"},
				{"lower-case encoding", "/api/v1/namespaces/default/workflows/evil2%2fquery%2fx/signal-with-start/go", swsBody, nil, "evil2/query/x"},
				{"signal name with an encoded /query/", "/api/v1/namespaces/default/workflows/evil3/signal-with-start/a%2Fquery%2Fb", swsBody, nil, "evil3"},
				{"double encoding", "/api/v1/namespaces/default/workflows/evil4%252Fquery%252Fx/signal-with-start/go", swsBody, nil, "evil4%2Fquery%2Fx"},
				{"mixed case", "/api/v1/namespaces/default/workflows/evil5/Query/x/signal-with-start/go", swsBody, nil, "evil5"},
				{"path traversal", "/api/v1/namespaces/default/workflows/x/query/../../evil6/signal-with-start/go", swsBody, nil, "evil6"},
				{"encoded path traversal", "/api/v1/namespaces/default/workflows/x%2Fquery%2F..%2F..%2Fevil7/signal-with-start/go", swsBody, nil, "x/query/../../evil7"},
				{"batch terminate", "/api/v1/namespaces/default/batch-operations/job%2Fworkflows%2Fw%2Fquery%2Fq",
					`{"visibilityQuery":"WorkflowType='waitForGo'","reason":"crafted","terminationOperation":{}}`, nil, ""},
				{"method override on the query route", "/api/v1/namespaces/default/workflows/" + target + "/query/state", "",
					map[string]string{"X-HTTP-Method-Override": "DELETE", "Content-Type": "application/x-www-form-urlencoded"}, ""},
			}
			for _, cr := range crafted {
				code, body := uiPost(t, ctx, s.UIURL(), cr.target, cr.body, cr.headers)
				if code < 400 {
					t.Errorf("%s: %d %s, want it refused", cr.name, code, body)
				}
				if cr.victim != "" && started(cr.victim) {
					t.Errorf("%s started workflow %q", cr.name, cr.victim)
				}
			}
			// The target still runs: no batch terminated it, no override
			// deleted it.
			d, err := c.DescribeWorkflowExecution(ctx, target, "")
			if err != nil || d.GetWorkflowExecutionInfo().GetStatus() != enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
				t.Fatalf("target after the crafted requests: %v, %v", d.GetWorkflowExecutionInfo().GetStatus(), err)
			}

			// Reads and a real query still work.
			resp, err := http.Get(s.UIURL() + "/api/v1/namespaces/default/workflows/" + target)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), target) {
				t.Fatalf("describe through the UI = %d %s", resp.StatusCode, b)
			}
			code, body := uiPost(t, ctx, s.UIURL(), "/api/v1/namespaces/default/workflows/"+target+"/query/state", `{}`, nil)
			var q struct {
				QueryResult struct{ Payloads []struct{ Data []byte } }
			}
			if code != http.StatusOK || json.Unmarshal([]byte(body), &q) != nil || len(q.QueryResult.Payloads) != 1 || string(q.QueryResult.Payloads[0].Data) != `"waiting"` {
				t.Fatalf("query through the UI = %d %s", code, body)
			}
			// A plain write gets Longhaul's answer or the UI's own.
			code, body = uiPost(t, ctx, s.UIURL(), "/api/v1/namespaces/default/workflows/"+target+"/signal/go", `{}`, nil)
			if code != http.StatusForbidden && code != http.StatusMethodNotAllowed {
				t.Fatalf("signal through the UI = %d %s", code, body)
			}
		})
	}
}

type quietLog struct{}

func (quietLog) Debug(string, ...any) {}
func (quietLog) Info(string, ...any)  {}
func (quietLog) Warn(string, ...any)  {}
func (quietLog) Error(string, ...any) {}

// startWithUI starts the dev server with its Web UI, write actions on or
// off, and stops it when the test ends.
func startWithUI(t *testing.T, ctx context.Context, dir, addr, ui string, write bool) *devserver.Server {
	t.Helper()
	s, err := devserver.Start(ctx, devserver.Options{
		DataDir: dir, FrontendAddr: addr, UIAddr: ui, UIWrite: write,
		Namespaces: []string{"default"}, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}
