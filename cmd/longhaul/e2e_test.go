package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/proctest"
	"github.com/longhaul-dev/longhaul/internal/testing/ssetest"
	"github.com/longhaul-dev/longhaul/internal/testing/storetest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// buildBinary builds cmd/longhaul once for the package's tests.
func buildBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "longhaul-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath, buildErr = build(filepath.Join(dir, "longhaul"))
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

func build(bin string) (string, error) {
	// -race shares the packages the race-enabled test build compiled, and
	// checks the binary for races too.
	cmd := exec.Command("go", "build", "-race", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build: %v\n%s", err, out)
	}
	return bin, nil
}

// process is a running `longhaul` command.
type process struct {
	cmd    *exec.Cmd
	stderr *proctest.SyncBuffer
	exited chan struct{}
}

func start(t *testing.T, bin string, env []string, args ...string) *process {
	t.Helper()
	cmd := exec.Command(bin, args...)
	// No metrics endpoint unless env asks: tests run side by side.
	cmd.Env = append(append(os.Environ(), "LONGHAUL_METRICS_ADDR=off"), env...)
	return launch(t, cmd)
}

// launch starts cmd, its stdout and stderr together in the process's
// stderr, and kills it when the test ends.
func launch(t *testing.T, cmd *exec.Cmd) *process {
	t.Helper()
	out := &proctest.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, stderr: out, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	t.Cleanup(p.kill)
	return p
}

// terminate sends the process SIGTERM, which stops it gracefully, and
// waits for it to exit.
func (p *process) terminate(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-p.exited
}

// kill ends the process with SIGKILL, as a crash would, and waits for it.
func (p *process) kill() {
	select {
	case <-p.exited:
	default:
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.exited
	}
}

// waitReady polls /readyz until 200 or the process exits.
func waitReady(t *testing.T, p *process, url string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-p.exited:
			t.Fatalf("exited before ready: %s", p.stderr.String())
		default:
		}
		resp, err := http.Get(url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("not ready: %s", p.stderr.String())
}

// devEnv is the environment of a `longhaul dev` serving the API on api,
// with a fresh data directory, free ports, no UI and the scripted model at
// modelURL; extra settings follow (and win). See proctest.DevEnv.
func devEnv(t *testing.T, api, modelURL string, extra ...string) []string {
	return proctest.DevEnv(t.TempDir(), api, testenv.FreeAddr(t), modelURL, extra...)
}

func streamChat(url, chat string) (*http.Response, error) {
	body, _ := json.Marshal(map[string]any{
		"model": "naked", "stream": true,
		"messages": []map[string]string{{"role": "user", "content": "tell me a long story"}},
	})
	req, _ := http.NewRequest("POST", url+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-OpenWebUI-Chat-Id", chat)
	return http.DefaultClient.Do(req)
}

// contentOf reads an OpenAI stream to its end and returns the text; with
// stopAfter > 0 it returns after that many content chunks.
func contentOf(t *testing.T, resp *http.Response, stopAfter int) (string, bool) {
	t.Helper()
	var b strings.Builder
	n := 0
	rd := ssetest.NewReader(resp.Body)
	for {
		// A stream cut short (the process killed) ends the reading.
		e, err := rd.Next()
		if err != nil {
			return b.String(), false
		}
		d := e.Data
		if d == ssetest.Done {
			return b.String(), true
		}
		var c struct {
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(d), &c); err != nil {
			t.Fatalf("bad frame %q", d)
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content != "" {
				b.WriteString(ch.Delta.Content)
				n++
			}
		}
		if stopAfter > 0 && n >= stopAfter {
			return b.String(), false
		}
	}
}

// TestKillMidStreamAndRestart runs the real binary, kills it with SIGKILL
// while an answer streams, starts it again on the same data directory, and
// asks again for the same chat turn: the run resumes and the answer arrives
// whole, once.
func TestKillMidStreamAndRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	model := llmtest.New(t)
	answer := strings.TrimSpace(strings.Repeat("a durable sentence survives the crash ", 15))
	model.On(func(llmtest.Request) bool { return true }, llmtest.Text(answer, llmtest.ChunkDelay(30*time.Millisecond)))
	api := testenv.FreeAddr(t)
	env := devEnv(t, api, model.URL())
	url := "http://" + api
	p := start(t, bin, env, "dev")
	waitReady(t, p, url)

	resp, err := streamChat(url, "crash-chat")
	if err != nil {
		t.Fatal(err)
	}
	partial, done := contentOf(t, resp, 5)
	if done || partial == "" {
		t.Fatalf("expected a partial answer, got %q (done %v)", partial, done)
	}
	p.kill()
	resp.Body.Close()

	p = start(t, bin, env, "dev")
	waitReady(t, p, url)
	resp, err = streamChat(url, "crash-chat")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// No keys: the anonymous principal's chat.
	if got := resp.Header.Get("X-Longhaul-Run-Id"); got != contract.ChatRunID("anonymous/crash-chat", 1, "") {
		t.Fatalf("run id %q", got)
	}
	full, done := contentOf(t, resp, 0)
	if !done || full != answer {
		t.Fatalf("after restart got %q (done %v)\nwant %q\nlogs:\n%s", full, done, answer, p.stderr.String())
	}
	if n := len(model.Requests()); n < 2 {
		t.Fatalf("model called %d times; the kill did not interrupt the call", n)
	}

	// SIGTERM stops gracefully.
	p.terminate(t)
	if !p.cmd.ProcessState.Success() {
		t.Fatalf("exit after SIGTERM: %v\n%s", p.cmd.ProcessState, p.stderr.String())
	}
	if !strings.Contains(p.stderr.String(), "shutting down") {
		t.Errorf("no shutdown message:\n%s", p.stderr.String())
	}
}

