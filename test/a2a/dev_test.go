//go:build unix

package a2a

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/proctest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
)

// TestA2ADev runs the official client's scenarios against a real
// `longhaul dev`: the binary built from ./cmd/longhaul (with -race when
// the test has it; LONGHAUL_DEV_BIN names another), run as one process
// in a temporary folder as the README's A2A section runs it, with the
// agents in a folder of their own (LONGHAUL_SKILLS_DIR), an API key
// (LONGHAUL_API_KEYS), webhooks to loopback allowed for the test's
// receiver, and the scripted model served by the test. Between the
// scenarios `longhaul dev` is stopped with SIGTERM and started again on
// the same folder, and a task it left waiting is resumed, approved and
// completed.
func TestA2ADev(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	proctest.NeedNode(t, "test/a2a", "@a2a-js/sdk", "standardwebhooks")
	s := &stack{model: llmtest.New(t)}
	d := startDev(t, s)
	s.url = d.URL
	t.Run("cards", s.cards)
	t.Run("blocking send", func(t *testing.T) { s.send(t, "JSONRPC") })
	t.Run("streamed send", func(t *testing.T) { s.stream(t, "HTTP+JSON") })
	t.Run("resubscribe after a restart, and approve", func(t *testing.T) {
		stopped := errors.New("the stream never asked for input")
		s.approveAfter(t, s.url, func() {
			if d.Alive() { // once, on the first INPUT_REQUIRED
				stopped = d.Stop()
			}
		}, func() {
			if stopped != nil {
				t.Fatal(stopped)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := d.Start(ctx); err != nil {
				t.Fatal(err)
			}
			s.url = d.URL
		})
	})
	t.Run("cancel", s.cancel)
	t.Run("push notification", s.push)
	t.Run("the README's client", s.readme)
	if !d.Alive() {
		t.Errorf("longhaul dev exited by itself:\n%s", proctest.Tail(d.Log, 40))
	}
}

// startDev writes the agents (the clerk, its shop at s.shop, and the
// restricted vault) into a temporary folder and starts `longhaul dev`
// there with the test's key.
func startDev(t *testing.T, s *stack) *proctest.Dev {
	t.Helper()
	bin := proctest.Binary(t, "LONGHAUL_DEV_BIN")
	dir := t.TempDir()
	agents := filepath.Join(dir, "agents")
	for _, layer := range []fs.FS{testenv.Clerk, restricted} {
		if err := os.CopyFS(agents, layer); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d, err := proctest.StartDev(ctx, t, bin, dir, s.model.URL(), []string{
		"LONGHAUL_SKILLS_DIR=" + agents,
		"LONGHAUL_API_KEYS=a2a:" + apiKey,
		"LONGHAUL_WEBHOOK_PRIVATE=true",
		"SHOP_URL=" + s.shop(t),
	}, func() string { return testenv.FreeAddr(t) })
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// readme runs the README's A2A client as written (but for the address
// `longhaul dev` serves on), with node in test/a2a, where the SDK is
// installed: it prints the task's answer.
func (s *stack) readme(t *testing.T) {
	const readmeURL = "http://127.0.0.1:8080"
	code := proctest.ReadmeBlock(t, "**A2A.**", "js")
	if !strings.Contains(code, readmeURL) {
		t.Fatalf("the README's A2A client does not name %s:\n%s", readmeURL, code)
	}
	s.model.Enqueue(llmtest.Text("Hello from the README."))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "--input-type=module", "-e", strings.ReplaceAll(code, readmeURL, s.url))
	cmd.Dir = filepath.Join(proctest.RepoRoot(t), "test/a2a")
	cmd.Env = append(os.Environ(), "KEY="+apiKey)
	out, err := cmd.CombinedOutput()
	if err != nil || string(out) != "Hello from the README.\n" {
		t.Errorf("the README's A2A client: %v, printed %q; want the answer", err, out)
	}
	s.idle(t)
}
