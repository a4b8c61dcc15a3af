//go:build linux

package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/longhaul-dev/longhaul/internal/devserver"
	"github.com/longhaul-dev/longhaul/internal/testing/proctest"
)

// binary is the longhaul binary to measure: LONGHAUL_BENCH_BIN when set
// (make bench passes bin/longhaul, the binary make build ships), else one
// built into a temporary directory, with -trimpath as make build does.
func binary(b *testing.B) string {
	b.Helper()
	if os.Getenv("LONGHAUL_BENCH_BIN") != "" {
		return proctest.Binary(b, "LONGHAUL_BENCH_BIN")
	}
	return proctest.Build(b, "longhaul", "github.com/longhaul-dev/longhaul/cmd/longhaul", "-trimpath")
}

// child is `longhaul dev` running as a process of its own: embedded
// Temporal, a worker and the API, as an operator runs it.
type child struct {
	proc      *proctest.Proc
	pid       int
	url       string // the API's base URL, http://127.0.0.1:port
	temporal  string // the Temporal frontend, host:port
	namespace string
	logPath   string
	// pprof is the child's profile endpoint (LONGHAUL_PPROF_ADDR) and
	// profDir where its profiles go, when LONGHAUL_BENCH_PROFILE is set.
	pprof, profDir string
}

// startChild starts `longhaul dev` against the scripted model at modelURL
// and waits until /readyz answers 200. The process runs in a process group
// of its own (internal/testing/proctest); the benchmark's cleanup kills the
// group whatever happens, and the kernel kills it should the benchmark die
// first. Its data directory and its log are kept when the benchmark fails
// or LONGHAUL_BENCH_KEEP is set, and removed otherwise.
func startChild(b *testing.B, bin, modelURL string) *child {
	b.Helper()
	dir, err := os.MkdirTemp("", "longhaul-bench-")
	if err != nil {
		b.Fatal(err)
	}
	keep, _ := strconv.ParseBool(os.Getenv("LONGHAUL_BENCH_KEEP"))
	b.Cleanup(func() {
		if b.Failed() || keep {
			b.Logf("kept the data directory and the log (longhaul.log) of longhaul dev: %s", dir)
			return
		}
		os.RemoveAll(dir)
	})
	httpAddr, temporalAddr := freeAddr(b), freeAddr(b)
	c := &child{
		url:       "http://" + httpAddr,
		temporal:  temporalAddr,
		namespace: "default",
		logPath:   filepath.Join(dir, "longhaul.log"),
	}
	// An external Temporal, when the environment names one, is where the
	// child's runs and their histories are.
	if v := os.Getenv("LONGHAUL_TEMPORAL_ADDRESS"); v != "" {
		c.temporal = v
	}
	if v := os.Getenv("LONGHAUL_TEMPORAL_NAMESPACE"); v != "" {
		c.namespace = v
	}
	var profEnv []string
	if d := os.Getenv("LONGHAUL_BENCH_PROFILE"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatalf("LONGHAUL_BENCH_PROFILE: %v", err)
		}
		c.profDir, c.pprof = d, freeAddr(b)
		profEnv = []string{"LONGHAUL_PPROF_ADDR=" + c.pprof}
	}
	env := append(childEnv(filepath.Join(dir, "data"), httpAddr, temporalAddr, modelURL), profEnv...)
	c.proc = proctest.Start(b, "longhaul dev", bin, c.logPath, env, "dev")
	c.pid = c.proc.Cmd.Process.Pid

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.proc.WaitFor(ctx, "its API to be ready", func() bool { return proctest.Ready(c.url + "/readyz") }); err != nil {
		c.fatal(b, err)
	}
	return c
}

// childEnv is the environment of `longhaul dev` with its data in dataDir,
// its API on httpAddr, its embedded Temporal on temporalAddr and the
// scripted model at modelURL.
func childEnv(dataDir, httpAddr, temporalAddr, modelURL string) []string {
	// exec keeps the last of duplicate variables: the benchmark's own
	// settings win over the inherited ones.
	return append(os.Environ(),
		"LONGHAUL_DATA_DIR="+dataDir,
		"LONGHAUL_HTTP_ADDR="+httpAddr,
		"LONGHAUL_EMBEDDED_TEMPORAL_ADDR="+temporalAddr,
		"LONGHAUL_EMBEDDED_UI_ADDR=off",
		"LONGHAUL_METRICS_ADDR=127.0.0.1:0", // on, as by default, on a free port
		"LONGHAUL_LLM_BASE_URL="+modelURL,
		"LONGHAUL_LLM_MODEL=llmtest",
		// The scripted model has no window (the tests of windows set one).
		"LONGHAUL_LLM_CONTEXT=llmtest=16777216",
		"LONGHAUL_API_KEYS=",
		"LONGHAUL_LOG_LEVEL=warn",
		// Every benchmark request is the one anonymous principal's, up
		// to the highest level of concurrent streams at once: the
		// per-principal limits (20 by default) would refuse them.
		"LONGHAUL_MAX_RUNS=0",
		"LONGHAUL_MAX_STREAMS=0",
	)
}