// TestBrokenSkillFileStopsStartup checks a bad operator file stops start-up
// with a message naming the file and the problem.
func TestBrokenSkillFileStopsStartup(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "broken.md"), []byte("---\nagent: broken\ndescription: x\nskills: [nope]\ncolour: red\n---\nHi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "dev")
	cmd.Env = append(os.Environ(), "LONGHAUL_METRICS_ADDR=off", "LONGHAUL_SKILLS_DIR="+dir, "LONGHAUL_DATA_DIR="+t.TempDir(),
		"LONGHAUL_EMBEDDED_TEMPORAL_ADDR="+testenv.FreeAddr(t), "LONGHAUL_EMBEDDED_UI_ADDR=off", "LONGHAUL_HTTP_ADDR="+testenv.FreeAddr(t))
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("started with a broken skill file:\n%s", out)
	}
	for _, want := range []string{"broken.md", `unknown key "colour"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	// A bad setting names its variable.
	cmd = exec.Command(bin, "dev")
	cmd.Env = append(os.Environ(), "LONGHAUL_MAX_BODY_BYTES=lots")
	out, err = cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "LONGHAUL_MAX_BODY_BYTES") {
		t.Fatalf("bad setting: err %v, output:\n%s", err, out)
	}
	// worker and api need a Temporal address.
	cmd = exec.Command(bin, "worker")
	cmd.Env = append(os.Environ(), "LONGHAUL_TEMPORAL_ADDRESS=")
	out, err = cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "LONGHAUL_TEMPORAL_ADDRESS is required") {
		t.Fatalf("worker without address: err %v, output:\n%s", err, out)
	}
}

// TestStartupRedactsCredentials starts `longhaul dev` with credentials in
// every URL setting — the model endpoint, the search endpoint, the
// database, NATS and an MCP server (the last two unreachable, so their
// URLs and errors are logged) — and debug logs: no password shows in its
// output, while the start-up lines still name the URLs.
func TestStartupRedactsCredentials(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	pg := storetest.Backends[1]
	pg.Ready(t)
	bin := buildBinary(t)
	model := llmtest.New(t)
	withUser := func(raw, user, password string) string {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if u.User != nil && u.User.Username() != "" {
			user = u.User.Username()
		}
		u.User = url.UserPassword(user, password)
		return u.String()
	}
	osUser, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	mcpConfig := filepath.Join(t.TempDir(), "mcp.json")
	mcpURL := fmt.Sprintf("http://mcpuser:mcp-secret@%s/mcp", testenv.FreeAddr(t))
	if err := os.WriteFile(mcpConfig, []byte(`{"mcpServers": {"remote": {"url": "`+mcpURL+`"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	api := testenv.FreeAddr(t)
	env := []string{
		"LONGHAUL_DATA_DIR=" + t.TempDir(),
		"LONGHAUL_HTTP_ADDR=" + api,
		"LONGHAUL_EMBEDDED_TEMPORAL_ADDR=" + testenv.FreeAddr(t),
		"LONGHAUL_EMBEDDED_UI_ADDR=" + testenv.FreeAddr(t),
		"LONGHAUL_LOG_LEVEL=debug",
		"LONGHAUL_LLM_BASE_URL=" + withUser(model.URL(), "llmuser", "llm-secret"),
		"LONGHAUL_LLM_MODEL=llmtest",
		// The scripted model has no window (the tests of windows set one).
		"LONGHAUL_LLM_CONTEXT=llmtest=16777216",
		"LONGHAUL_SEARCH_URL=https://searchuser:search-secret@127.0.0.1:1/",
		"LONGHAUL_DATABASE_URL=" + withUser(pg.Fresh(t), osUser.Username, "pg-secret"),
		"LONGHAUL_NATS_URL=nats://natsuser:nats-secret@" + testenv.FreeAddr(t) + ",nats://nats-token@" + testenv.FreeAddr(t),
		"LONGHAUL_MCP_CONFIG=" + mcpConfig,
	}
	p := start(t, bin, env, "dev")
	waitReady(t, p, "http://"+api)
	// The MCP server's first attempt has failed and been logged before
	// the API serves; stop and read everything the process wrote.
	p.terminate(t)
	out := p.stderr.String()
	for _, secret := range []string{"llm-secret", "search-secret", "pg-secret", "nats-secret", "nats-token", "mcp-secret"} {
		if strings.Contains(out, secret) {
			t.Errorf("the output shows %s:\n%s", secret, out)
		}
	}
	for _, want := range []string{
		"Model        http://llmuser:xxxxx@127.0.0.1:", // the start-up line names the endpoint
		"NATS         nats://natsuser:xxxxx@",
		"MCP server not reachable; retrying in the background\" server=remote",
		"(read-only;", // the UI's start-up line
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
}
