package devserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/devserver"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

func startServer(t *testing.T, dir, addr, ui string) *devserver.Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := devserver.Start(ctx, devserver.Options{
		DataDir:          dir,
		FrontendAddr:     addr,
		UIAddr:           ui,
		Namespaces:       []string{"default"},
		SearchAttributes: map[string]enums.IndexedValueType{"LonghaulAgent": enums.INDEXED_VALUE_TYPE_KEYWORD},
		Logger:           slog.New(slog.DiscardHandler),
	})
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
func TestRestartKeepsHistory(t *testing.T) {
	dir := t.TempDir()
	addr, ui := testenv.FreeAddr(t), testenv.FreeAddr(t)
	s := startServer(t, dir, addr, ui)

	// The UI serves.
	conn, err := net.DialTimeout("tcp", ui, time.Second)
	if err != nil {
		t.Fatalf("UI not listening: %v", err)
	}
	conn.Close()

	c, err := client.Dial(client.Options{HostPort: addr})
	if err != nil {
		t.Fatal(err)
	}
	w := worker.New(c, "test", worker.Options{})
	w.RegisterWorkflow(greet)
	w.RegisterActivityWithOptions(greeting, activity.RegisterOptions{Name: "Greeting"})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "greet-1", TaskQueue: "test"}, greet, "durable")
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil || got != "hello durable" {
		t.Fatalf("result = %q, %v", got, err)
	}
	w.Stop()
	c.Close()
	s.Stop()

	s = startServer(t, dir, addr, "")
	defer s.Stop()
	c, err = client.Dial(client.Options{HostPort: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	desc, err := c.DescribeWorkflowExecution(ctx, "greet-1", "")
	if err != nil {
		t.Fatalf("run lost after restart: %v", err)
	}
	if st := desc.GetWorkflowExecutionInfo().GetStatus(); st != enums.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		t.Fatalf("status after restart = %v", st)
	}
	var again string
	if err := c.GetWorkflow(ctx, "greet-1", "").Get(ctx, &again); err != nil || again != "hello durable" {
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

func TestFreePortIsOutsideTheEphemeralRange(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("no ephemeral port range to compare with, and CI is set:", err)
		}
		t.Skip("no ephemeral port range to compare with:", err)
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
	if len(seen) < 10 {
		t.Errorf("20 picks gave only %d ports: %v", len(seen), seen)
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
			s, err := devserver.Start(ctx, devserver.Options{
				DataDir: dir, FrontendAddr: addr, UIAddr: ui, UIWrite: write,
				Namespaces: []string{"default"}, Logger: slog.New(slog.DiscardHandler),
			})
			if err != nil {
				t.Fatalf("start: %v", err)
			}
			defer s.Stop()

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
