package testenv

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/devserver"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// One embedded Temporal server per test binary. Starting one takes
// seconds (5.6 s under -race on a 2-core machine, and 1.7 s to stop), so a
// package whose tests each start a stack starts it once: its TestMain
// calls Main, and each stack then gets a namespace of its own on the
// shared server (its runs, schedules and visibility are its own, as on a
// server of its own). A stack that stops or restarts Temporal, or reads
// its files, asks for its own with Options.OwnTemporal.

var shared struct {
	on   atomic.Bool
	once sync.Once
	srv  *devserver.Server
	dir  string
	err  error
	n    atomic.Int64
}

// Main runs m with one Temporal server shared by the package's stacks,
// stopped (and its files removed) once the tests end; a package's
// TestMain returns what it returns:
//
//	func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }
func Main(m *testing.M) int {
	shared.on.Store(true)
	code := m.Run()
	if shared.srv != nil {
		shared.srv.Stop()
	}
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
	return code
}

// sharedNamespace starts the shared server on its first call and returns
// it with a fresh namespace of its own; ok is false when the package's
// TestMain did not call Main.
func sharedNamespace(t testing.TB, ctx context.Context) (srv *devserver.Server, ns string, ok bool) {
	t.Helper()
	if !shared.on.Load() {
		return nil, "", false
	}
	shared.once.Do(func() {
		if shared.dir, shared.err = os.MkdirTemp("", "longhaul-temporal-"); shared.err != nil {
			return
		}
		port, err := devserver.FreePort("127.0.0.1")
		if err != nil {
			shared.err = err
			return
		}
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		shared.srv, shared.err = devserver.Start(sctx, devserver.Options{
			DataDir:          shared.dir,
			FrontendAddr:     "127.0.0.1:" + strconv.Itoa(port),
			Namespaces:       []string{"default"},
			SearchAttributes: contract.SearchAttributes(),
			Logger:           slog.New(slog.DiscardHandler),
		})
	})
	if shared.err != nil {
		t.Fatalf("testenv: start the shared temporal: %v", shared.err)
	}
	ns = fmt.Sprintf("stack-%d", shared.n.Add(1))
	if err := shared.srv.AddNamespace(ctx, ns, contract.SearchAttributes()); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return shared.srv, ns, true
}

// quiesce deletes the schedules of c's namespace and terminates its open
// workflows, so that a stack's namespace on the shared server goes quiet
// when its test ends.
func quiesce(c client.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if it, err := c.ScheduleClient().List(ctx, client.ScheduleListOptions{}); err == nil {
		for it.HasNext() {
			e, err := it.Next()
			if err != nil {
				break
			}
			_ = c.ScheduleClient().GetHandle(ctx, e.ID).Delete(ctx)
		}
	}
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: "ExecutionStatus = 'Running'", NextPageToken: token})
		if err != nil {
			return
		}
		for _, e := range resp.GetExecutions() {
			_ = c.TerminateWorkflow(ctx, e.GetExecution().GetWorkflowId(), "", "the test ended")
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return
		}
	}
}
