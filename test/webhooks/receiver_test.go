//go:build unix

package webhooks

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// receiver is a running receiver.js: its lines come on lines, each as
// it prints it.
type receiver struct {
	cmd    *exec.Cmd
	lines  chan delivery
	stderr *os.File
}

// freePort is a loopback port nothing listens on now, for a receiver
// that must come back on the same one.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startReceiver starts receiver.js on port in mode and waits until it
// listens. It is killed, with its process group, when the test ends.
func startReceiver(t *testing.T, port int, secrets map[string]string, seen, mode string) *receiver {
	t.Helper()
	raw, _ := json.Marshal(secrets)
	cmd := exec.Command("node", "receiver.js")
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port), "SECRETS="+string(raw), "SEEN_FILE="+seen, "MODE="+mode)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := os.Create(filepath.Join(t.TempDir(), "receiver-"+mode+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &receiver{cmd: cmd, lines: make(chan delivery, 64), stderr: stderr}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	go func() {
		defer close(r.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var d delivery
			if json.Unmarshal(sc.Bytes(), &d) == nil {
				r.lines <- d
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r.until(ctx, t, func(ds []delivery) bool { return len(ds) > 0 && ds[len(ds)-1].Listening == port })
	return r
}

// until collects the receiver's deliveries until done holds of them all
// (its listening line left out).
func (r *receiver) until(ctx context.Context, t *testing.T, done func([]delivery) bool) []delivery {
	t.Helper()
	var ds []delivery
	for {
		select {
		case d, ok := <-r.lines:
			if !ok {
				b, _ := os.ReadFile(r.stderr.Name())
				t.Fatalf("the receiver exited; it said:\n%s\nafter %+v", b, ds)
			}
			if d.Listening != 0 {
				if done([]delivery{d}) {
					return nil
				}
				continue
			}
			ds = append(ds, d)
			if done(ds) {
				return ds
			}
		case <-ctx.Done():
			t.Fatalf("gave up waiting for the receiver; it got %+v", ds)
		}
	}
}

// stop ends the receiver with SIGTERM, as a restart does, and waits for it.
func (r *receiver) stop(t *testing.T) {
	t.Helper()
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	for range r.lines {
	}
	if err := r.cmd.Wait(); err != nil {
		t.Errorf("receiver: %v", err)
	}
}
