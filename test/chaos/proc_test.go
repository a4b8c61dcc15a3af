//go:build unix

package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/proctest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"go.temporal.io/sdk/client"
)

// The processes and their logs are internal/testing/proctest's, which
// test/stack shares.
type proc = proctest.Proc

var (
	logContains = proctest.LogContains
	logSize     = proctest.LogSize
	ready       = proctest.Ready
	tail        = proctest.Tail
	natsBinary  = proctest.NATSBinary
)

// built is the binary the package's tests share, built by the first that
// needs it.
var built struct {
	mu   sync.Mutex
	path string
}

// binary is the longhaul binary the tests run: LONGHAUL_CHAOS_BIN when set
// (make chaos tests bin/longhaul, the binary make build ships), else one
// built with -race when the test has it (proctest.Binary), once for all
// the package's tests.
func binary(t *testing.T) string {
	t.Helper()
	if os.Getenv("LONGHAUL_CHAOS_BIN") != "" {
		return proctest.Binary(t, "LONGHAUL_CHAOS_BIN")
	}
	built.mu.Lock()
	defer built.mu.Unlock()
	if built.path == "" {
		// A failed build fails this test; the next one tries again.
		built.path = proctest.BinaryIn(t, "", binDir)
	}
	return built.path
}

// start runs a longhaul command with the test's environment and env; no
// metrics endpoint unless env asks, as the processes share one host.
func start(t *testing.T, name, bin, logPath string, env []string, args ...string) *proc {
	t.Helper()
	return proctest.Start(t, name, bin, logPath, environ(env), args...)
}

// environ is the environment of a process start runs: the test's, no
// metrics endpoint, then env.
func environ(env []string) []string {
	return append(append(os.Environ(), "LONGHAUL_METRICS_ADDR=off"), env...)
}

