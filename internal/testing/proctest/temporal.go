//go:build unix

package proctest

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"google.golang.org/protobuf/types/known/durationpb"
)

// The binaries Temporal's images run, built from the go.temporal.io/server
// of go.mod (the version docker-compose.yml pins): temporalio/server runs
// temporal-server (docker/targets/server.Dockerfile:14), temporalio/admin-
// tools temporal-sql-tool (docker/targets/admin-tools.Dockerfile:20-26).
// go.mod lists both as tools, so their modules stay in go.sum.
const (
	temporalServerPkg  = "go.temporal.io/server/cmd/server"
	temporalSQLToolPkg = "go.temporal.io/server/cmd/tools/sql"
)

// TemporalBinaries builds temporal-server and temporal-sql-tool into one
// directory, bindir, and finds the schema directory admin-tools copies to
// /etc/temporal/schema: the module's schema/ (.github/actions/build-docker-
// images/scripts/main.go:271-285 copies it to docker/build/temporal/schema,
// which admin-tools.Dockerfile:28 copies into the image).
//
// LONGHAUL_BENCH_TEMPORAL_DIR, when set, names a directory that already
// holds both binaries and the schema (schema/): a machine without a Go
// toolchain (the benchmark brought to a bigger machine) uses them instead.
func TemporalBinaries(t testing.TB) (bindir, schema string) {
	t.Helper()
	if dir := os.Getenv("LONGHAUL_BENCH_TEMPORAL_DIR"); dir != "" {
		return dir, filepath.Join(dir, "schema")
	}
	server := Build(t, "temporal-server", temporalServerPkg)
	sqlTool := Build(t, "temporal-sql-tool", temporalSQLToolPkg)
	bindir = t.TempDir()
	for _, b := range []string{server, sqlTool} {
		if err := os.Rename(b, filepath.Join(bindir, filepath.Base(b))); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "go.temporal.io/server")
	cmd.Dir = RepoRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m go.temporal.io/server: %v", err)
	}
	return bindir, filepath.Join(strings.TrimSpace(string(out)), "schema")
}

// CreateNamespace does what `temporal operator cluster health` and then
// `temporal operator namespace create` do, with the SDK: it waits, until
// ctx ends, for the frontend at hostPort to report itself healthy (it
// fails while the server is still starting), then registers namespace
// with the retention keep unless it exists.
func CreateNamespace(ctx context.Context, hostPort, namespace string, keep time.Duration) error {
	var c client.Client
	var err error
	for {
		if c, err = client.DialContext(ctx, client.Options{
			HostPort: hostPort,
			Logger:   sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)),
		}); err == nil {
			if _, err = c.CheckHealth(ctx, &client.CheckHealthRequest{}); err == nil {
				break
			}
			c.Close()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("temporal operator cluster health: %w", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
	defer c.Close()
	ws := c.WorkflowService()
	if _, err := ws.DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: namespace}); err == nil {
		return nil
	}
	_, err = ws.RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace:                        namespace,
		WorkflowExecutionRetentionPeriod: durationpb.New(keep),
		HistoryArchivalState:             enumspb.ARCHIVAL_STATE_UNSPECIFIED,
	})
	return err
}
