// Package streaming tests what the live path of a run costs and where it
// may run: a streamed answer adds the same history however long it is, and
// the deltas travel through an external NATS server (Debian's nats-server)
// as they do through the embedded one, surviving its restart.
package streaming

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/ssetest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// streamChat posts a streaming chat request for chat id and returns the
// answer's text, reading it to [DONE]; onText sees the text so far after
// every chunk.
func streamChat(ctx context.Context, base, chat string, onText func(string)) (string, error) {
	b, _ := json.Marshal(map[string]any{
		"model": "naked", "stream": true, "metadata": map[string]string{"chat_id": chat},
		"messages": []map[string]string{{"role": "user", "content": "talk: " + chat}},
	})
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1/chat/completions", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return "", fmt.Errorf("status %d", resp.StatusCode)
	}
	var text strings.Builder
	rd := ssetest.NewReader(resp.Body)
	for {
		e, err := rd.Next()
		if err != nil {
			return "", fmt.Errorf("stream ended without [DONE] after %q: %w", text.String(), err)
		}
		d := e.Data
		if d == ssetest.Done {
			return text.String(), nil
		}
		var c wire.ChatChunk
		if err := json.Unmarshal([]byte(d), &c); err != nil {
			return "", fmt.Errorf("frame %q: %w", d, err)
		}
		for _, ch := range c.Choices {
			text.WriteString(ch.Delta.Content)
		}
		if onText != nil {
			onText(text.String())
		}
	}
}

// words is an answer of n words, streamed one word a chunk.
func words(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "w%d", i)
	}
	return b.String()
}

// TestHistoryIndependentOfAnswerLength streams a 10-second and a 60-second
// answer (20 tokens a second) at once and counts their runs' history
// events: the same, and few, since the text travels outside history.
func TestHistoryIndependentOfAnswerLength(t *testing.T) {
	// One attempt of a model call may take the 60 s the answer takes.
	env := testenv.Start(t, testenv.Options{API: api.Config{ModelTimeout: 5 * time.Minute}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	short, long := words(200), words(1200)
	// Each chat's answer is a rule, not a queued reply, so a model call
	// retried on a loaded machine (a missed heartbeat) gets its answer
	// again: the retry adds no history event, and the client is not sent
	// the repeated text (content_reset), so the figures below still hold.
	env.Model.On(llmtest.LastUserContains("talk: ten"), llmtest.Text(short, llmtest.ChunkDelay(50*time.Millisecond)))
	env.Model.On(llmtest.LastUserContains("talk: sixty"), llmtest.Text(long, llmtest.ChunkDelay(50*time.Millisecond)))
	var wg sync.WaitGroup
	texts := make([]string, 2)
	errs := make([]error, 2)
	for i, chat := range []string{"ten", "sixty"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			texts[i], errs[i] = streamChat(ctx, env.URL, chat, nil)
		}()
	}
	wg.Wait()
	for i, want := range []string{short, long} {
		if errs[i] != nil || texts[i] != want {
			t.Fatalf("stream %d: %v, %d bytes of %d", i, errs[i], len(texts[i]), len(want))
		}
	}
	counts := make([]int, 2)
	for i, chat := range []string{"ten", "sixty"} {
		counts[i] = historyLength(t, ctx, env, contract.ChatRunID("anonymous/"+chat, 1, ""))
	}
	t.Logf("history events: %d for a 10 s answer, %d for a 60 s one", counts[0], counts[1])
	if counts[0] != counts[1] || counts[0] > 20 {
		t.Errorf("history events %d (10 s) and %d (60 s); want the same, at most 20", counts[0], counts[1])
	}
}

func historyLength(t *testing.T, ctx context.Context, env *testenv.Env, runID string) int {
	t.Helper()
	it := env.Client.GetWorkflowHistory(ctx, runID, "", false, 0)
	n := 0
	for it.HasNext() {
		if _, err := it.Next(); err != nil {
			t.Fatalf("history of %s: %v", runID, err)
		}
		n++
	}
	return n
}

// natsServer is Debian's nats-server, run by the test as an external NATS.
type natsServer struct {
	t    *testing.T
	bin  string
	addr string
	cmd  *exec.Cmd
}

func startNATS(t *testing.T, addr string) *natsServer {
	t.Helper()
	bin, err := exec.LookPath("nats-server")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/nats-server"); serr != nil {
			t.Fatalf("nats-server is not installed (make test-deps installs Debian's nats-server): %v", err)
		}
		bin = "/usr/sbin/nats-server"
	}
	n := &natsServer{t: t, bin: bin, addr: addr}
	n.start()
	t.Cleanup(n.stop)
	return n
}

func (n *natsServer) start() {
	n.t.Helper()
	host, port, _ := strings.Cut(n.addr, ":")
	cmd := exec.Command(n.bin, "-a", host, "-p", port)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		n.t.Fatalf("start nats-server: %v", err)
	}
	n.cmd = cmd
	// Ready when it accepts connections (it prints its banner first).
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := (&net.Dialer{Timeout: time.Second}).Dial("tcp", n.addr)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("nats-server did not listen on %s: %v\n%s", n.addr, err, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop kills the server, as a crash would.
func (n *natsServer) stop() {
	if n.cmd == nil {
		return
	}
	_ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
	_ = n.cmd.Wait()
	n.cmd = nil
}

// TestExternalNATS runs the stack against Debian's nats-server, restarted
// in the middle of an answer: text streams live before the restart, the
// answer arrives whole, and a stream started after the restart is live
// again.
func TestExternalNATS(t *testing.T) {
	addr := testenv.FreeAddr(t)
	ns := startNATS(t, addr)
	env := testenv.Start(t, testenv.Options{NATSURL: "nats://" + addr})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	first := words(120)
	env.Model.Enqueue(llmtest.Text(first, llmtest.ChunkDelay(30*time.Millisecond)))
	var liveBefore int
	restarted := false
	got, err := streamChat(ctx, env.URL, "before", func(text string) {
		if !restarted && len(text) > 40 && len(text) < len(first) {
			liveBefore = len(text)
			restarted = true
			ns.stop()
			ns.start()
		}
	})
	if err != nil || got != first {
		t.Fatalf("answer across the restart: %v, %q", err, got)
	}
	if liveBefore == 0 {
		t.Fatal("no text streamed live before the restart")
	}
	// After the restart the clients have reconnected: a new answer streams
	// live again, in many pieces.
	second := words(40)
	env.Model.Enqueue(llmtest.Text(second, llmtest.ChunkDelay(30*time.Millisecond)))
	var updates int
	var last string
	got, err = streamChat(ctx, env.URL, "after", func(text string) {
		if text != last && text != second {
			updates++
		}
		last = text
	})
	if err != nil || got != second {
		t.Fatalf("answer after the restart: %v, %q", err, got)
	}
	if updates < 10 {
		t.Errorf("the answer after the restart came in %d live pieces; want it streamed", updates)
	}
}
