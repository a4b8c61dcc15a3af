package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
)

// startBare starts `longhaul args...` with none of this machine's LONGHAUL_
// variables and only env, so every setting env leaves out is its default
// (start, by contrast, switches metrics off).
func startBare(t *testing.T, bin string, env []string, args ...string) *process {
	t.Helper()
	cmd := exec.Command(bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LONGHAUL_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	return launch(t, cmd)
}

// waitOutput waits until p's output matches re and returns the match's
// first group; it fails the test when p exits first.
func waitOutput(t *testing.T, p *process, re *regexp.Regexp) string {
	t.Helper()
	deadline := time.After(90 * time.Second)
	for {
		if m := re.FindStringSubmatch(p.stderr.String()); m != nil {
			return m[len(m)-1]
		}
		select {
		case <-p.exited:
			t.Fatalf("exited before printing %s:\n%s", re, p.stderr.String())
		case <-deadline:
			t.Fatalf("never printed %s:\n%s", re, p.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// scrape reads a /metrics page.
func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: %s %s", url, resp.Status, b)
	}
	return string(b)
}

var (
	serverUp       = regexp.MustCompile(`NATS\s+(nats://\S+)`)
	workerMetrics  = regexp.MustCompile(`worker on task queue .* metrics on http://(\S+)/metrics`)
	apiMetricsLine = regexp.MustCompile(`API on http://\S+ against .* metrics on http://(\S+)/metrics`)
)

// TestSideBySideOnDefaults starts `longhaul server`, two workers and an API
// on one host with no LONGHAUL_METRICS_ADDR, as docs/deploy.md's "One machine"
// does: all start, a chat goes through them, and each worker's and the
// API's metrics are scraped. The listen addresses of server and API are
// free ports only because this machine's other tests and engineers use the
// fixed defaults; the metrics defaults, the collision at stake, are left
// alone (if something else holds 127.0.0.1:9464, both workers take free
// ports, which is the fallback under test too).
func TestSideBySideOnDefaults(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	model := llmtest.New(t)
	model.SetDefault(llmtest.Text("Side by side."))
	model.SetModels("llmtest")
	data := t.TempDir()
	srv := startBare(t, bin, []string{
		"LONGHAUL_DATA_DIR=" + filepath.Join(data, "server"),
		"LONGHAUL_EMBEDDED_TEMPORAL_ADDR=" + testenv.FreeAddr(t),
		"LONGHAUL_EMBEDDED_UI_ADDR=" + testenv.FreeAddr(t),
		"LONGHAUL_EMBEDDED_NATS_ADDR=" + testenv.FreeAddr(t),
	}, "server")
	natsURL := waitOutput(t, srv, serverUp)
	temporal := waitOutput(t, srv, regexp.MustCompile(`Temporal\s+(\S+) \(namespace`))
	remote := []string{
		"LONGHAUL_TEMPORAL_ADDRESS=" + temporal,
		"LONGHAUL_NATS_URL=" + natsURL,
		"LONGHAUL_DATABASE_URL=sqlite://" + filepath.Join(data, "longhaul.db"),
		"LONGHAUL_LLM_BASE_URL=" + model.URL(),
		"LONGHAUL_LLM_MODEL=llmtest",
		// The scripted model has no window (the tests of windows set one).
		"LONGHAUL_LLM_CONTEXT=llmtest=16777216",
	}
	w1 := startBare(t, bin, remote, "worker")
	w1Metrics := waitOutput(t, w1, workerMetrics)
	w2 := startBare(t, bin, remote, "worker")
	w2Metrics := waitOutput(t, w2, workerMetrics)
	if want := "model " + model.URL() + " (default llmtest): llmtest is there"; !strings.Contains(w1.stderr.String(), want) {
		t.Errorf("the worker's banner does not say %q:\n%s", want, w1.stderr.String())
	}
	// The second worker found the default taken (by the first, or by
	// something else) and said so.
	if !strings.Contains(w2.stderr.String(), "the default metrics address is taken") {
		t.Errorf("the second worker did not say it took a free port:\n%s", w2.stderr.String())
	}
	if w1Metrics == w2Metrics {
		t.Fatalf("both workers report metrics on %s", w1Metrics)
	}
	api := testenv.FreeAddr(t)
	a := startBare(t, bin, append(remote, "LONGHAUL_HTTP_ADDR="+api), "api")
	if got := waitOutput(t, a, apiMetricsLine); got != api {
		t.Errorf("the API reports metrics on %s, want its own listener %s", got, api)
	}
	waitReady(t, a, "http://"+api)

	status, raw := chatHi(t, "http://"+api)
	if status != http.StatusOK || !strings.Contains(raw, "Side by side.") {
		t.Fatalf("chat = %d %s", status, raw)
	}

	if text := scrape(t, "http://"+api+"/metrics"); !strings.Contains(text, `longhaul_http_requests_total{code="200",method="POST",route="/v1/chat/completions"} 1`) {
		t.Errorf("the API's /metrics lacks the chat:\n%s", grepLonghaul(text))
	}
	// One of the two workers ran the model call; both serve their series.
	calls := 0
	for _, addr := range []string{w1Metrics, w2Metrics} {
		text := scrape(t, "http://"+addr+"/metrics")
		if !strings.Contains(text, "temporal_request_total{") {
			t.Errorf("worker metrics on %s lack the SDK's series", addr)
		}
		if strings.Contains(text, "longhaul_model_calls_total{") {
			calls++
		}
	}
	if calls != 1 {
		t.Errorf("%d workers counted the model call, want 1", calls)
	}
	for name, p := range map[string]*process{"server": srv, "worker 1": w1, "worker 2": w2, "api": a} {
		select {
		case <-p.exited:
			t.Errorf("%s exited:\n%s", name, p.stderr.String())
		default:
		}
	}
}

// TestTakenMetricsAddrFails sets LONGHAUL_METRICS_ADDR to an address
// another listener holds: dev, worker and api each stop at start with a
// message naming the setting, unlike the default, which gives way.
func TestTakenMetricsAddrFails(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, command := range []string{"dev", "worker", "api"} {
		t.Run(command, func(t *testing.T) {
			clearLonghaulEnv(t)
			t.Setenv("LONGHAUL_DATA_DIR", t.TempDir())
			t.Setenv("LONGHAUL_METRICS_ADDR", ln.Addr().String())
			// Never dialled: metrics are bound before Temporal is.
			t.Setenv("LONGHAUL_TEMPORAL_ADDRESS", "127.0.0.1:1")
			t.Setenv("LONGHAUL_NATS_URL", "nats://127.0.0.1:1")
			var stdout, stderr bytes.Buffer
			if code := Main([]string{command}, &stdout, &stderr); code != 1 {
				t.Fatalf("exit %d, want 1:\n%s", code, stderr.String())
			}
			want := "longhaul " + command + ": LONGHAUL_METRICS_ADDR " + ln.Addr().String()
			if !strings.Contains(stderr.String(), want) || !strings.Contains(stderr.String(), "address already in use") {
				t.Errorf("stderr does not say %q ... address already in use:\n%s", want, stderr.String())
			}
		})
	}
}

// clearLonghaulEnv removes this machine's LONGHAUL_ variables for the test.
func clearLonghaulEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "LONGHAUL_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
}

// chatHi asks the naked agent "hi" through the API at base and returns the
// status and body of its answer.
func chatHi(t *testing.T, base string) (int, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"model": "naked", "messages": []map[string]string{{"role": "user", "content": "hi"}}})
	resp, err := http.Post(base+"/v1/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}
