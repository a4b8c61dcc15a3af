package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/longhaul-dev/longhaul/internal/config"
)

// commandUsage is each subcommand's own usage line, what `longhaul CMD
// --help` prints (the settings table follows for the commands that read
// settings).
var commandUsage = map[string]string{
	"dev":      "longhaul dev\n  the embedded Temporal server + Web UI, a worker and the API in one process (make run)\n",
	"server":   "longhaul server\n  the embedded Temporal server (+ Web UI) and NATS, for workers and APIs elsewhere\n",
	"worker":   "longhaul worker\n  a worker, against LONGHAUL_TEMPORAL_ADDRESS (run as many as you like)\n",
	"api":      "longhaul api\n  the HTTP API, against LONGHAUL_TEMPORAL_ADDRESS\n",
	"setup":    "longhaul setup\n  register Longhaul's search attributes in LONGHAUL_TEMPORAL_NAMESPACE of the cluster at\n  LONGHAUL_TEMPORAL_ADDRESS, once (safe to repeat)\n",
	"health":   "longhaul health\n  exit 0 when the API at LONGHAUL_HTTP_ADDR answers /readyz (a container healthcheck)\n",
	"settings": "longhaul settings\n  print the settings as a Markdown table (docs/settings.md)\n",
	"version":  "longhaul version\n  print the version\n",
}

// readsSettings are the commands whose --help lists the settings.
var readsSettings = map[string]bool{"dev": true, "server": true, "worker": true, "api": true, "setup": true, "health": true}

// commandArgs checks the arguments of a subcommand that takes none but
// --help. It returns stop when the command must not run, with its exit
// status: 0 after --help (the usage on stdout, nothing started), 2 for
// an unknown flag or a stray argument (the usage on stderr).
func commandArgs(cmd string, args []string, stdout, stderr io.Writer) (code int, stop bool) {
	fs := flag.NewFlagSet("longhaul "+cmd, flag.ContinueOnError)
	return parseFlags(fs, args, func(w io.Writer) {
		fmt.Fprint(w, "Usage:\n  "+commandUsage[cmd])
		if readsSettings[cmd] {
			fmt.Fprint(w, "\nSettings (environment variables, read once at start):\n")
			_ = config.Usage(w)
		}
	}, stdout, stderr)
}

// parseFlags parses args into fs the way every subcommand does: --help
// (or -h) prints usage to stdout and stops with 0; an unknown flag or a
// stray argument prints the problem and usage to stderr and stops with 2.
func parseFlags(fs *flag.FlagSet, args []string, usage func(io.Writer), stdout, stderr io.Writer) (code int, stop bool) {
	fs.SetOutput(stderr)
	fs.Usage = func() {}
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		usage(stdout)
		if hasFlags(fs) {
			fmt.Fprintln(stdout, "\nFlags:")
			fs.SetOutput(stdout)
			fs.PrintDefaults()
		}
		return 0, true
	case err != nil:
		// The flag package has written the problem already.
		usage(stderr)
		return 2, true
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "%s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		usage(stderr)
		return 2, true
	}
	return 0, false
}

// hasFlags says whether fs defines any flag.
func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}
