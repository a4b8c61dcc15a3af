// Package command implements the longhaul command's subcommands (dev,
// server, worker, api, version) so that main stays a one-liner. It reads the
// settings once, builds each part from them and owns start-up and graceful
// shutdown.
package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/internal/config"
	"github.com/longhaul-dev/longhaul/internal/devserver"
	"github.com/longhaul-dev/longhaul/internal/mcp"
	"github.com/longhaul-dev/longhaul/internal/memory"
	"github.com/longhaul-dev/longhaul/internal/metrics"
	"github.com/longhaul-dev/longhaul/internal/natsbus"
	"github.com/longhaul-dev/longhaul/internal/redact"
	"github.com/longhaul-dev/longhaul/internal/searchattr"
	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/internal/tools"
	"github.com/longhaul-dev/longhaul/internal/toolset"
	"github.com/longhaul-dev/longhaul/internal/tracing"
	"github.com/longhaul-dev/longhaul/skills"
	"github.com/longhaul-dev/longhaul/worker"
	"github.com/longhaul-dev/longhaul/workflows"
	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	sdklog "go.temporal.io/sdk/log"
	sdkworker "go.temporal.io/sdk/worker"
)

// Version is set at build time with -ldflags "-X …/command.Version=v1.2.3".
var Version = ""

const usage = `longhaul — a durable agent engine behind an OpenAI-compatible API.

Usage:
  longhaul dev       embedded Temporal server + Web UI, a worker and the API in one process
  longhaul server    the embedded Temporal server (+ Web UI) and NATS, for workers and APIs elsewhere
  longhaul worker    a worker, against LONGHAUL_TEMPORAL_ADDRESS (run as many as you like)
  longhaul api       the HTTP API, against LONGHAUL_TEMPORAL_ADDRESS
  longhaul setup     register Longhaul's search attributes in LONGHAUL_TEMPORAL_NAMESPACE
                     of the cluster at LONGHAUL_TEMPORAL_ADDRESS, once (safe to repeat)
  longhaul health    exit 0 when the API at LONGHAUL_HTTP_ADDR answers /readyz (a container healthcheck)
  longhaul version   print the version

Settings (environment variables, read once at start):
`

// Main runs the command line and returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		_ = config.Usage(stderr)
		return 2
	}
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		_ = config.Usage(stdout)
		return 0
	case "version", "--version":
		fmt.Fprintln(stdout, "longhaul", version())
		return 0
	case "health":
		return health(stderr)
	case "dev", "server", "worker", "api", "setup":
	default:
		fmt.Fprintf(stderr, "longhaul: unknown command %q (see longhaul --help)\n", args[0])
		return 2
	}
	cfg, err := config.Load()
	if err == nil && cfg.Retention < 0 {
		err = fmt.Errorf("%s_RETENTION: must not be negative (0 keeps blobs as long as the namespace keeps runs)", config.Prefix)
	}
	if err != nil {
		fmt.Fprintf(stderr, "longhaul: %s\n", redact.URLs(err.Error()))
		return 2
	}
	log := newLogger(stderr, cfg.LogLevel)
	// The first SIGINT or SIGTERM stops gracefully (a worker lets running
	// calls finish for up to worker.DrainTimeout); a second stops at once.
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	returned := make(chan struct{})
	defer close(returned)
	go func() {
		select {
		case <-sigs:
			stop()
		case <-returned:
			return
		}
		if args[0] == "dev" || args[0] == "worker" {
			log.Info("stopping: running model and tool calls get " + worker.DrainTimeout.String() + " to finish; signal again to stop at once (runs in flight stay in Temporal)")
		}
		select {
		case <-sigs:
			log.Warn("stopping at once: runs in flight resume when a worker is back")
			os.Exit(1)
		case <-returned:
		}
	}()
	// Spans go out over OTLP when the standard OTEL_* variables say where.
	shutdownTracing, err := tracing.Setup(ctx, "longhaul-"+args[0])
	if err != nil {
		fmt.Fprintf(stderr, "longhaul: %s\n", redact.URLs(err.Error()))
		return 2
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = shutdownTracing(sctx)
	}()
	run := map[string]func(context.Context, config.Config, *slog.Logger, io.Writer) error{
		"dev": runDev, "server": runServer, "worker": runWorker, "api": runAPI, "setup": runSetup,
	}[args[0]]
	if err := run(ctx, cfg, log, stdout); err != nil {
		// Plain text, one problem a line, so an operator reads it as is.
		fmt.Fprintf(stderr, "longhaul %s: %s\n", args[0], redact.URLs(err.Error()))
		return 1
	}
	return 0
}

