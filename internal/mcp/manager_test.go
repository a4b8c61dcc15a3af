//go:build unix

package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/tools"
)

// These tests run the reference MCP servers from npm (make test-deps) and
// wait on events, never on fixed sleeps.

func TestStdioEverything(t *testing.T) {
	m, reg := newManager(t, Config{Servers: map[string]ServerConfig{"everything": everythingStdio(t)}})
	ctx := t.Context()
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	st := serverStatus(t, m, "everything")
	if !st.Connected || st.Err != nil || st.Transport != TransportStdio || st.Tools == 0 {
		t.Fatalf("status = %+v, want connected over stdio with tools", st)
	}
	for _, name := range []string{"everything__echo", "everything__get-sum", "everything__trigger-long-running-operation", "everything__get-tiny-image"} {
		if !reg.Has(name) {
			t.Errorf("tool %s is not registered; have %v", name, reg.Names())
		}
	}
	defs, err := reg.Definitions([]string{"everything__get-sum"})
	if err != nil {
		t.Fatal(err)
	}
	if defs[0].Description != "Returns the sum of two numbers" {
		t.Errorf("description = %q", defs[0].Description)
	}
	var schema struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(defs[0].Parameters, &schema); err != nil {
		t.Fatal(err)
	}
	if schema.Type != "object" || schema.Properties["a"] == nil || schema.Properties["b"] == nil {
		t.Errorf("parameters = %s, want an object with a and b", defs[0].Parameters)
	}
	if err := reg.Validate("everything__get-sum", json.RawMessage(`{"a": "x"}`)); !errors.Is(err, tools.ErrInvalidArguments) {
		t.Errorf("Validate(bad arguments) = %v, want ErrInvalidArguments", err)
	}

	t.Run("get-sum", func(t *testing.T) {
		res, err := call(ctx, t, reg, "everything__get-sum", `{"a": 2, "b": 40}`, nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := "The sum of 2 and 40 is 42."; res.Content != want {
			t.Errorf("content = %q, want %q", res.Content, want)
		}
	})

	t.Run("progress", func(t *testing.T) {
		type event struct {
			msg      string
			fraction float64
		}
		var mu sync.Mutex
		var events []event
		first := make(chan struct{})
		var once sync.Once
		done := make(chan struct{})
		var res tools.Result
		var callErr error
		tl, _ := reg.Get("everything__trigger-long-running-operation")
		go func() {
			defer close(done)
			res, callErr = tl.Call(ctx, tools.Call{
				ID:        "long",
				Arguments: json.RawMessage(`{"duration": 1, "steps": 4}`),
				Progress: func(msg string, fraction float64) {
					mu.Lock()
					events = append(events, event{msg, fraction})
					mu.Unlock()
					once.Do(func() { close(first) })
				},
			})
		}()
		waitFor(t, first, "the first progress event")
		select {
		case <-done:
			t.Error("the call had already returned when its first progress event arrived")
		default:
		}
		waitFor(t, done, "the long-running call")
		if callErr != nil {
			t.Fatal(callErr)
		}
		if !strings.Contains(res.Content, "Long running operation completed") {
			t.Errorf("content = %q", res.Content)
		}
		// The SDK handles notifications on a goroutine of their own, so the
		// last one, sent together with the result, may come after the call
		// has returned and is then dropped.
		want := []event{{"1 of 4", 0.25}, {"2 of 4", 0.5}, {"3 of 4", 0.75}, {"4 of 4", 1}}
		mu.Lock()
		defer mu.Unlock()
		if len(events) < len(want)-1 || fmt.Sprint(events) != fmt.Sprint(want[:len(events)]) {
			t.Errorf("progress events = %v, want %v (the last one may be missing)", events, want)
		}
	})

	t.Run("image", func(t *testing.T) {
		res, err := call(ctx, t, reg, "everything__get-tiny-image", `{}`, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(res.Content, "[image image/png, ") || !strings.Contains(res.Content, " bytes]") {
			t.Errorf("content = %q, want an image placeholder", res.Content)
		}
	})

	t.Run("isError", func(t *testing.T) {
		pid := currentPID(t, m, "everything")
		// Arguments the registry would refuse, to make the server fail the call.
		_, err := call(ctx, t, reg, "everything__get-sum", `{"a": "two", "b": 1}`, nil)
		var te *ToolError
		if !errors.As(err, &te) {
			t.Fatalf("error = %v, want a *ToolError", err)
		}
		if !strings.Contains(err.Error(), "Invalid arguments for tool get-sum") || te.Tool != "get-sum" || te.Server != "everything" {
			t.Errorf("error = %q (%+v), want the tool's own message", err, te)
		}
		if got := currentPID(t, m, "everything"); got != pid {
			t.Errorf("a tool error replaced the session (pid %d, then %d)", pid, got)
		}
	})
}

func TestStdioToolListChanged(t *testing.T) {
	m, reg := newManager(t, Config{Servers: map[string]ServerConfig{"everything": everythingStdio(t)}})
	// server-everything registers its capability-dependent tools once the
	// session is initialized and announces them with
	// notifications/tools/list_changed; it has no other way to change its
	// tool list on demand.
	listed := make(chan string, 16)
	m.listed = func(server, reason string) { listed <- server + ":" + reason }
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	for waitFor(t, listed, "a relisting after tools/list_changed") != "everything:list_changed" {
	}
	if !reg.Has("everything__simulate-research-query") {
		t.Errorf("the tool added after initialization is not registered; have %v", reg.Names())
	}
}

func TestStdioEnv(t *testing.T) {
	t.Setenv("LONGHAUL_TEST_WORKER_SECRET", "must-not-leak")
	sc := everythingStdio(t)
	sc.Env = map[string]string{"LONGHAUL_TEST_TOKEN": "tok-${TOKEN}"}
	m, reg := newManager(t, Config{Servers: map[string]ServerConfig{"everything": sc}})
	m.LookupEnv = func(name string) (string, bool) {
		if name == "TOKEN" {
			return "expanded-value", true
		}
		return "", false
	}
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	res, err := call(t.Context(), t, reg, "everything__get-env", `{}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Content, "tok-expanded-value") {
		t.Errorf("the server's environment lacks the expanded variable:\n%s", res.Content)
	}
	if strings.Contains(res.Content, "must-not-leak") {
		t.Errorf("the worker's environment leaked to the server:\n%s", res.Content)
	}
	if !strings.Contains(res.Content, "PATH") {
		t.Errorf("the server's environment lacks PATH:\n%s", res.Content)
	}
}

func TestFilesystem(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello from longhaul\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	m, reg := newManager(t, Config{Servers: map[string]ServerConfig{
		"files": {Command: node(t), Args: []string{serverScript(t, filesystemPkg), dir}},
	}})
	ctx := t.Context()
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if st := serverStatus(t, m, "files"); !st.Connected {
		t.Fatalf("status = %+v", st)
	}
	args := func(path string) string {
		b, _ := json.Marshal(map[string]string{"path": path})
		return string(b)
	}
	res, err := call(ctx, t, reg, "files__list_directory", args(dir), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Content, "[FILE] hello.txt") || !strings.Contains(res.Content, "[DIR] sub") {
		t.Errorf("list_directory = %q", res.Content)
	}
	res, err = call(ctx, t, reg, "files__read_text_file", args(filepath.Join(dir, "hello.txt")), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Content != "hello from longhaul\n" {
		t.Errorf("read_text_file = %q", res.Content)
	}
	_, err = call(ctx, t, reg, "files__read_text_file", args(filepath.Join(filepath.Dir(dir), "elsewhere.txt")), nil)
	var te *ToolError
	if !errors.As(err, &te) || !strings.Contains(te.Message, "Access denied") {
		t.Errorf("reading outside the root: error = %v, want the tool's access denied message", err)
	}
}

// startLongCall calls the long-running tool in the background. It returns
// a channel closed at the first progress event and one that receives the
// call's error.
func startLongCall(t *testing.T, reg *tools.Registry, name string) (<-chan struct{}, <-chan error) {
	t.Helper()
	tl, ok := reg.Get(name)
	if !ok {
		t.Fatalf("tool %q is not registered", name)
	}
	first := make(chan struct{})
	var once sync.Once
	done := make(chan error, 1)
	go func() {
		_, err := tl.Call(t.Context(), tools.Call{
			ID:        "long",
			Arguments: json.RawMessage(`{"duration": 120, "steps": 120}`),
			Progress:  func(string, float64) { once.Do(func() { close(first) }) },
		})
		done <- err
	}()
	return first, done
}

func TestStdioServerKilledMidCall(t *testing.T) {
	m, reg := newManager(t, Config{Servers: map[string]ServerConfig{"everything": everythingStdio(t)}})
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	pid := currentPID(t, m, "everything")
	first, done := startLongCall(t, reg, "everything__trigger-long-running-operation")
	waitFor(t, first, "the first progress event")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := waitFor(t, done, "the interrupted call to fail")
	if err == nil {
		t.Fatal("the call succeeded although its server was killed")
	}
	t.Logf("interrupted call: %v", err)

	wantSum(t, reg, "everything__get-sum", 1, 2)
	if got := currentPID(t, m, "everything"); got == pid || got == 0 {
		t.Errorf("pid after reconnecting = %d, want a new process (was %d)", got, pid)
	}
	if st := serverStatus(t, m, "everything"); !st.Connected {
		t.Errorf("status = %+v, want connected", st)
	}
}

func TestStreamableHTTP(t *testing.T) {
	port := freePort(t)
	startEverythingHTTP(t, "streamableHttp", port)
	m, reg := newManager(t, Config{Servers: map[string]ServerConfig{
		"remote": {URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", port)},
	}})
	ctx := t.Context()
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if st := serverStatus(t, m, "remote"); !st.Connected || st.Transport != TransportHTTP {
		t.Fatalf("status = %+v", st)
	}
	for _, name := range []string{"remote__get-sum", "remote__trigger-long-running-operation"} {
		if !reg.Has(name) {
			t.Errorf("tool %s is not registered; have %v", name, reg.Names())
		}
	}
	res, err := call(ctx, t, reg, "remote__get-sum", `{"a": 20, "b": 22}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Content != "The sum of 20 and 22 is 42." {
		t.Errorf("content = %q", res.Content)
	}
	var fractions []float64
	var mu sync.Mutex
	_, err = call(ctx, t, reg, "remote__trigger-long-running-operation", `{"duration": 0.6, "steps": 3}`, func(_ string, f float64) {
		mu.Lock()
		fractions = append(fractions, f)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	// The last event may come after the result (see TestStdioEverything).
	if len(fractions) < 2 || fractions[0] != 1.0/3 || fractions[1] != 2.0/3 {
		t.Errorf("progress fractions = %v, want 1/3, 2/3 and maybe 1", fractions)
	}
}

func TestSSE(t *testing.T) {
	port := freePort(t)
	startEverythingHTTP(t, "sse", port)
	m, reg := newManager(t, Config{Servers: map[string]ServerConfig{
		"old": {URL: fmt.Sprintf("http://127.0.0.1:%d/sse", port), Transport: TransportSSE},
	}})
	m.ConnectTimeout = 20 * time.Second
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st := serverStatus(t, m, "old"); !st.Connected || st.Transport != TransportSSE {
		t.Fatalf("status = %+v", st)
	}
	wantSum(t, reg, "old__get-sum", 1, 1)
}

func TestHTTPServerKilledMidCall(t *testing.T) {
	port := freePort(t)
	srv := startEverythingHTTP(t, "streamableHttp", port)
	m, reg := newManager(t, Config{Servers: map[string]ServerConfig{
		"remote": {URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", port)},
	}})
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	first, done := startLongCall(t, reg, "remote__trigger-long-running-operation")
	waitFor(t, first, "the first progress event")
	srv.kill(t)
	startEverythingHTTP(t, "streamableHttp", port)
	err := waitFor(t, done, "the interrupted call to fail")
	if err == nil {
		t.Fatal("the call succeeded although its server was killed")
	}
	t.Logf("interrupted call: %v", err)

	wantSum(t, reg, "remote__get-sum", 3, 4)
}
