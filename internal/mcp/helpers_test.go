//go:build unix

package mcp

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/devserver"
	"github.com/longhaul-dev/longhaul/internal/testing/proctest"
	"github.com/longhaul-dev/longhaul/internal/tools"
)

// The reference servers are installed from npm by `make test-deps` into
// test/mcp/node_modules, pinned by test/mcp/package-lock.json.
const (
	everythingPkg = "@modelcontextprotocol/server-everything"
	filesystemPkg = "@modelcontextprotocol/server-filesystem"
)

// node returns the path of the node binary.
func node(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed: the MCP tests run the reference servers on Node.js (then run make test-deps)")
	}
	return p
}

// serverScript returns the entry point of an installed reference server.
func serverScript(t *testing.T, pkg string) string {
	t.Helper()
	p := filepath.Join(proctest.RepoRoot(t), "test", "mcp", "node_modules", filepath.FromSlash(pkg), "dist", "index.js")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("MCP test server %s is not installed (%s missing): run make test-deps", pkg, p)
	}
	return p
}

// everythingStdio configures server-everything over stdio.
func everythingStdio(t *testing.T) ServerConfig {
	return ServerConfig{Command: node(t), Args: []string{serverScript(t, everythingPkg), "stdio"}}
}

// testLog is a slog handler's writer that logs to t until the test ends.
type testLog struct {
	mu   sync.Mutex
	t    *testing.T
	done bool
}

func (w *testLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// newManager returns a Manager of cfg on an empty registry, closed when
// the test ends, after which it checks that no server process and no
// goroutine of the Manager or the SDK is left.
func newManager(t *testing.T, cfg Config) (*Manager, *tools.Registry) {
	t.Helper()
	reg, err := tools.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	w := &testLog{t: t}
	log := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
	m := New(cfg, reg, log)
	m.ConnectTimeout = 30 * time.Second
	t.Cleanup(func() {
		start := time.Now()
		if err := m.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		t.Logf("Close took %v", time.Since(start))
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
		if names := reg.Names(); len(names) > 0 {
			t.Errorf("tools left in the registry after Close: %v", names)
		}
		checkNoChildren(t)
		checkNoGoroutines(t)
	})
	return m, reg
}

// httpServers holds the pids of the HTTP servers the tests run themselves,
// which checkNoChildren leaves to their own cleanup.
var httpServers sync.Map

// checkNoChildren fails if a process started by this test binary is still
// running, other than the tests' own HTTP servers. It reads /proc, so it
// checks only on Linux.
func checkNoChildren(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		return
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	self := strconv.Itoa(os.Getpid())
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, ours := httpServers.Load(pid); ours {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces, so split after ")".
		rest := stat[bytes.LastIndexByte(stat, ')')+1:]
		fields := strings.Fields(string(rest))
		if len(fields) >= 2 && fields[1] == self {
			cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			t.Errorf("process %d is still running after Close: %s", pid, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
		}
	}
}

// checkNoGoroutines fails if a goroutine of this package's Manager or of
// the MCP SDK outlives Close. Goroutines that the SDK lets finish on their
// own (a cancellation notice with a timeout) get a few seconds.
func checkNoGoroutines(t *testing.T) {
	t.Helper()
	leaked := func() []string {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		var out []string
		for _, g := range strings.Split(string(buf), "\n\n") {
			if strings.Contains(g, "modelcontextprotocol/go-sdk") ||
				strings.Contains(g, "longhaul/internal/mcp.(*") ||
				strings.Contains(g, "net/http.(*persistConn)") {
				out = append(out, g)
			}
		}
		return out
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		gs := leaked()
		if len(gs) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%d goroutines left after Close:\n%s", len(gs), strings.Join(gs, "\n\n"))
			return
		}
		runtime.Gosched()
		time.Sleep(20 * time.Millisecond) // polling for a condition, not a fixed wait
	}
}

// freePort returns a loopback TCP port that was free a moment ago, outside
// the range the kernel hands out (see devserver.FreePort).
func freePort(t *testing.T) int {
	t.Helper()
	port, err := devserver.FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// httpServer is a server-everything process serving streamable HTTP.
type httpServer struct {
	cmd    *exec.Cmd
	exited chan struct{}
	out    *proctest.SyncBuffer
}

// startEverythingHTTP runs server-everything with an HTTP transport (mode
// "streamableHttp", served at /mcp, or "sse", at /sse) on the port it
// reads from $PORT, and waits until the port accepts connections. The
// process is killed when the test ends.
func startEverythingHTTP(t *testing.T, mode string, port int) *httpServer {
	t.Helper()
	cmd := exec.Command(node(t), serverScript(t, everythingPkg), mode)
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	out := &proctest.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	httpServers.Store(cmd.Process.Pid, true)
	s := &httpServer{cmd: cmd, exited: make(chan struct{}), out: out}
	go func() {
		_ = cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		s.kill(t)
		httpServers.Delete(cmd.Process.Pid)
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.After(30 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return s
		}
		select {
		case <-s.exited:
			t.Fatalf("server-everything exited before listening on %s:\n%s", addr, out)
		case <-deadline:
			t.Fatalf("server-everything is not listening on %s after 30s:\n%s", addr, out)
		case <-tick.C:
		}
	}
}

// kill kills the server and waits for it to exit.
func (s *httpServer) kill(t *testing.T) {
	t.Helper()
	_ = s.cmd.Process.Kill()
	<-s.exited
}

// waitFor waits for a value from ch, failing the test after a minute.
func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(time.Minute):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// wantSum calls the everything server's get-sum tool, registered as
// name, with a and b, and fails t unless it answers with their sum.
func wantSum(t *testing.T, reg *tools.Registry, name string, a, b int) {
	t.Helper()
	res, err := call(t.Context(), t, reg, name, fmt.Sprintf(`{"a": %d, "b": %d}`, a, b), nil)
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	if want := fmt.Sprintf("The sum of %d and %d is %d.", a, b, a+b); res.Content != want {
		t.Errorf("%s content = %q, want %q", name, res.Content, want)
	}
}

// call calls the named tool from reg with JSON arguments.
func call(ctx context.Context, t *testing.T, reg *tools.Registry, name, args string, progress func(string, float64)) (tools.Result, error) {
	t.Helper()
	tl, ok := reg.Get(name)
	if !ok {
		t.Fatalf("tool %q is not registered; have %v", name, reg.Names())
	}
	return tl.Call(ctx, tools.Call{ID: "call-1", Arguments: []byte(args), Progress: progress})
}

// serverStatus returns the status of the named server.
func serverStatus(t *testing.T, m *Manager, name string) ServerStatus {
	t.Helper()
	for _, st := range m.Servers() {
		if st.Name == name {
			return st
		}
	}
	t.Fatalf("no server %q", name)
	return ServerStatus{}
}

// currentPID returns the process id of the named server's live session.
func currentPID(t *testing.T, m *Manager, name string) int {
	t.Helper()
	for _, s := range m.servers {
		if s.name != name {
			continue
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.sess == nil {
			t.Fatalf("server %q has no session", name)
		}
		return s.sess.pid()
	}
	t.Fatalf("no server %q", name)
	return 0
}