// version is this build's version: Version when the build set it, else
// the one Go stamped from version control (a tag, or a pseudo-version of
// the commit with +dirty for uncommitted changes), else develVersion. A
// versioned worker takes it as its build id.
func version() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return develVersion
}

// develVersion is the version of a build that has none.
const develVersion = "(devel)"

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	// Every line goes through redact: a URL with credentials in an error
	// from a library or a server is hidden too.
	// A line logged with a traced context names its trace and span.
	return slog.New(tracing.LogHandler(redact.Handler(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))))
}

// runDev runs the embedded server (unless a real one is configured), a worker
// and the API in one process.
func runDev(ctx context.Context, cfg config.Config, log *slog.Logger, out io.Writer) error {
	// Agent files first: a broken one stops start-up before anything runs.
	cat, topts, err := loadCatalog(cfg, log)
	if err != nil {
		return err
	}
	blobs, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return fmt.Errorf("LONGHAUL_DATABASE_URL: %w", err)
	}
	defer blobs.Close()
	mem, closeMem, err := openMemory(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer closeMem()
	topts.Memory = mem
	forget, closeForget, err := forgetter(ctx, cfg, mem)
	if err != nil {
		return err
	}
	defer closeForget()
	m, maddr, err := startMetrics(ctx, cfg, log)
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
	w := worker.New(c, cfg.TaskQueue, newActivities(cfg, cat, set.Registry, blobs, mem, bus, c, log), tuning(cfg), worker.Versioning{})
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	defer w.Stop()
	scheduleRetention(ctx, cfg, c, log)
	s := newAPI(cfg, c, cat, topts, blobs, bus, log, true, m, forget)
	fmt.Fprintf(out, "Longhaul %s\n  API          http://%s/v1\n", version(), cfg.HTTPAddr)
	if uiURL != "" {
		fmt.Fprintf(out, "  Temporal UI  %s\n", uiLine(cfg, uiURL))
	}
	fmt.Fprintf(out, "  Temporal     %s (namespace %s, task queue %s)\n  NATS         %s\n  Model        %s (default %s)\n  Memory       %s\n",
		addr, cfg.TemporalNamespace, cfg.TaskQueue, natsLine(cfg, ns), redact.URLs(cfg.LLMBaseURL), cfg.LLMModel, memoryLine(cfg, mem))
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
	added, err := searchattr.Ensure(ctx, c.OperatorService(), cfg.TemporalNamespace, workflows.SearchAttributes())
	var nf *serviceerror.NotFound
	var nsnf *serviceerror.NamespaceNotFound
	if errors.As(err, &nf) || errors.As(err, &nsnf) {
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

func runWorker(ctx context.Context, cfg config.Config, log *slog.Logger, out io.Writer) error {
	if err := needRemote(cfg, "worker"); err != nil {
		return err
	}
	m, maddr, err := startMetrics(ctx, cfg, log)
	if err != nil {
		return err
	}
	cat, topts, c, err := connect(ctx, cfg, log, "worker", m)
	if err != nil {
		return err
	}
	defer c.Close()
	blobs, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return fmt.Errorf("LONGHAUL_DATABASE_URL: %w", err)
	}
	defer blobs.Close()
	mem, closeMem, err := openMemory(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer closeMem()
	topts.Memory = mem
	set, err := toolset.Build(ctx, cat, topts, log)
	if err != nil {
		return err
	}
	defer set.Close()
	bus, closeBus, err := openBus(cfg, nil, "longhaul worker", log)
	if err != nil {
		return err
	}
	defer closeBus()
	v := versioning(cfg, log)
	w := worker.New(c, cfg.TaskQueue, newActivities(cfg, cat, set.Registry, blobs, mem, bus, c, log), tuning(cfg), v)
	scheduleRetention(ctx, cfg, c, log)
	fmt.Fprintf(out, "Longhaul %s — worker on task queue %s at %s (version %s), model %s, memory %s%s\n", version(), cfg.TaskQueue, cfg.TemporalAddress, v, redact.URLs(cfg.LLMBaseURL), memoryLine(cfg, mem), metricsNote(maddr))
	return runWorkerVersion(ctx, w, c, v, cfg.WorkerPromote, log)
}

// runWorkerVersion runs w until ctx ends and, when promote is set, makes
// its version current once it polls. A worker whose version cannot become
// current stops with the reason, so a rollout that cannot finish shows as
// failing new workers while the old ones keep serving.
func runWorkerVersion(ctx context.Context, w sdkworker.Worker, c client.Client, v worker.Versioning, promote bool, log *slog.Logger) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- w.Run(interruptOn(ctx)) }()
	promoted := make(chan error, 1)
	if promote {
		go func() { promoted <- promoteWorker(ctx, c, v, log) }()
	}
	select {
	case err := <-ran:
		return err
	case err := <-promoted:
		if err != nil && ctx.Err() == nil {
			cancel()
			<-ran
			return err
		}
		return <-ran
	}
}

