//go:build unix

// Package proctest runs the programs of a multi-process test (the longhaul
// binary, Debian's nats-server, Temporal's own binaries) as child
// processes: each in a process group of its own, killed with everything it
// started when the test ends, whatever happens, so no process outlives the
// test. test/chaos and test/stack use it; StartDev runs `longhaul dev` as
// a newcomer does, for test/a2a and test/mcpserver (DevEnv is also the
// environment cmd/longhaul's own tests start it with). Missing and NeedNode skip a test
// whose outside program is not installed, or fail it when CI is set.
package proctest

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// RepoRoot returns the module's root: the nearest directory above the
// working directory (the test's package) that holds go.mod.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the package directory")
		}
		dir = parent
	}
}

// NeedNode skips the test without node, or without one of the npm
// packages pkgs in the node_modules of dir (a folder of the repository,
// whose package-lock.json make test-deps installs with npm ci --prefix
// dir), and says how to install them; with CI set it fails the test
// instead (see Missing).
func NeedNode(t testing.TB, dir string, pkgs ...string) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		Missing(t, "node is not installed: make test-deps installs it with the packages of "+dir)
	}
	for _, p := range pkgs {
		if _, err := os.Stat(filepath.Join(RepoRoot(t), dir, "node_modules", p, "package.json")); err != nil {
			Missing(t, dir+"/node_modules lacks "+p+": run make test-deps (npm ci --prefix "+dir+")")
		}
	}
}

// Binary is the longhaul binary a test runs: the one the environment
// variable envVar names when set (make chaos tests bin/longhaul, the binary
// make build ships), else one built from ./cmd/longhaul into a temporary
// directory, with -race when the test has it: the build then reuses the
// packages the race-enabled test build compiled, and a data race in any
// process fails the test (the process exits).
func Binary(t testing.TB, envVar string) string {
	t.Helper()
	return BinaryIn(t, envVar, "")
}

// BinaryIn is Binary, built into dir (a temporary directory of the test's
// when dir is ""): a package whose tests share one binary builds it into a
// directory of its own once.
func BinaryIn(t testing.TB, envVar, dir string) string {
	t.Helper()
	if b := os.Getenv(envVar); envVar != "" && b != "" {
		abs, err := filepath.Abs(b)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(abs); err != nil {
			t.Fatalf("%s: %v", envVar, err)
		}
		return abs
	}
	args := []string{}
	if RaceEnabled {
		args = append(args, "-race")
	}
	return BuildIn(t, dir, "longhaul", filepath.Join(RepoRoot(t), "cmd", "longhaul"), args...)
}

// Build builds the main package pkg (a directory or an import path of the
// module's build list) with go build and flags into a temporary directory,
// as name, and returns its path.
func Build(t testing.TB, name, pkg string, flags ...string) string {
	t.Helper()
	return BuildIn(t, "", name, pkg, flags...)
}

// BuildIn is Build into dir (a temporary directory of the test's when dir
// is "").
func BuildIn(t testing.TB, dir, name, pkg string, flags ...string) string {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	bin := filepath.Join(dir, name)
	start := time.Now()
	args := append(append([]string{"build", "-o", bin}, flags...), pkg)
	cmd := exec.Command("go", args...)
	cmd.Dir = RepoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("built %s %s in %v", name, strings.Join(flags, " "), time.Since(start).Round(100*time.Millisecond))
	return bin
}

// NATSBinary is Debian's nats-server, the external NATS of the tests.
func NATSBinary(t testing.TB) string {
	t.Helper()
	if bin, err := exec.LookPath("nats-server"); err == nil {
		return bin
	}
	const debian = "/usr/sbin/nats-server"
	if _, err := os.Stat(debian); err != nil {
		t.Fatalf("nats-server is not installed (neither on PATH nor %s); make test-deps installs Debian's nats-server", debian)
	}
	return debian
}

// Proc is one run of a program. Its output goes to a log file, which a
// restart of the same role appends to.
type Proc struct {
	Name   string
	Cmd    *exec.Cmd
	exited chan struct{}
	// ready tells, for WaitReady, whether the process serves; readyWhat
	// names what WaitReady waits for.
	ready     func() bool
	readyWhat string
}

// Start runs bin with args in a process group of its own, with exactly env
// as its environment (pass os.Environ() and more to inherit the test's),
// its output appended to logPath. The test's cleanup kills the group with
// SIGKILL whatever happens.
func Start(t testing.TB, name, bin, logPath string, env []string, args ...string) *Proc {
	t.Helper()
	return StartIn(t, "", name, bin, logPath, env, args...)
}

// StartIn is Start with dir as the working directory ("" for the test's).
func StartIn(t testing.TB, dir, name, bin, logPath string, env []string, args ...string) *Proc {
	t.Helper()
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "\n===== %s: start %s at %s =====\n", name, strings.Join(args, " "), time.Now().Format(time.TimeOnly))
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	p := &Proc{Name: name, Cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(p.exited)
	}()
	t.Cleanup(p.Kill)
	return p
}

// Exited is closed when the process has exited.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// Kill ends the process group with SIGKILL, as a crash would, and waits
// for the process.
func (p *Proc) Kill() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL)
	<-p.exited
}

// Stop asks the process to stop with SIGTERM and waits up to grace for it,
// then kills it. It reports how the process ended.
func (p *Proc) Stop(grace time.Duration) (string, error) {
	if err := syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGTERM); err != nil {
		return "", err
	}
	select {
	case <-p.exited:
		return p.Cmd.ProcessState.String(), nil
	case <-time.After(grace):
		p.Kill()
		return "", fmt.Errorf("%s did not stop within %v of SIGTERM; killed", p.Name, grace)
	}
}

// Alive reports whether the process still runs.
func (p *Proc) Alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// WaitFor polls ok every 50 ms until it holds, ctx ends or the process
// exits.
func (p *Proc) WaitFor(ctx context.Context, what string, ok func() bool) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !ok() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: waiting for %s: %w", p.Name, what, ctx.Err())
		case <-p.exited:
			return fmt.Errorf("%s exited (%v) while waiting for %s", p.Name, p.Cmd.ProcessState, what)
		case <-tick.C:
		}
	}
	return nil
}

// Wait waits until the process exits or ctx ends, and returns its exit
// error (nil for a status of 0).
func (p *Proc) Wait(ctx context.Context) error {
	select {
	case <-p.exited:
		if !p.Cmd.ProcessState.Success() {
			return fmt.Errorf("%s: %v", p.Name, p.Cmd.ProcessState)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s: waiting for it to exit: %w", p.Name, ctx.Err())
	}
}

// LogContains reports whether the log file holds s after byte offset from.
func LogContains(path string, from int64, s string) bool {
	b, err := os.ReadFile(path)
	if err != nil || int64(len(b)) < from {
		return false
	}
	return strings.Contains(string(b[from:]), s)
}

// LogSize is the log file's current size, so a wait looks only at what a
// new run of the process writes.
func LogSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// Ready reports whether GET url answers 200.
func Ready(url string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == 200
}

// Tail returns the last n lines of a log file.
func Tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}
