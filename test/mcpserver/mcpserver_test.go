package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/internal/identity"
	"github.com/longhaul-dev/longhaul/internal/testing/proctest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/internal/testing/webtest"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// The stack's keys: alice, and bob, an admin.
const (
	aliceKey = "sk-mcp-alice"
	bobKey   = "sk-mcp-bob"
)

// opsAgent is an agent only admins may use.
var opsAgent = fstest.MapFS{
	"ops.md": {Data: []byte("---\nagent: ops\ndescription: Operations\nmode: chat\nallow: {roles: [admin]}\n---\nYou run operations.\n")},
}

// shop is the clerk's shop: it counts the orders placed.
type shop struct {
	mu     sync.Mutex
	orders int
}

func (s *shop) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	s.orders++
	n := s.orders
	s.mu.Unlock()
	fmt.Fprintf(w, "order %d placed", n)
}

func (s *shop) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.orders
}

// stack starts the stack: the built-in agents, ops, and the clerk whose
// place_order needs approval.
func stack(t *testing.T) (*testenv.Env, *shop) {
	t.Helper()
	proctest.NeedNode(t, "test/mcpserver", "@modelcontextprotocol/sdk")
	sh := &shop{}
	srv := httptest.NewServer(sh)
	t.Cleanup(srv.Close)
	keys, err := identity.ParseKeys([]string{"alice:" + aliceKey, "bob:" + bobKey + ":role=admin"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	env := testenv.Start(t, testenv.Options{
		Layers: []fs.FS{testenv.Clerk, opsAgent}, Env: map[string]string{"SHOP_URL": srv.URL},
		API: api.Config{Keys: keys},
	})
	return env, sh
}

// client is one run of a node script; lines carries what it prints.
type client struct {
	lines chan map[string]json.RawMessage
	done  chan error
}

// node runs client.mjs's scenario against env with key; it is killed and
// waited for when the test ends.
func node(t *testing.T, env *testenv.Env, key string, args ...string) *client {
	t.Helper()
	return nodeAt(t, env.URL, key, args...)
}

// nodeAt runs client.mjs's scenario against the API at url with key.
func nodeAt(t *testing.T, url, key string, args ...string) *client {
	t.Helper()
	return script(t, "client.mjs", append([]string{url, key}, args...)...)
}

// script runs test/mcpserver's node script name with args; it is killed
// and waited for when the test ends.
func script(t *testing.T, name string, args ...string) *client {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "node", append([]string{filepath.Join(proctest.RepoRoot(t), "test/mcpserver", name)}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = &logWriter{t: t, name: name}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &client{lines: make(chan map[string]json.RawMessage, 64), done: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]json.RawMessage
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				c.lines <- m
			}
		}
		close(c.lines)
		c.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		cancel()
		<-c.done
	})
	return c
}

// logWriter logs the client's stderr.
type logWriter struct {
	t    *testing.T
	name string
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s: %s", w.name, p)
	return len(p), nil
}

// wait waits until the script has exited, its lines read to the end,
// and fails the test if it did not exit with status 0.
func (c *client) wait(t *testing.T) {
	t.Helper()
	for range c.lines {
	}
	err := <-c.done
	c.done <- err // for the cleanup
	if err != nil {
		t.Fatalf("the script: %v", err)
	}
}

// next is the next line that has field, decoded into v; the test fails if
// the client ends or two minutes pass first.
func (c *client) next(t *testing.T, field string, v any) {
	t.Helper()
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case m, ok := <-c.lines:
			if !ok {
				t.Fatalf("the script ended before printing %q", field)
			}
			if raw, has := m[field]; has {
				if err := json.Unmarshal(raw, v); err != nil {
					t.Fatalf("%s: %v in %s", field, err, raw)
				}
				return
			}
			if e, has := m["error"]; has && field != "error" {
				t.Fatalf("the script: %s (waiting for %q)", e, field)
			}
		case <-timeout:
			t.Fatalf("no %q from the script in 2 minutes", field)
		}
	}
}

// toolResult is a CallToolResult as the client printed it.
type toolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError bool           `json:"isError"`
	Meta    map[string]any `json:"_meta"`
}

func (r toolResult) text() string {
	if len(r.Content) != 1 || r.Content[0].Type != "text" {
		return fmt.Sprintf("%+v", r.Content)
	}
	return r.Content[0].Text
}

// task is a Task as the client printed it.
type task struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage"`
	CreatedAt     string `json:"createdAt"`
}

type rpcErr struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// run reads run id as its owner with key reads it through /v1.
func run(t *testing.T, env *testenv.Env, key, id string) wire.Run {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, env.URL+"/v1/runs/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return webtest.Decode[wire.Run](t, resp)
}

// waitStatus waits for run id's result through Temporal and returns its
// status as /v1 says it.
func waitStatus(t *testing.T, env *testenv.Env, key, id string) wire.Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	_ = env.Client.GetWorkflow(ctx, id, "").Get(ctx, nil)
	return run(t, env, key, id)
}

// waitEvent follows run id's events through /v1 until one of type typ.
func waitEvent(t *testing.T, env *testenv.Env, key, id, typ string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, env.URL+"/v1/runs/"+id+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if sc.Text() == "event: "+typ {
			return
		}
	}
	t.Fatalf("run %s's events ended without %s (%v)", id, typ, sc.Err())
}

// approve approves what run id waits for through POST /v1/runs/{id}/input.
func approve(t *testing.T, env *testenv.Env, key, id string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, env.URL+"/v1/runs/"+id+"/input", strings.NewReader(`{"approve":true}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /v1/runs/%s/input: %d", id, resp.StatusCode)
	}
}