// versioning is the worker deployment version this process's worker polls
// as: LONGHAUL_WORKER_DEPLOYMENT, with LONGHAUL_WORKER_BUILD_ID or else
// the version this binary reports.
func versioning(cfg config.Config, log *slog.Logger) worker.Versioning {
	v := worker.Versioning{Deployment: cfg.WorkerDeployment, BuildID: cfg.WorkerBuildID, Pinned: cfg.WorkerVersioning == config.VersioningPinned}
	if v.BuildID == "" {
		v.BuildID = version()
	}
	if v.Enabled() && v.BuildID == develVersion {
		log.Warn("this build has no version: every such build is one worker version, so a deploy of one moves no run; set LONGHAUL_WORKER_BUILD_ID (e.g. the image tag or commit)", "deployment", v.Deployment, "versioning", cfg.WorkerVersioning)
	}
	return v
}

// promoteWorker makes v current (see worker.Promote) and says so.
func promoteWorker(ctx context.Context, c client.Client, v worker.Versioning, log *slog.Logger) error {
	if !v.Enabled() {
		return nil
	}
	start := time.Now()
	if err := worker.Promote(ctx, c, v); err != nil {
		return fmt.Errorf("LONGHAUL_WORKER_DEPLOYMENT: %w (set LONGHAUL_WORKER_PROMOTE=false when an operator or the Temporal Worker Controller promotes versions, or LONGHAUL_WORKER_DEPLOYMENT=off for unversioned workers)", err)
	}
	log.Info("worker version is current", "deployment", v.Deployment, "build_id", v.BuildID, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

func runAPI(ctx context.Context, cfg config.Config, log *slog.Logger, out io.Writer) error {
	if err := needRemote(cfg, "api"); err != nil {
		return err
	}
	m, maddr, err := startMetrics(ctx, cfg, log)
	if err != nil {
		return err
	}
	cat, topts, c, err := connect(ctx, cfg, log, "api", m)
	if err != nil {
		return err
	}
	defer c.Close()
	blobs, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return fmt.Errorf("LONGHAUL_DATABASE_URL: %w", err)
	}
	defer blobs.Close()
	mem, closeMem, err := openMemory(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer closeMem()
	topts.Memory = mem
	forget, closeForget, err := forgetter(ctx, cfg, mem)
	if err != nil {
		return err
	}
	defer closeForget()
	bus, closeBus, err := openBus(cfg, nil, "longhaul api", log)
	if err != nil {
		return err
	}
	defer closeBus()
	fmt.Fprintf(out, "Longhaul %s — API on http://%s/v1 against %s, NATS %s%s\n", version(), cfg.HTTPAddr, cfg.TemporalAddress, redact.URLs(cfg.NATSURL), metricsNote(maddr))
	return serveAPI(ctx, newAPI(cfg, c, cat, topts, blobs, bus, log, false, m, forget), cfg.HTTPAddr, log)
}

// needRemote checks the settings the worker and api commands cannot start
// without: an external Temporal and NATS.
func needRemote(cfg config.Config, command string) error {
	if cfg.TemporalAddress == "" {
		return fmt.Errorf("LONGHAUL_TEMPORAL_ADDRESS is required for longhaul %s (host:port of a Temporal frontend, e.g. one started by longhaul server)", command)
	}
	if cfg.NATSURL == "" {
		return fmt.Errorf("LONGHAUL_NATS_URL is required for longhaul %s (a NATS server, e.g. nats://%s started by longhaul server)", command, config.DefaultServerNATSAddr)
	}
	return nil
}

// connect is the start of the worker and api commands: they need an
// external Temporal, the agent files and a client.
func connect(ctx context.Context, cfg config.Config, log *slog.Logger, command string, m *metrics.Metrics) (*skills.Catalog, toolset.Options, client.Client, error) {
	if err := needRemote(cfg, command); err != nil {
		return nil, toolset.Options{}, nil, err
	}
	cat, topts, err := loadCatalog(cfg, log)
	if err != nil {
		return nil, toolset.Options{}, nil, err
	}
	c, err := dial(ctx, cfg, cfg.TemporalAddress, log, m)
	if err != nil {
		return nil, toolset.Options{}, nil, err
	}
	return cat, topts, c, nil
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
		SearchAttributes: workflows.SearchAttributes(),
		Logger:           log,
	})
	if err != nil {
		return nil, err
	}
	log.Info("embedded Temporal server started", "address", srv.FrontendAddr(), "ui", srv.UIURL(),
		"data_dir", cfg.DataDir, "log", cfg.DataDir+"/"+devserver.LogFile, "took", time.Since(start).Round(time.Millisecond))
	return srv, nil
}

