package devserver_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/devserver"
	"github.com/longhaul-dev/longhaul/internal/testenv"
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
