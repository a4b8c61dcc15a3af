package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/config"
	"github.com/longhaul-dev/longhaul/internal/metrics"
	"github.com/longhaul-dev/longhaul/internal/redact"
	"github.com/longhaul-dev/longhaul/internal/searchattr"
	"github.com/longhaul-dev/longhaul/workflows"
	"go.temporal.io/api/serviceerror"
)

// health asks the API this container runs whether it is ready, for a
// healthcheck in an image without a shell or curl: exit 0 when /readyz
// answers 200, 1 (and why on stderr) when not.
func health(stderr io.Writer) int {
	cfg, err := config.Load()
	if err != nil {
		fmt.Fprintf(stderr, "longhaul: %s\n", redact.URLs(err.Error()))
		return 2
	}
	host, port, err := net.SplitHostPort(cfg.HTTPAddr)
	if err != nil {
		fmt.Fprintf(stderr, "longhaul health: LONGHAUL_HTTP_ADDR %q: %v\n", cfg.HTTPAddr, err)
		return 2
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	hc := &http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get("http://" + net.JoinHostPort(host, port) + "/readyz")
	if err != nil {
		fmt.Fprintf(stderr, "longhaul health: %v\n", err)
		return 1
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		fmt.Fprintf(stderr, "longhaul health: /readyz answered %s: %s\n", resp.Status, strings.TrimSpace(string(body)))
		return 1
	}
	return 0
}

// runSetup registers the search attributes Longhaul's runs are listed by
// in the namespace, adding only those missing: run it once per namespace
// of a real cluster before the first worker (the embedded server does it
// itself at each start).
func runSetup(ctx context.Context, cfg config.Config, log *slog.Logger, out io.Writer) error {
	c, err := dial(ctx, cfg, cfg.TemporalAddress, log, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	// A namespace created a moment ago (compose's temporal-namespace
	// one-shot runs just before this) is unknown to the frontend until its
	// namespace cache refreshes, every 2 s by default
	// (go.temporal.io/server v1.32.1, common/dynamicconfig/constants.go:234,
	// NamespaceCacheRefreshInterval): ask again for a while before calling
	// the namespace missing.
	var added []string
	wait := 250 * time.Millisecond
	deadline := time.Now().Add(setupNamespaceWait)
	for {
		added, err = searchattr.Ensure(ctx, c.OperatorService(), cfg.TemporalNamespace, contract.SearchAttributes())
		if !namespaceNotFound(err) || time.Now().Add(wait).After(deadline) {
			break
		}
		log.Info("namespace not known to the frontend yet; asking again", "namespace", cfg.TemporalNamespace, "in", wait)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
	if namespaceNotFound(err) {
		return fmt.Errorf("namespace %q does not exist at %s (create it, e.g. temporal operator namespace create -n %s, or set LONGHAUL_TEMPORAL_NAMESPACE)", cfg.TemporalNamespace, cfg.TemporalAddress, cfg.TemporalNamespace)
	}
	if err != nil {
		return err
	}
	if len(added) == 0 {
		fmt.Fprintf(out, "namespace %s: Longhaul's search attributes are all registered already\n", cfg.TemporalNamespace)
		return nil
	}
	fmt.Fprintf(out, "namespace %s: registered the search attributes %s\n", cfg.TemporalNamespace, strings.Join(added, ", "))
	return nil
}

// setupNamespaceWait is how long `longhaul setup` asks again for a
// namespace the frontend does not know yet (a variable for tests).
var setupNamespaceWait = 15 * time.Second

func namespaceNotFound(err error) bool {
	var nf *serviceerror.NotFound
	var nsnf *serviceerror.NamespaceNotFound
	return errors.As(err, &nf) || errors.As(err, &nsnf)
}

// startMetrics makes the process's metrics and serves them where
// LONGHAUL_METRICS_ADDR says; it returns the address bound, "" when none
// is (nil metrics when the setting is off). An address set there that is
// taken stops start-up, naming the setting. Left empty, `api` binds
// nothing (it serves /metrics on its own listener, see runAPI) and `dev`
// and `worker` serve on config.DefaultMetricsAddr, or, when another
// process on the host has it (a second worker), on a free port they
// print: processes started side by side on defaults all start.
func startMetrics(ctx context.Context, cfg config.Config, log *slog.Logger, command string) (*metrics.Metrics, string, error) {
	if cfg.MetricsAddr == config.MetricsOff {
		return nil, "", nil
	}
	help := maps.Clone(activities.MetricHelp)
	maps.Copy(help, workflows.MetricHelp)
	m, err := metrics.New(help)
	if err != nil {
		return nil, "", err
	}
	if cfg.MetricsAddr != "" {
		addr, err := m.Serve(ctx, cfg.MetricsAddr, log)
		if err != nil {
			return nil, "", err
		}
		return m, addr, nil
	}
	if command == "api" {
		return m, "", nil
	}
	addr, err := m.Serve(ctx, config.DefaultMetricsAddr, log)
	if errors.Is(err, syscall.EADDRINUSE) {
		if addr, err = m.Serve(ctx, net.JoinHostPort("127.0.0.1", "0"), log); err == nil {
			log.Warn("the default metrics address is taken (another longhaul process on this host?), so metrics are on a free port; set LONGHAUL_METRICS_ADDR to choose one",
				"default", config.DefaultMetricsAddr, "metrics", "http://"+addr+"/metrics")
		}
	}
	if err != nil {
		return nil, "", err
	}
	return m, addr, nil
}

// metricsNote is the start-up line's mention of the metrics endpoint.
func metricsNote(addr string) string {
	if addr == "" {
		return ""
	}
	return ", metrics on http://" + addr + "/metrics"
}