// startMetrics serves the process's metrics on LONGHAUL_METRICS_ADDR and
// returns them with the address bound; nil and "" when the setting is off.
func startMetrics(ctx context.Context, cfg config.Config, log *slog.Logger) (*metrics.Metrics, string, error) {
	if cfg.MetricsAddr == metrics.Off {
		return nil, "", nil
	}
	help := maps.Clone(activities.MetricHelp)
	maps.Copy(help, workflows.MetricHelp)
	m, err := metrics.New(help)
	if err != nil {
		return nil, "", err
	}
	addr, err := m.Serve(ctx, cfg.MetricsAddr, log)
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

// tuning sizes the worker from the settings.
func tuning(cfg config.Config) worker.Tuning {
	return worker.Tuning{ActivitySlots: cfg.WorkerActivitySlots, WorkflowSlots: cfg.WorkerWorkflowSlots, Pollers: cfg.WorkerPollers, StickyCache: cfg.WorkerStickyCache}
}

// dial connects to Temporal, failing fast with a clear message when it does
// not answer.
func dial(ctx context.Context, cfg config.Config, addr string, log *slog.Logger, m *metrics.Metrics) (client.Client, error) {
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	opts := client.Options{
		HostPort:  addr,
		Namespace: cfg.TemporalNamespace,
		Logger:    sdklog.NewStructuredLogger(log.With("component", "temporal-sdk")),
	}
	if m != nil {
		opts.MetricsHandler = m.Temporal
	}
	tracer, err := tracing.Interceptor()
	if err != nil {
		return nil, err
	}
	opts.Interceptors = []interceptor.ClientInterceptor{tracer}
	// TLS and the API key are for a real cluster; the embedded server
	// speaks plain gRPC on its loopback.
	if addr == cfg.TemporalAddress {
		tc, err := cfg.TemporalTLSConfig()
		if err != nil {
			return nil, err
		}
		opts.ConnectionOptions.TLS = tc
		if cfg.TemporalAPIKey != "" {
			opts.Credentials = client.NewAPIKeyStaticCredentials(cfg.TemporalAPIKey)
		}
	}
	c, err := client.DialContext(dctx, opts)
	if err != nil {
		return nil, fmt.Errorf("cannot reach Temporal at %s (LONGHAUL_TEMPORAL_ADDRESS): %w", addr, err)
	}
	return c, nil
}

// loadCatalog loads the agents and skills and the MCP configuration, and
// checks the skills' tool names against the tools a worker can have.
func loadCatalog(cfg config.Config, log *slog.Logger) (*skills.Catalog, toolset.Options, error) {
	opts := toolset.Options{
		SearchURL: cfg.SearchURL,
		Fetch:     tools.WebFetchOptions{AllowedPorts: cfg.FetchPorts},
	}
	if cfg.MCPConfig != "" {
		mc, err := mcp.LoadConfig(cfg.MCPConfig)
		if err != nil {
			return nil, opts, fmt.Errorf("LONGHAUL_MCP_CONFIG: %w", err)
		}
		opts.MCP = &mc
	}
	cat, err := skills.LoadDefault(cfg.SkillsDir)
	if err != nil {
		return nil, opts, err
	}
	if err := cat.Validate(toolset.Known(opts)); err != nil {
		return nil, opts, err
	}
	ids := []string{}
	for _, a := range cat.Agents() {
		ids = append(ids, a.ID)
	}
	log.Info("agents loaded", "agents", ids, "skills_dir", cfg.SkillsDir)
	return cat, opts, nil
}

func newActivities(cfg config.Config, cat *skills.Catalog, reg *tools.Registry, blobs store.Store, mem *memory.Service, bus *natsbus.Bus, c client.Client, log *slog.Logger) *activities.Activities {
	a := activities.New(activities.LLMConfig{BaseURL: cfg.LLMBaseURL, APIKey: cfg.LLMAPIKey, Model: cfg.LLMModel}, cat, reg, log)
	a.MaxToolOutput = cfg.MaxToolChars
	a.RestoreChars = cfg.RestoreChars
	a.MaxOutputBytes = cfg.MaxModelOutput
	a.IdleTimeout = cfg.ModelIdleTimeout
	a.Blobs = blobs
	a.Memory = mem
	a.Bus = bus
	a.Runs = c
	a.Updates = c
	return a
}

// scheduleRetention makes sure the retention job is scheduled (see
// worker.ScheduleRetention), with LONGHAUL_RETENTION or, when that is 0,
// the namespace's workflow retention. A failure is logged, not fatal: the
// worker serves runs without it, and the next worker to start tries again.
func scheduleRetention(ctx context.Context, cfg config.Config, c client.Client, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	retention, from := cfg.Retention, "LONGHAUL_RETENTION"
	if retention == 0 {
		var err error
		if retention, err = worker.NamespaceRetention(ctx, c, cfg.TemporalNamespace); err != nil {
			log.Warn("stored blobs are not cleaned up: cannot read the namespace's retention", "error", err)
			return
		}
		from = "the namespace's workflow retention"
	}
	if retention <= 0 {
		log.Info("stored blobs are kept: the namespace keeps closed runs without a limit and LONGHAUL_RETENTION is 0")
		return
	}
	if err := worker.ScheduleRetention(ctx, c, cfg.TaskQueue, retention); err != nil {
		log.Warn("stored blobs are not cleaned up: cannot schedule the retention job", "error", err)
		return
	}
	log.Info("stored blobs of closed runs are deleted after the retention", "retention", retention, "from", from,
		"schedule", workflows.RetentionScheduleID(cfg.TaskQueue))
}

// openBus connects to NATS — the embedded server in-process, or
// LONGHAUL_NATS_URL — for the live deltas of running calls. A NATS that is
// down is retried in the background: streams then carry durable events only.
func openBus(cfg config.Config, embedded *natsbus.Server, name string, log *slog.Logger) (*natsbus.Bus, func(), error) {
	nc, err := natsbus.Connect(natsbus.ClientOptions{
		URL: cfg.NATSURL, Name: name, InProcess: embedded,
		CredsFile: cfg.NATSCreds, TLSCA: cfg.NATSTLSCA, TLSCert: cfg.NATSTLSCert, TLSKey: cfg.NATSTLSKey,
	}, log.With("component", "nats"))
	if err != nil {
		return nil, nil, fmt.Errorf("LONGHAUL_NATS_URL: %w", err)
	}
	if !nc.IsConnected() {
		log.Warn("NATS is not reachable yet; retrying in the background (streams carry whole answers until it is)", "url", redact.URLs(cfg.NATSURL))
	}
	return natsbus.New(nc, natsbus.NewSubjects(cfg.NATSSubjectPrefix, cfg.TemporalNamespace), log), func() { nc.Close() }, nil
}

// openMemory opens long-term memory on LONGHAUL_DATABASE_URL with the
// embedder LONGHAUL_EMBED_MODEL names; with none, memory is off (nil) and
// start-up says so once.
func openMemory(ctx context.Context, cfg config.Config, log *slog.Logger) (*memory.Service, func(), error) {
	if cfg.EmbedModel == "" {
		log.Info("long-term memory is off: LONGHAUL_EMBED_MODEL is not set (agents' memory: and remember: do nothing, the memory tools are not offered, /v1/memories answers 404)")
		return nil, func() {}, nil
	}
	st, err := memory.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, nil, fmt.Errorf("LONGHAUL_DATABASE_URL (memory): %w", err)
	}
	base, key := cfg.Embedder()
	svc := &memory.Service{
		Store: st, Embedder: memory.NewOpenAIEmbedder(base, key, cfg.EmbedModel, nil),
		K: cfg.MemoryK, Threshold: cfg.MemoryThreshold,
	}
	backend := ""
	if b, ok := st.(memory.Backend); ok {
		backend = b.Backend()
	}
	log.Info("long-term memory is on", "embed_model", cfg.EmbedModel, "embed_url", redact.URLs(base), "store", backend,
		"k", cfg.MemoryK, "threshold", cfg.MemoryThreshold)
	return svc, func() { st.Close() }, nil
}

