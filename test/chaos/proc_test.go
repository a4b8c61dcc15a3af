//go:build unix

package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// binary is the longhaul binary the test runs: LONGHAUL_CHAOS_BIN when set
// (make chaos tests bin/longhaul, the binary make build ships), else one
// built into a temporary directory, with -race when the test has it: the
// build then reuses the packages the race-enabled test build compiled, and
// a data race in any process fails the test (the process exits).
func binary(t *testing.T) string {
	t.Helper()
	if b := os.Getenv("LONGHAUL_CHAOS_BIN"); b != "" {
		abs, err := filepath.Abs(b)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(abs); err != nil {
			t.Fatalf("LONGHAUL_CHAOS_BIN: %v", err)
		}
		return abs
	}
	bin := filepath.Join(t.TempDir(), "longhaul")
	start := time.Now()
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	out, err := exec.Command("go", append(args, "../../cmd/longhaul")...).CombinedOutput()
	if err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	t.Logf("built %s (race detector: %v) in %v", bin, raceEnabled, time.Since(start).Round(100*time.Millisecond))
	return bin
}

// natsBinary is Debian's nats-server, the external NATS of the test.
func natsBinary(t *testing.T) string {
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

// proc is one run of a longhaul command. Its output goes to a log file
// shared by every run of the same role, so a restart appends.
type proc struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{}
}

// start runs bin with args and env in a process group of its own. The
// test's cleanup kills the group with SIGKILL whatever happens, so no
// process outlives the test.
func start(t *testing.T, name, bin, logPath string, env []string, args ...string) *proc {
	t.Helper()
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "\n===== %s: start %s at %s =====\n", name, strings.Join(args, " "), time.Now().Format(time.TimeOnly))
	cmd := exec.Command(bin, args...)
	// No metrics endpoint unless env asks: the processes share one host.
	cmd.Env = append(append(os.Environ(), "LONGHAUL_METRICS_ADDR=off"), env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	p := &proc{name: name, cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(p.exited)
	}()
	t.Cleanup(p.kill)
	return p
}

// kill ends the process group with SIGKILL, as a crash would, and waits
// for the process.
func (p *proc) kill() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.exited
}

// stop asks the process to stop with SIGTERM and waits up to grace for it,
// then kills it. It reports how the process ended.
func (p *proc) stop(grace time.Duration) (string, error) {
	if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM); err != nil {
		return "", err
	}
	select {
	case <-p.exited:
		return p.cmd.ProcessState.String(), nil
	case <-time.After(grace):
		p.kill()
		return "", fmt.Errorf("%s did not stop within %v of SIGTERM; killed", p.name, grace)
	}
}

// alive reports whether the process still runs.
func (p *proc) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// waitFor polls ok every 50 ms until it holds, ctx ends or the process
// exits.
func (p *proc) waitFor(ctx context.Context, what string, ok func() bool) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !ok() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: waiting for %s: %w", p.name, what, ctx.Err())
		case <-p.exited:
			return fmt.Errorf("%s exited (%v) while waiting for %s", p.name, p.cmd.ProcessState, what)
		case <-tick.C:
		}
	}
	return nil
}

// logContains reports whether the log file holds s after byte offset from.
func logContains(path string, from int64, s string) bool {
	b, err := os.ReadFile(path)
	if err != nil || int64(len(b)) < from {
		return false
	}
	return strings.Contains(string(b[from:]), s)
}

