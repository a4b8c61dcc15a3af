//go:build unix

package proctest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The helpers below start the programs of a scaled-out Longhaul, as
// test/chaos and bench's cluster run it, and wait until each serves.

// StartNATS starts nats-server bin listening on addr, with its monitoring
// endpoint on monAddr; its WaitReady waits until it accepts connections.
func StartNATS(t testing.TB, bin, logPath string, env []string, addr, monAddr string) (*Proc, error) {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	_, monPort, err := net.SplitHostPort(monAddr)
	if err != nil {
		return nil, err
	}
	p := Start(t, "nats", bin, logPath, env, "-a", host, "-p", port, "-m", monPort)
	p.readyWhat, p.ready = "NATS to accept connections", func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	}
	return p, nil
}

// StartWorker starts `longhaul worker` (bin) as name; its WaitReady waits
// until the worker says, in what it adds to its log, that it runs.
func StartWorker(t testing.TB, name, bin, logPath string, env []string) *Proc {
	t.Helper()
	from := LogSize(logPath)
	p := Start(t, name, bin, logPath, env, "worker")
	p.readyWhat, p.ready = "the worker", func() bool { return LogContains(logPath, from, "worker on task queue") }
	return p
}

// StartAPI starts `longhaul api` (bin) as name, listening on addr; its
// WaitReady waits until /readyz says Temporal answers and a worker polls.
func StartAPI(t testing.TB, name, bin, logPath string, env []string, addr string) *Proc {
	t.Helper()
	p := Start(t, name, bin, logPath, append(slices.Clone(env), "LONGHAUL_HTTP_ADDR="+addr), "api")
	p.readyWhat, p.ready = "the API to be ready", func() bool { return Ready("http://" + addr + "/readyz") }
	return p
}

// ServeAPI starts `longhaul api` as StartAPI does, on addr (on pick() when
// addr is ""), and waits until it serves. A port picked free stays free only until someone binds it, and
// another process on the host (a test package running beside this one, the
// services of a Temporal server) may bind it first: then the API exits at
// once saying the address is in use, and ServeAPI starts it again on
// pick(), up to three tries. It returns the address the API serves on.
func ServeAPI(ctx context.Context, t testing.TB, name, bin, logPath string, env []string, addr string, pick func() string) (*Proc, string, error) {
	t.Helper()
	if addr == "" {
		addr = pick()
	}
	for try := 1; ; try++ {
		from := LogSize(logPath)
		p := StartAPI(t, name, bin, logPath, env, addr)
		err := p.WaitReady(ctx)
		if err == nil || try == 3 || !LogContains(logPath, from, "address already in use") {
			return p, addr, err
		}
		t.Logf("%s: %s was taken before the API could bind it; starting it on another address", name, addr)
		addr = pick()
	}
}

// WaitReady waits, as WaitFor does, until the process serves, as the
// function that started it (StartNATS, StartWorker, StartAPI) tells; for
// a process started otherwise it returns at once.
func (p *Proc) WaitReady(ctx context.Context) error {
	if p.ready == nil {
		return nil
	}
	return p.WaitFor(ctx, p.readyWhat, p.ready)
}

// ExitedByThemselves reports the processes of procs (nil ones skipped)
// that have exited, which a test that did not kill them takes for a crash.
func ExitedByThemselves(procs ...*Proc) error {
	var errs []error
	for _, p := range procs {
		if p != nil && !p.Alive() {
			errs = append(errs, fmt.Errorf("%s exited by itself: %v", p.Name, p.Cmd.ProcessState))
		}
	}
	return errors.Join(errs...)
}

// TailAll returns the last n lines of every log file in dir, each after a
// line naming it, for the message of a failed test.
func TailAll(dir string, n int) string {
	var b strings.Builder
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		fmt.Fprintf(&b, "\n----- %s (last %d lines) -----\n%s", e.Name(), n, Tail(filepath.Join(dir, e.Name()), n))
	}
	return b.String()
}