// freeAddr is a free 127.0.0.1 port for a server the child starts.
func freeAddr(b *testing.B) string {
	b.Helper()
	port, err := devserver.FreePort("127.0.0.1")
	if err != nil {
		b.Fatal(err)
	}
	return "127.0.0.1:" + strconv.Itoa(port)
}

// check fails the benchmark when the child has exited by itself.
func (c *child) check(b *testing.B) {
	b.Helper()
	if err := proctest.ExitedByThemselves(c.proc); err != nil {
		c.fatal(b, err)
	}
}

// fatal fails the benchmark with err and the end of the child's log.
func (c *child) fatal(b *testing.B, err error) {
	b.Helper()
	b.Fatalf("%v\n----- %s (last 40 lines) -----\n%s", err, c.logPath, proctest.Tail(c.logPath, 40))
}

// cpu is the CPU time (user and system, all threads) the child has used.
func (c *child) cpu() (time.Duration, error) { return proctest.CPU(c.pid) }

// settle waits, for at most 15 s, until the child uses less than a tenth
// of a CPU over half a second, so a level's figures do not carry the end
// of the level before.
func (c *child) settle() { proctest.Settle(c.cpu) }

// resetPeak resets the child's peak resident set size (VmHWM) to its
// current size, so the next peak read is the peak since now.
func (c *child) resetPeak() error { return proctest.ResetPeak(c.pid) }

// measure runs f once the child has settled and returns the CPU time the
// child used meanwhile and its peak resident memory over it, in bytes.
func (c *child) measure(b *testing.B, f func()) (cpu time.Duration, peak int64) {
	b.Helper()
	c.settle()
	_ = c.resetPeak()
	cpu0, err := c.cpu()
	if err != nil {
		c.fatal(b, err)
	}
	f()
	cpu1, err := c.cpu()
	if err != nil {
		c.fatal(b, err)
	}
	if peak, err = c.peakRSS(); err != nil {
		c.fatal(b, err)
	}
	return cpu1 - cpu0, peak
}

// peakRSS is the child's peak resident set size (VmHWM), in bytes.
func (c *child) peakRSS() (int64, error) { return proctest.PeakRSS(c.pid) }

// temporalClient dials the child's Temporal frontend, to read histories.
func (c *child) temporalClient(b *testing.B) client.Client {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tc, err := client.DialContext(ctx, client.Options{
		HostPort:  c.temporal,
		Namespace: c.namespace,
		Logger:    sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)),
	})
	if err != nil {
		b.Fatalf("dial Temporal at %s: %v", c.temporal, err)
	}
	b.Cleanup(tc.Close)
	return tc
}

// profile takes the child's CPU, block and mutex profiles over the next d,
// into LONGHAUL_BENCH_PROFILE as name.{cpu,block,mutex}.pprof (block and
// mutex as deltas over d), and returns what waits for them; without
// LONGHAUL_BENCH_PROFILE it does nothing. A profile that cannot be taken
// (a binary without LONGHAUL_PPROF_ADDR) is logged, not fatal.
func (c *child) profile(b *testing.B, name string, d time.Duration) (wait func()) {
	b.Helper()
	if c.profDir == "" {
		return func() {}
	}
	secs := strconv.Itoa(max(1, int(d.Round(time.Second).Seconds())))
	done := make(chan struct{})
	kinds := map[string]string{"cpu": "profile", "block": "block", "mutex": "mutex"}
	errs := make(chan error, len(kinds))
	for kind, path := range kinds {
		go func() {
			errs <- c.fetchProfile(fmt.Sprintf("http://%s/debug/pprof/%s?seconds=%s", c.pprof, path, secs),
				filepath.Join(c.profDir, name+"."+kind+".pprof"))
		}()
	}
	go func() {
		defer close(done)
		for range kinds {
			if err := <-errs; err != nil {
				b.Logf("profile %s: %v", name, err)
			}
		}
	}()
	return func() {
		<-done
		// The heap as the level leaves it: what a long-lived engine keeps.
		if err := c.fetchProfile(fmt.Sprintf("http://%s/debug/pprof/heap", c.pprof), filepath.Join(c.profDir, name+".heap.pprof")); err != nil {
			b.Logf("profile %s: %v", name, err)
		}
	}
}

// fetchProfile writes the profile at url to file.
func (c *child) fetchProfile(url, file string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: status %d", url, resp.StatusCode)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
