//go:build unix

package proctest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// DevEnv is the environment of a `longhaul dev` serving the API on api,
// its embedded Temporal's frontend on temporal, keeping its data in
// dataDir ("" for the default, ./.longhaul in its working directory),
// with no Web UI, no metrics endpoint and the scripted model
// (internal/testing/llmtest) at modelURL; extra settings follow (and
// win). It holds only Longhaul's settings: start the process with
// os.Environ() before it.
func DevEnv(dataDir, api, temporal, modelURL string, extra ...string) []string {
	env := []string{
		"LONGHAUL_HTTP_ADDR=" + api,
		"LONGHAUL_EMBEDDED_TEMPORAL_ADDR=" + temporal,
		"LONGHAUL_EMBEDDED_UI_ADDR=off",
		"LONGHAUL_METRICS_ADDR=off",
		"LONGHAUL_LLM_BASE_URL=" + modelURL,
		"LONGHAUL_LLM_MODEL=llmtest",
		// The scripted model has no window (the tests of windows set one).
		"LONGHAUL_LLM_CONTEXT=llmtest=16777216",
	}
	if dataDir != "" {
		env = append(env, "LONGHAUL_DATA_DIR="+dataDir)
	}
	return append(env, extra...)
}

// Dev is `longhaul dev` run as a newcomer runs it: one process, in a
// folder of its own (Dir) that holds its data (./.longhaul, the default),
// serving the API at URL. Restart stops it with SIGTERM and starts it
// again on the same folder, as an operator restarts it.
type Dev struct {
	// URL is the API's base URL, http://host:port.
	URL string
	// Dir is the working directory, and so the data directory's parent.
	Dir string
	// Log is the file the process writes its output to, every start
	// appended.
	Log string

	t        testing.TB
	bin      string
	modelURL string
	extra    []string
	api      string
	temporal string
	pick     func() string
	proc     *Proc
}

// StartDev starts bin's `longhaul dev` in dir with the test's environment
// and DevEnv's settings (the model at modelURL, then extra), the API and
// the embedded Temporal on addresses pick returns, and waits until
// /readyz answers 200 (Temporal answers, the worker polls).
func StartDev(ctx context.Context, t testing.TB, bin, dir, modelURL string, extra []string, pick func() string) (*Dev, error) {
	t.Helper()
	d := &Dev{Dir: dir, Log: filepath.Join(dir, "longhaul-dev.log"), t: t, bin: bin, modelURL: modelURL, extra: extra, pick: pick}
	return d, d.Start(ctx)
}

// Start starts the process, again after Stop, on the same folder and the
// Dev's addresses (fresh ones the first time), and waits until it is
// ready. A port picked free stays free only
// until someone binds it: when the process exits at once saying an
// address is in use, start tries again on fresh addresses, up to three
// times (as ServeAPI does), and URL follows.
func (d *Dev) Start(ctx context.Context) error {
	if d.api == "" {
		d.api, d.temporal = d.pick(), d.pick()
	}
	for try := 1; ; try++ {
		from := LogSize(d.Log)
		env := append(os.Environ(), DevEnv("", d.api, d.temporal, d.modelURL, d.extra...)...)
		d.proc = StartIn(d.t, d.Dir, "longhaul dev", d.bin, d.Log, env, "dev")
		d.URL = "http://" + d.api
		url := d.URL + "/readyz"
		err := d.proc.WaitFor(ctx, "/readyz", func() bool { return Ready(url) })
		if err == nil || try == 3 || !LogContains(d.Log, from, "address already in use") {
			if err != nil {
				return fmt.Errorf("%w\n%s", err, Tail(d.Log, 40))
			}
			return nil
		}
		d.t.Logf("longhaul dev: an address was taken before it could bind it; starting it on others")
		d.api, d.temporal = d.pick(), d.pick()
	}
}

// Restart stops the process with SIGTERM, checks that it exited cleanly,
// and starts it again on the same folder (and, unless they were taken
// meanwhile, the same addresses), waiting until it is ready.
func (d *Dev) Restart(ctx context.Context) error {
	if err := d.Stop(); err != nil {
		return err
	}
	return d.Start(ctx)
}

// Stop stops the process with SIGTERM, as Ctrl-C does, and reports an
// error unless it exited with status 0 within a minute.
func (d *Dev) Stop() error {
	how, err := d.proc.Stop(time.Minute)
	if err != nil {
		return err
	}
	if !d.proc.Cmd.ProcessState.Success() {
		return errors.New("longhaul dev: " + how + " after SIGTERM\n" + Tail(d.Log, 40))
	}
	return nil
}

// Alive reports whether the process still runs.
func (d *Dev) Alive() bool { return d.proc.Alive() }