// logSize is the log file's current size, so a wait looks only at what a
// new run of the process writes.
func logSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// ready reports whether GET url answers 200.
func ready(url string) bool {
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

// tail returns the last n lines of a log file.
func tail(path string, n int) string {
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

// stack is the multi-process deployment under test: one `longhaul
// server`, workers and APIs, sharing a data directory.
type stack struct {
	t        *testing.T
	bin      string
	natsBin  string
	natsAddr string
	// natsMon is the address of the NATS monitoring endpoint.
	natsMon string
	logDir  string
	common  []string
	// apiAddrs are the APIs' listen addresses, one per API slot.
	apiAddrs []string
	mu       sync.Mutex
	server   *proc
	nats     *proc
	workers  []*proc
	apis     []*proc
}

func (s *stack) logPath(name string) string { return filepath.Join(s.logDir, name+".log") }

// startServer starts `longhaul server` and waits until its Temporal
// frontend serves.
func (s *stack) startServer(ctx context.Context) error {
	path := s.logPath("server")
	from := logSize(path)
	p := start(s.t, "server", s.bin, path, s.common, "server")
	s.mu.Lock()
	s.server = p
	s.mu.Unlock()
	return p.waitFor(ctx, "the Temporal server", func() bool { return logContains(path, from, "embedded Temporal server started") })
}

// startNATS starts the external NATS, Debian's nats-server, and waits until
// it accepts connections.
func (s *stack) startNATS(ctx context.Context) error {
	host, port, err := net.SplitHostPort(s.natsAddr)
	if err != nil {
		return err
	}
	_, monPort, err := net.SplitHostPort(s.natsMon)
	if err != nil {
		return err
	}
	p := start(s.t, "nats", s.natsBin, s.logPath("nats"), nil, "-a", host, "-p", port, "-m", monPort)
	s.mu.Lock()
	s.nats = p
	s.mu.Unlock()
	return p.waitFor(ctx, "NATS to accept connections", func() bool {
		c, err := net.DialTimeout("tcp", s.natsAddr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

// natsClients reports whether NATS has the connections of every API and
// of every worker, and the subscriptions of the APIs' followers (an API
// subscribes while it follows a run; one that follows none has none).
func (s *stack) natsClients() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+s.natsMon+"/connz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var connz struct {
		Connections []struct {
			Name string `json:"name"`
			Subs int    `json:"subscriptions"`
		} `json:"connections"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&connz) != nil {
		return false
	}
	var apis, following, workers int
	for _, c := range connz.Connections {
		switch c.Name {
		case "longhaul api":
			apis++
			if c.Subs > 0 {
				following++
			}
		case "longhaul worker":
			workers++
		}
	}
	return apis >= len(s.apis) && following >= 1 && workers >= len(s.workers)
}

// startWorker starts worker slot i and waits until it runs.
func (s *stack) startWorker(ctx context.Context, i int, env []string) error {
	name := fmt.Sprintf("worker-%d", i)
	path := s.logPath(name)
	from := logSize(path)
	p := start(s.t, name, s.bin, path, append(append([]string(nil), s.common...), env...), "worker")
	s.mu.Lock()
	s.workers[i] = p
	s.mu.Unlock()
	return p.waitFor(ctx, "the worker", func() bool { return logContains(path, from, "worker on task queue") })
}

// apiName names API slot i as the test's figures do: API 1, API 2.
func apiName(i int) string { return fmt.Sprintf("API %d", i+1) }

// apiURL is the base URL of API slot i.
func (s *stack) apiURL(i int) string { return "http://" + s.apiAddrs[i] }

// apiURLs are the base URLs of every API slot.
func (s *stack) apiURLs() []string {
	urls := make([]string, len(s.apiAddrs))
	for i := range urls {
		urls[i] = s.apiURL(i)
	}
	return urls
}

// startAPI starts `longhaul api` in slot i, on the slot's address, and
// waits until /readyz says Temporal answers and a worker polls.
func (s *stack) startAPI(ctx context.Context, i int) error {
	name := fmt.Sprintf("api-%d", i+1)
	env := append(append([]string(nil), s.common...), "LONGHAUL_HTTP_ADDR="+s.apiAddrs[i])
	p := start(s.t, name, s.bin, s.logPath(name), env, "api")
	s.mu.Lock()
	s.apis[i] = p
	s.mu.Unlock()
	return p.waitFor(ctx, "the API to be ready", func() bool { return ready(s.apiURL(i) + "/readyz") })
}

func (s *stack) api(i int) *proc {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.apis[i]
}

func (s *stack) worker(i int) *proc {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.workers[i]
}

// checkAlive reports the processes that died without being killed.
func (s *stack) checkAlive() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, p := range append(append([]*proc{s.server, s.nats}, s.apis...), s.workers...) {
		if p != nil && !p.alive() {
			errs = append(errs, fmt.Errorf("%s exited by itself: %v", p.name, p.cmd.ProcessState))
		}
	}
	return errors.Join(errs...)
}

// dumpLogs logs the end of every process log, for a failed run.
func (s *stack) dumpLogs() {
	entries, _ := os.ReadDir(s.logDir)
	for _, e := range entries {
		s.t.Logf("----- %s (last 40 lines) -----\n%s", e.Name(), tail(filepath.Join(s.logDir, e.Name()), 40))
	}
}