// forgetter is what deleting a conversation also deletes: the memories
// extracted from it. With memory off it is still the memory store, so a
// chat deleted now takes the memories it left while memory was on.
func forgetter(ctx context.Context, cfg config.Config, mem *memory.Service) (api.ConversationForgetter, func(), error) {
	if mem != nil {
		return mem.Store, func() {}, nil
	}
	st, err := memory.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, nil, fmt.Errorf("LONGHAUL_DATABASE_URL (memory): %w", err)
	}
	return st, func() { st.Close() }, nil
}

// memoryLine is the start-up line of long-term memory.
func memoryLine(cfg config.Config, mem *memory.Service) string {
	if mem == nil {
		return "off (LONGHAUL_EMBED_MODEL is not set)"
	}
	base, _ := cfg.Embedder()
	line := cfg.EmbedModel + " at " + redact.URLs(base)
	if b, ok := mem.Store.(memory.Backend); ok {
		line += ", " + b.Backend()
	}
	return line
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

func newAPI(cfg config.Config, c client.Client, cat *skills.Catalog, topts toolset.Options, blobs store.Store, bus *natsbus.Bus, log *slog.Logger, eager bool, m *metrics.Metrics, forget api.ConversationForgetter) *api.Server {
	keys, _ := cfg.Keys() // checked by Validate
	if len(keys) == 0 {
		log.Warn("NO API KEYS: LONGHAUL_API_KEYS and LONGHAUL_PROXY_KEYS are empty, so the API serves every caller and trusts the user headers of anyone who sends them; every caller can read every user's runs. Fine for local development only.")
	}
	names := make([]string, 0, len(keys))
	for _, k := range keys {
		if k.Proxy {
			names = append(names, k.Name+" (proxy)")
		} else {
			names = append(names, k.Name)
		}
	}
	if len(keys) > 0 {
		log.Info("API keys", "keys", names, "signed_user_header", cfg.OpenWebUIJWTSecret != "")
	}
	var reg prometheus.Registerer
	if m != nil {
		reg = m.Registry
	}
	return api.New(api.Config{
		Metrics:         reg,
		TaskQueue:       cfg.TaskQueue,
		Keys:            keys,
		JWTSecret:       []byte(cfg.OpenWebUIJWTSecret),
		Headers:         cfg.Headers(),
		Limits:          api.Limits{Runs: cfg.MaxRuns, Streams: cfg.MaxStreams},
		MaxBodyBytes:    cfg.MaxBodyBytes,
		RequestTimeout:  cfg.RequestTimeout,
		TemporalTimeout: cfg.TemporalTimeout,
		ModelTimeout:    cfg.LLMTimeout,
		HistoryLimit:    cfg.HistoryLimit,
		ApprovalTimeout: cfg.ApprovalTimeout,
		EagerStart:      eager,
		Blobs:           blobs,
		Deltas:          bus,
		Namespace:       cfg.TemporalNamespace,
		MCPApproval:     mcpApproval(topts.MCP),
		Memory:          topts.Memory,
		Forget:          forget,
	}, c, cat, log)
}

// mcpApproval is api.Config.MCPApproval for an MCP configuration.
func mcpApproval(mc *mcp.Config) func(string) bool {
	if mc == nil {
		return nil
	}
	return mc.RequiresApproval
}

// serveAPI serves until ctx ends, then shuts down gracefully: open requests
// get a few seconds, runs go on in Temporal.
func serveAPI(ctx context.Context, s *api.Server, addr string, log *slog.Logger) error {
	errc := make(chan error, 1)
	go func() { errc <- s.Listen(addr) }()
	select {
	case err := <-errc:
		return fmt.Errorf("API on %s: %w", addr, err)
	case <-ctx.Done():
	}
	log.Info("shutting down: runs in flight stay in Temporal")
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(sctx); err != nil {
		log.Warn("API shutdown", "error", err)
	}
	return nil
}

// interruptOn turns ctx's end into the channel sdkworker.Worker.Run wants.
func interruptOn(ctx context.Context) <-chan any {
	ch := make(chan any, 1)
	go func() { <-ctx.Done(); ch <- struct{}{} }()
	return ch
}
