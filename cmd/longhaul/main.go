// Command longhaul is a durable agent engine: an OpenAI-compatible chat API
// whose every request is a Temporal workflow. See `longhaul --help`.
//
// This package is the process wiring: main.go reads the command line and the
// settings; dev.go runs everything in one process (and the embedded server);
// worker.go builds a worker (workflows, activities, tools); api.go builds the
// HTTP API; connect.go dials Temporal and opens the stores, NATS and the
// catalog both share; ops.go holds setup, health and the metrics endpoint.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/longhaul-dev/longhaul/internal/config"
	"github.com/longhaul-dev/longhaul/internal/redact"
	"github.com/longhaul-dev/longhaul/internal/tracing"
	"github.com/longhaul-dev/longhaul/worker"
)

// Version is set at build time with -ldflags "-X main.Version=v1.2.3".
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
  longhaul eval      export recorded runs as cases, replay them with pinned tool results and grade
                     them (longhaul eval for its flags; see docs/evals.md)
  longhaul settings  print the settings below as a Markdown table (docs/settings.md)
  longhaul version   print the version

Settings (environment variables, read once at start):
`

func main() { os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr)) }

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
	case "--version":
		fmt.Fprintln(stdout, "longhaul", version())
		return 0
	case "eval":
		return evalCommand(args[1:], stdout, stderr)
	}
	if _, known := commandUsage[args[0]]; !known {
		fmt.Fprintf(stderr, "longhaul: unknown command %q (see longhaul --help)\n", args[0])
		return 2
	}
	if code, stop := commandArgs(args[0], args[1:], stdout, stderr); stop {
		return code
	}
	switch args[0] {
	case "version":
		fmt.Fprintln(stdout, "longhaul", version())
		return 0
	case "settings":
		if err := config.Markdown(stdout); err != nil {
			fmt.Fprintf(stderr, "longhaul: %s\n", err)
			return 1
		}
		return 0
	case "health":
		return health(stderr)
	}
	return runCommand(args[0], stdout, stderr)
}

// runCommand runs one of the long-running commands (and setup): it reads
// the settings, then runs the command until it ends or a signal stops it.
func runCommand(cmd string, stdout, stderr io.Writer) int {
	cfg, log, ctx, done, ok := startCommand(cmd, stderr)
	if !ok {
		return 2
	}
	defer done()
	// Spans go out over OTLP when the standard OTEL_* variables say where.
	shutdownTracing, err := tracing.Setup(ctx, "longhaul-"+cmd)
	if err != nil {
		fmt.Fprintf(stderr, "longhaul: %s\n", redact.URLs(err.Error()))
		return 2
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = shutdownTracing(sctx)
	}()
	if cfg.PprofAddr != "" && cmd != "setup" {
		addr, err := startPprof(ctx, cfg.PprofAddr, log)
		if err != nil {
			fmt.Fprintf(stderr, "longhaul: %s\n", err)
			return 1
		}
		log.Info("profiles on http://"+addr+"/debug/pprof/", "addr", addr)
	}
	run := map[string]func(context.Context, config.Config, *slog.Logger, io.Writer) error{
		"dev": runDev, "server": runServer, "worker": runWorker, "api": runAPI, "setup": runSetup,
	}[cmd]
	if err := run(ctx, cfg, log, stdout); err != nil {
		// Plain text, one problem a line, so an operator reads it as is.
		fmt.Fprintf(stderr, "longhaul %s: %s\n", cmd, redact.URLs(err.Error()))
		return 1
	}
	return 0
}

// startCommand reads the settings and sets up what every command runs
// under: the logger, and a context the first signal cancels (see
// stopOnSignals). done releases both; ok is false, the problem written to
// stderr, when the settings do not load.
func startCommand(cmd string, stderr io.Writer) (cfg config.Config, log *slog.Logger, ctx context.Context, done func(), ok bool) {
	cfg, err := loadConfig()
	if err != nil {
		fmt.Fprintf(stderr, "longhaul: %s\n", redact.URLs(err.Error()))
		return cfg, nil, nil, nil, false
	}
	log = newLogger(stderr, cfg.LogLevel)
	ctx, stop := context.WithCancel(context.Background())
	release := stopOnSignals(cmd, stop, log)
	return cfg, log, ctx, func() { release(); stop() }, true
}

// loadConfig reads the settings, with the one check that is the command
// line's own: a negative retention.
func loadConfig() (config.Config, error) {
	cfg, err := config.Load()
	if err == nil && cfg.Retention < 0 {
		err = fmt.Errorf("%s_RETENTION: must not be negative (0 keeps blobs as long as the namespace keeps runs)", config.Prefix)
	}
	return cfg, err
}

// stopOnSignals calls stop on the first SIGINT or SIGTERM, which stops
// gracefully (a worker lets running calls finish for up to
// worker.DrainTimeout); a second stops the process at once. The function it
// returns stops listening.
func stopOnSignals(cmd string, stop func(), log *slog.Logger) (release func()) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	returned := make(chan struct{})
	go func() {
		select {
		case <-sigs:
			stop()
		case <-returned:
			return
		}
		if cmd == "dev" || cmd == "worker" {
			log.Info("stopping: running model and tool calls get " + worker.DrainTimeout.String() + " to finish; signal again to stop at once (runs in flight stay in Temporal)")
		}
		select {
		case <-sigs:
			log.Warn("stopping at once: runs in flight resume when a worker is back")
			os.Exit(1)
		case <-returned:
		}
	}()
	return func() {
		close(returned)
		signal.Stop(sigs)
	}
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

// interruptOn turns ctx's end into the channel sdkworker.Worker.Run wants.
func interruptOn(ctx context.Context) <-chan any {
	ch := make(chan any, 1)
	go func() { <-ctx.Done(); ch <- struct{}{} }()
	return ch
}
