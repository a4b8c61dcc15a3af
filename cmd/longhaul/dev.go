package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/config"
	"github.com/longhaul-dev/longhaul/internal/devserver"
	"github.com/longhaul-dev/longhaul/internal/metrics"
	"github.com/longhaul-dev/longhaul/internal/natsbus"
	"github.com/longhaul-dev/longhaul/internal/redact"
	"github.com/longhaul-dev/longhaul/worker"
	"go.temporal.io/sdk/client"
)

// runDev runs the embedded server (unless a real one is configured), a worker
// and the API in one process.
func runDev(ctx context.Context, cfg config.Config, log *slog.Logger, out io.Writer) error {
	// Agent files first: a broken one stops start-up before anything runs.
	cat, topts, err := loadCatalog(cfg, log)
	if err != nil {
		return err
	}
	model := checkModel(ctx, cfg, cat)
	blobs, mem, closeStores, err := openStores(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer closeStores()
	topts.Memory = mem
	if topts.Credentials, err = openCredentials(cfg, topts.MCP, blobs, log); err != nil {
		return err
	}
	topts.Backlog = blobs
	forget, closeForget, err := forgetter(ctx, cfg, mem)
	if err != nil {
		return err
	}
	defer closeForget()
	m, maddr, err := startMetrics(ctx, cfg, log, "dev")
	if err != nil {
		return err
	}
	t, err := devTemporal(ctx, cfg, log, m)
	if err != nil {
		return err
	}
	defer t.close()
	c := t.client
	ns, err := devNATS(cfg)
	if err != nil {
		return err
	}
	if ns != nil {
		defer ns.Shutdown()
	}
	bus, closeBus, err := openBus(cfg, ns, "longhaul dev", log)
	if err != nil {
		return err
	}
	defer closeBus()
	docs, set, closeTools, err := openTools(ctx, cfg, cat, &topts, log)
	if err != nil {
		return err
	}
	defer closeTools()
	// dev's worker is unversioned whatever LONGHAUL_WORKER_DEPLOYMENT says:
	// it is the only worker and goes when its process goes, so there is no
	// old version to keep runs from, and the embedded server, killed with
	// it, takes up to a minute after a restart to take polls from a
	// versioned worker again (its deployment bookkeeping is a workflow too).
	acts := newActivities(cfg, cat, set.Registry, blobs, mem, docs, bus, c, log)
	ledger, err := spendOn(ctx, acts, cfg, log)
	if err != nil {
		return err
	}
	defer ledger.Close()
	// The check began with start-up: by now its answers are in, or nearly.
	tellThinkers(acts, model)
	w := worker.New(c, cfg.TaskQueue, acts, tuning(cfg), worker.Versioning{})
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	defer w.Stop()
	scheduleRetention(ctx, cfg, c, log)
	s := newAPI(cfg, c, cat, topts, blobs, docs, bus, log, true, m, false, forget, ledger)
	printDev(out, cfg, t, natsLine(cfg, ns), checkedLine(cfg, model, log)+windowNote(ctx, cfg, acts.Windows), memoryLine(cfg, mem), maddr)
	return serveAPI(ctx, s, cfg.HTTPAddr, log)
}

// devCluster is the Temporal dev runs against: the embedded server, or
// LONGHAUL_TEMPORAL_ADDRESS when it is set.
type devCluster struct {
	client client.Client
	// addr is the frontend's address, uiURL the embedded Web UI's ("" when
	// off or not embedded).
	addr, uiURL string
	// close closes the client and stops the embedded server.
	close func()
}

// devTemporal starts the embedded Temporal server unless a real one is
// configured, and dials it.
func devTemporal(ctx context.Context, cfg config.Config, log *slog.Logger, m *metrics.Metrics) (devCluster, error) {
	t := devCluster{addr: cfg.TemporalAddress, close: func() {}}
	if cfg.Embedded() {
		srv, err := startServer(ctx, cfg, log)
		if err != nil {
			return devCluster{}, err
		}
		t.addr, t.uiURL, t.close = srv.FrontendAddr(), srv.UIURL(), srv.Stop
	}
	c, err := dial(ctx, cfg, t.addr, log, m)
	if err != nil {
		t.close()
		return devCluster{}, err
	}
	stopServer := t.close
	t.client, t.close = c, func() { c.Close(); stopServer() }
	return t, nil
}

// devNATS starts the embedded NATS unless LONGHAUL_NATS_URL names one; nil
// when it does. API and worker share dev's process: NATS runs in it, on no
// port unless LONGHAUL_EMBEDDED_NATS_ADDR asks for one.
func devNATS(cfg config.Config) (*natsbus.Server, error) {
	if cfg.NATSURL != "" {
		return nil, nil
	}
	return natsbus.StartServer(cfg.EmbeddedNATSAddr)
}

// printDev prints dev's start-up lines: where the API, Temporal, its UI,
// NATS, the model, memory and metrics are.
func printDev(out io.Writer, cfg config.Config, t devCluster, nats, model, memory, metricsAddr string) {
	fmt.Fprintf(out, "Longhaul %s\n  API          http://%s/v1\n", version(), cfg.HTTPAddr)
	if t.uiURL != "" {
		fmt.Fprintf(out, "  Temporal UI  %s\n", uiLine(cfg, t.uiURL))
	}
	fmt.Fprintf(out, "  Temporal     %s (namespace %s, task queue %s)\n  NATS         %s\n  Model        %s\n  Memory       %s\n",
		t.addr, cfg.TemporalNamespace, cfg.TaskQueue, nats, model, memory)
	if metricsAddr != "" {
		fmt.Fprintf(out, "  Metrics      http://%s/metrics\n", metricsAddr)
	}
}

func runServer(ctx context.Context, cfg config.Config, log *slog.Logger, out io.Writer) error {
	natsAddr := cfg.EmbeddedNATSAddr
	if natsAddr == "" {
		natsAddr = config.DefaultServerNATSAddr
	}
	ns, err := natsbus.StartServer(natsAddr)
	if err != nil {
		return fmt.Errorf("LONGHAUL_EMBEDDED_NATS_ADDR: %w", err)
	}
	defer ns.Shutdown()
	srv, err := startServer(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer srv.Stop()
	fmt.Fprintf(out, "Longhaul %s — Temporal server and NATS\n  Temporal     %s (namespace %s)\n", version(), srv.FrontendAddr(), cfg.TemporalNamespace)
	if u := srv.UIURL(); u != "" {
		fmt.Fprintf(out, "  Temporal UI  %s\n", uiLine(cfg, u))
	}
	fmt.Fprintf(out, "  NATS         %s\n", ns.URL())
	<-ctx.Done()
	log.Info("stopping Temporal server")
	return nil
}

func startServer(ctx context.Context, cfg config.Config, log *slog.Logger) (*devserver.Server, error) {
	ui := cfg.EmbeddedUIAddr
	if cfg.UIDisabled() {
		ui = ""
	}
	start := time.Now()
	srv, err := devserver.Start(ctx, devserver.Options{
		DataDir:          cfg.DataDir,
		DatabaseURL:      cfg.EmbeddedDatabaseURL,
		FrontendAddr:     cfg.EmbeddedTemporalAddr,
		UIAddr:           ui,
		UIWrite:          cfg.EmbeddedUIWrite,
		MetricsAddr:      cfg.EmbeddedMetricsAddr,
		Namespaces:       []string{cfg.TemporalNamespace},
		SearchAttributes: contract.SearchAttributes(),
		Retention:        embeddedRetention(cfg.Retention),
		Logger:           log,
	})
	if err != nil {
		return nil, err
	}
	store := filepath.Join(cfg.DataDir, devserver.DBFile)
	if cfg.EmbeddedDatabaseURL != "" {
		store = redact.URLs(cfg.EmbeddedDatabaseURL)
	}
	log.Info("embedded Temporal server started", "address", srv.FrontendAddr(), "ui", srv.UIURL(), "store", store,
		"log", filepath.Join(cfg.DataDir, devserver.LogFile), "took", time.Since(start).Round(time.Millisecond))
	return srv, nil
}

// uiLine is the start-up line of the embedded Web UI at u.
func uiLine(cfg config.Config, u string) string {
	if cfg.EmbeddedUIWrite {
		return u
	}
	return u + " (read-only; LONGHAUL_EMBEDDED_UI_WRITE=true lets it change runs)"
}

// natsLine says which NATS dev uses, for its start-up lines.
func natsLine(cfg config.Config, ns *natsbus.Server) string {
	switch {
	case ns == nil:
		return redact.URLs(cfg.NATSURL)
	case ns.URL() != "":
		return "embedded, " + ns.URL()
	}
	return "embedded (in-process)"
}

// embeddedRetention is how long the embedded Temporal keeps closed runs:
// LONGHAUL_RETENTION, so that a run's history goes with its stored data
// and the database stays as large as the runs of one retention, but no
// less than Temporal allows; zero leaves the namespace as it is.
func embeddedRetention(retention time.Duration) time.Duration {
	if retention == 0 {
		return 0
	}
	return max(retention, devserver.MinRetention)
}
