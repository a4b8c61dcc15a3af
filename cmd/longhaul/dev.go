package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/config"
	"github.com/longhaul-dev/longhaul/internal/devserver"
	"github.com/longhaul-dev/longhaul/internal/natsbus"
	"github.com/longhaul-dev/longhaul/internal/redact"
	"github.com/longhaul-dev/longhaul/internal/toolset"
	"github.com/longhaul-dev/longhaul/worker"
)

// runDev runs the embedded server (unless a real one is configured), a worker
// and the API in one process.
func runDev(ctx context.Context, cfg config.Config, log *slog.Logger, out io.Writer) error {
	model := checkModel(ctx, cfg)
	// Agent files first: a broken one stops start-up before anything runs.
	cat, topts, err := loadCatalog(cfg, log)
	if err != nil {
		return err
	}
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
	addr := cfg.TemporalAddress
	uiURL := ""
	if cfg.Embedded() {
		srv, err := startServer(ctx, cfg, log)
		if err != nil {
			return err
		}
		defer srv.Stop()
		addr, uiURL = srv.FrontendAddr(), srv.UIURL()
	}
	c, err := dial(ctx, cfg, addr, log, m)
	if err != nil {
		return err
	}
	defer c.Close()
	var ns *natsbus.Server
	if cfg.NATSURL == "" {
		// API and worker share this process: NATS runs in it, on no port
		// unless LONGHAUL_EMBEDDED_NATS_ADDR asks for one.
		if ns, err = natsbus.StartServer(cfg.EmbeddedNATSAddr); err != nil {
			return err
		}
		defer ns.Shutdown()
	}
	bus, closeBus, err := openBus(cfg, ns, "longhaul dev", log)
	if err != nil {
		return err
	}
	defer closeBus()
	docs, err := openDocs(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer docs.Close()
	docSearch(&topts, cfg, docs)
	set, err := toolset.Build(ctx, cat, topts, log)
	if err != nil {
		return err
	}
	defer set.Close()
	// dev's worker is unversioned whatever LONGHAUL_WORKER_DEPLOYMENT says:
	// it is the only worker and goes when its process goes, so there is no
	// old version to keep runs from, and the embedded server, killed with
	// it, takes up to a minute after a restart to take polls from a
	// versioned worker again (its deployment bookkeeping is a workflow too).
	w := worker.New(c, cfg.TaskQueue, newActivities(cfg, cat, set.Registry, blobs, mem, docs, bus, c, log), tuning(cfg), worker.Versioning{})
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	defer w.Stop()
	scheduleRetention(ctx, cfg, c, log)
	s := newAPI(cfg, c, cat, topts, blobs, docs, bus, log, true, m, false, forget)
	fmt.Fprintf(out, "Longhaul %s\n  API          http://%s/v1\n", version(), cfg.HTTPAddr)
	if uiURL != "" {
		fmt.Fprintf(out, "  Temporal UI  %s\n", uiLine(cfg, uiURL))
	}
	fmt.Fprintf(out, "  Temporal     %s (namespace %s, task queue %s)\n  NATS         %s\n  Model        %s\n  Memory       %s\n",
		addr, cfg.TemporalNamespace, cfg.TaskQueue, natsLine(cfg, ns), modelLine(cfg, model(), log), memoryLine(cfg, mem))
	if maddr != "" {
		fmt.Fprintf(out, "  Metrics      http://%s/metrics\n", maddr)
	}
	return serveAPI(ctx, s, cfg.HTTPAddr, log)
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
		FrontendAddr:     cfg.EmbeddedTemporalAddr,
		UIAddr:           ui,
		UIWrite:          cfg.EmbeddedUIWrite,
		Namespaces:       []string{cfg.TemporalNamespace},
		SearchAttributes: contract.SearchAttributes(),
		Logger:           log,
	})
	if err != nil {
		return nil, err
	}
	log.Info("embedded Temporal server started", "address", srv.FrontendAddr(), "ui", srv.UIURL(),
		"data_dir", cfg.DataDir, "log", cfg.DataDir+"/"+devserver.LogFile, "took", time.Since(start).Round(time.Millisecond))
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