// stack is the multi-process deployment under test: one `longhaul
// server`, workers and APIs, sharing a data directory.
type stack struct {
	t        *testing.T
	bin      string
	natsBin  string
	natsAddr string
	// temporalAddr is the Temporal frontend's address.
	temporalAddr string
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

// stackConfig is what newStack sets up.
type stackConfig struct {
	workers, apis int
	model         *llmtest.Server
	// files are the agents' and skills' files, by file name.
	files map[string]string
	// env is more environment for every process.
	env []string
}

// newStack is a stack of cfg's size, nothing started yet: its processes
// share a data directory, the Temporal server's address, the external
// NATS, the scripted model and the agent and skill files. The processes'
// logs go to LONGHAUL_CHAOS_LOGS when set (else a temporary directory);
// the end of each is logged when the test fails.
func newStack(t *testing.T, cfg stackConfig) *stack {
	t.Helper()
	skillsDir := t.TempDir()
	for name, body := range cfg.files {
		if err := os.WriteFile(filepath.Join(skillsDir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	temporalAddr, natsAddr := testenv.FreeAddr(t), testenv.FreeAddr(t)
	// longhaul server always runs an embedded NATS; here nobody uses it,
	// and it must not take the default port (4223) from anything else.
	unusedNATSAddr := testenv.FreeAddr(t)
	logDir := os.Getenv("LONGHAUL_CHAOS_LOGS")
	if logDir == "" {
		logDir = t.TempDir()
	} else if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	st := &stack{
		t: t, bin: binary(t), natsBin: natsBinary(t), natsAddr: natsAddr, natsMon: testenv.FreeAddr(t),
		temporalAddr: temporalAddr, logDir: logDir,
		apiAddrs: make([]string, cfg.apis), workers: make([]*proc, cfg.workers), apis: make([]*proc, cfg.apis),
		common: append([]string{
			"LONGHAUL_DATA_DIR=" + t.TempDir(),
			"LONGHAUL_EMBEDDED_TEMPORAL_ADDR=" + temporalAddr,
			"LONGHAUL_EMBEDDED_UI_ADDR=off",
			"LONGHAUL_TEMPORAL_ADDRESS=" + temporalAddr,
			"LONGHAUL_EMBEDDED_NATS_ADDR=" + unusedNATSAddr,
			"LONGHAUL_NATS_URL=nats://" + natsAddr,
			"LONGHAUL_TASK_QUEUE=" + queue,
			"LONGHAUL_LLM_BASE_URL=" + cfg.model.URL(),
			"LONGHAUL_LLM_MODEL=llmtest",
			// The scripted model has no window (the tests of windows set one).
			"LONGHAUL_LLM_CONTEXT=llmtest=16777216",
			"LONGHAUL_SKILLS_DIR=" + skillsDir,
			"LONGHAUL_API_KEYS=",
			"LONGHAUL_LOG_LEVEL=info",
		}, cfg.env...),
	}
	// Registered before the processes start, so it runs after they are
	// all gone.
	t.Cleanup(func() {
		if t.Failed() {
			st.dumpLogs()
		}
	})
	return st
}

// startAll starts NATS, the server, every worker (slot i with
// workerEnv(i)) and every API, each once the one before serves.
func (s *stack) startAll(ctx context.Context, workerEnv func(i int) []string) error {
	if err := s.startNATS(ctx); err != nil {
		return err
	}
	if err := s.startServer(ctx); err != nil {
		return err
	}
	for i := range s.workers {
		if err := s.startWorker(ctx, i, workerEnv(i)); err != nil {
			return err
		}
	}
	for i := range s.apis {
		if err := s.startAPI(ctx, i); err != nil {
			return err
		}
	}
	return nil
}

// dial connects a Temporal client to the stack's server, closed when the
// test ends.
func (s *stack) dial(ctx context.Context) client.Client {
	s.t.Helper()
	tc, err := client.DialContext(ctx, client.Options{HostPort: s.temporalAddr, Logger: quiet{}})
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(tc.Close)
	return tc
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
	return p.WaitFor(ctx, "the Temporal server", func() bool { return logContains(path, from, "embedded Temporal server started") })
}

// startNATS starts the external NATS, Debian's nats-server, and waits until
// it accepts connections.
func (s *stack) startNATS(ctx context.Context) error {
	p, err := proctest.StartNATS(s.t, s.natsBin, s.logPath("nats"), environ(nil), s.natsAddr, s.natsMon)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.nats = p
	s.mu.Unlock()
	return p.WaitReady(ctx)
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
	p := proctest.StartWorker(s.t, name, s.bin, s.logPath(name), environ(append(slices.Clone(s.common), env...)))
	s.mu.Lock()
	s.workers[i] = p
	s.mu.Unlock()
	return p.WaitReady(ctx)
}

// apiName names API slot i as the test's figures do: API 1, API 2.
func apiName(i int) string { return fmt.Sprintf("API %d", i+1) }

// apiURL is the base URL of API slot i.
func (s *stack) apiURL(i int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return "http://" + s.apiAddrs[i]
}

// apiURLs are the base URLs of every API slot.
func (s *stack) apiURLs() []string {
	urls := make([]string, len(s.apiAddrs))
	for i := range urls {
		urls[i] = s.apiURL(i)
	}
	return urls
}

// startAPI starts `longhaul api` in slot i and waits until /readyz says
// Temporal answers and a worker polls. The slot keeps its address across
// restarts, so that clients find it again; the first start picks it, and
// any start moves the slot to another when the address was taken
// (proctest.ServeAPI).
func (s *stack) startAPI(ctx context.Context, i int) error {
	name := fmt.Sprintf("api-%d", i+1)
	s.mu.Lock()
	addr := s.apiAddrs[i]
	s.mu.Unlock()
	p, addr, err := proctest.ServeAPI(ctx, s.t, name, s.bin, s.logPath(name), environ(s.common), addr,
		func() string { return testenv.FreeAddr(s.t) })
	s.mu.Lock()
	s.apis[i], s.apiAddrs[i] = p, addr
	s.mu.Unlock()
	return err
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
	return proctest.ExitedByThemselves(append(append([]*proc{s.server, s.nats}, s.apis...), s.workers...)...)
}

// dumpLogs logs the end of every process log, for a failed run.
func (s *stack) dumpLogs() {
	s.t.Logf("%s", proctest.TailAll(s.logDir, 40))
}
