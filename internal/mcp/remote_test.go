//go:build unix

// Remote MCP servers' headers and origins, configuration mistakes,
// secrets in errors, reconnection under concurrent calls, and approval.

package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/tools"
)

func TestHeadersAndBackgroundRetry(t *testing.T) {
	// A proxy in front of the real server records the headers it is sent
	// and stands in for a server that is down until the test starts it.
	port := freePort(t)
	target, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", port))
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1
	// The proxy's own connections upstream are not the Manager's: without
	// keep-alive none of them idles past its request, so checkNoGoroutines
	// judges the Manager's alone (the default transport's idle connections
	// live 90 s).
	proxy.Transport = &http.Transport{DisableKeepAlives: true}
	proxy.ErrorLog = log.New(io.Discard, "", 0) // 502s until the server starts
	var mu sync.Mutex
	var auth []string
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)

	m, reg := newManager(t, Config{Servers: map[string]ServerConfig{
		"remote": {
			URL:     front.URL + "/mcp?key=${API_KEY}",
			Headers: map[string]string{"Authorization": "Bearer ${API_KEY}"},
		},
	}})
	m.LookupEnv = func(name string) (string, bool) {
		if name == "API_KEY" {
			return "sekrit-123", true
		}
		return "", false
	}
	m.RetryMin, m.RetryMax = 20*time.Millisecond, 100*time.Millisecond
	listed := make(chan string, 16)
	m.listed = func(server, reason string) { listed <- reason }
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	st := serverStatus(t, m, "remote")
	if st.Connected || st.Err == nil {
		t.Fatalf("status = %+v, want the first attempt failed (the server is down)", st)
	}
	if strings.Contains(st.Err.Error(), "sekrit-123") {
		t.Errorf("the error shows the expanded secret: %v", st.Err)
	}
	t.Logf("first attempt: %v", st.Err)

	startEverythingHTTP(t, "streamableHttp", port)
	for waitFor(t, listed, "the background retry to connect") != "connect" {
	}
	wantSum(t, reg, "remote__get-sum", 5, 5)
	mu.Lock()
	defer mu.Unlock()
	if len(auth) == 0 {
		t.Fatal("the proxy saw no request")
	}
	for _, a := range auth {
		if a != "Bearer sekrit-123" {
			t.Errorf("Authorization = %q, want the expanded header", a)
		}
	}
}

// TestHeadersNotSentAcrossOrigins: the configured headers go to the
// configured server only. The server here answers every request with a
// redirect to another origin (another port), which proxies to a real MCP
// server: the session works, and the other origin never sees the
// Authorization or the custom header.
func TestHeadersNotSentAcrossOrigins(t *testing.T) {
	port := freePort(t)
	startEverythingHTTP(t, "streamableHttp", port)
	target, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", port))
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1
	// The proxy's own connections upstream are not the Manager's: without
	// keep-alive none of them idles past its request, so checkNoGoroutines
	// judges the Manager's alone (the default transport's idle connections
	// live 90 s).
	proxy.Transport = &http.Transport{DisableKeepAlives: true}
	type seen struct{ auth, key string }
	var mu sync.Mutex
	var atFront, atOther []seen
	record := func(list *[]seen, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		*list = append(*list, seen{r.Header.Get("Authorization"), r.Header.Get("X-Api-Key")})
	}
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		record(&atOther, r)
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(other.Close)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		record(&atFront, r)
		// 307 keeps the method and the body, so the POSTs of the
		// streamable transport are redirected as they are.
		http.Redirect(w, r, other.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	t.Cleanup(front.Close)

	m, reg := newManager(t, Config{Servers: map[string]ServerConfig{
		"remote": {
			URL:     front.URL + "/mcp",
			Headers: map[string]string{"Authorization": "Bearer ${API_KEY}", "X-Api-Key": "${API_KEY}"},
		},
	}})
	m.LookupEnv = func(name string) (string, bool) { return "sekrit-123", name == "API_KEY" }
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st := serverStatus(t, m, "remote"); !st.Connected {
		t.Fatalf("status = %+v, want connected through the redirect", st)
	}
	wantSum(t, reg, "remote__get-sum", 2, 3)
	mu.Lock()
	defer mu.Unlock()
	if len(atFront) == 0 || len(atOther) == 0 {
		t.Fatalf("requests: %d to the server, %d to the other origin; want both", len(atFront), len(atOther))
	}
	for _, s := range atFront {
		if s != (seen{"Bearer sekrit-123", "sekrit-123"}) {
			t.Errorf("the configured server got headers %+v, want both configured headers", s)
		}
	}
	for _, s := range atOther {
		if s != (seen{}) {
			t.Errorf("the other origin got headers %+v, want none of the configured ones", s)
		}
	}
}

func TestMissingVariable(t *testing.T) {
	m, _ := newManager(t, Config{Servers: map[string]ServerConfig{
		"remote": {URL: "http://127.0.0.1:1/mcp", Headers: map[string]string{"Authorization": "Bearer ${LONGHAUL_TEST_UNSET}"}},
	}})
	m.LookupEnv = func(string) (string, bool) { return "", false }
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	st := serverStatus(t, m, "remote")
	if st.Connected || st.Err == nil || !strings.Contains(st.Err.Error(), `"LONGHAUL_TEST_UNSET" is not set`) {
		t.Errorf("status = %+v, want an error naming the variable", st)
	}
}

func TestInvalidServerConfig(t *testing.T) {
	m, reg := newManager(t, Config{Servers: map[string]ServerConfig{
		"bad__name": {Command: "true"},
	}})
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	st := serverStatus(t, m, "bad__name")
	if st.Connected || !errors.Is(st.Err, ErrInvalidConfig) {
		t.Errorf("status = %+v, want ErrInvalidConfig", st)
	}
	if len(reg.Names()) != 0 {
		t.Errorf("tools = %v", reg.Names())
	}
}

func TestCallAfterClose(t *testing.T) {
	m, reg := newManager(t, Config{Servers: map[string]ServerConfig{"everything": everythingStdio(t)}})
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	tl, _ := reg.Get("everything__get-sum")
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := tl.Call(t.Context(), tools.Call{Arguments: json.RawMessage(`{"a":1,"b":2}`)}); !errors.Is(err, ErrClosed) {
		t.Errorf("call after Close: %v, want ErrClosed", err)
	}
	if err := m.Start(t.Context()); !errors.Is(err, ErrClosed) {
		t.Errorf("Start after Close: %v, want ErrClosed", err)
	}
}

func TestSecretsRedacted(t *testing.T) {
	port := freePort(t) // nothing listens there
	m, _ := newManager(t, Config{Servers: map[string]ServerConfig{
		"remote": {URL: fmt.Sprintf("http://127.0.0.1:%d/mcp?key=${API_KEY}", port)},
	}})
	m.LookupEnv = func(name string) (string, bool) { return "sekrit/value 123", name == "API_KEY" }
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	st := serverStatus(t, m, "remote")
	if st.Err == nil {
		t.Fatalf("status = %+v, want an error", st)
	}
	msg := st.Err.Error()
	t.Logf("error: %s", msg)
	if strings.Contains(msg, "sekrit") {
		t.Errorf("the error shows the expanded secret: %s", msg)
	}
	if !strings.Contains(msg, "${API_KEY}") {
		t.Errorf("the error does not name the variable: %s", msg)
	}
}

func TestConcurrentCallsShareOneReconnect(t *testing.T) {
	m, reg := newManager(t, Config{Servers: map[string]ServerConfig{"everything": everythingStdio(t)}})
	var mu sync.Mutex
	connects := 0
	m.listed = func(_, reason string) {
		if reason == "connect" {
			mu.Lock()
			connects++
			mu.Unlock()
		}
	}
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	s := m.servers[0]
	s.mu.Lock()
	sess := s.sess
	s.mu.Unlock()
	if err := syscall.Kill(sess.pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, sess.ended, "the session to end")
	if st := serverStatus(t, m, "everything"); st.Connected || st.Err == nil {
		t.Errorf("status after the server died = %+v, want disconnected with a reason", st)
	}

	const n = 8
	errs := make(chan error, n)
	for i := range n {
		go func() {
			res, err := call(t.Context(), t, reg, "everything__get-sum", fmt.Sprintf(`{"a": %d, "b": 1}`, i), nil)
			if err == nil && res.Content != fmt.Sprintf("The sum of %d and 1 is %d.", i, i+1) {
				err = fmt.Errorf("content = %q", res.Content)
			}
			errs <- err
		}()
	}
	for range n {
		if err := waitFor(t, errs, "a call"); err != nil {
			t.Error(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if connects != 2 {
		t.Errorf("%d connections, want 2: the first and one shared reconnect", connects)
	}
}

// TestToolsRequireApprovalAsConfigured: a server's approval setting marks
// its tools, so the tool activity asks for a recorded approval of each call.
func TestToolsRequireApprovalAsConfigured(t *testing.T) {
	some := everythingStdio(t)
	some.Approve = []string{"get-sum"}
	all := everythingStdio(t)
	all.ApproveAll = true
	m, reg := newManager(t, Config{Servers: map[string]ServerConfig{"some": some, "all": all}})
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"some__get-sum": true, "some__echo": false, "all__echo": true, "all__get-sum": true} {
		tl, ok := reg.Get(name)
		if !ok {
			t.Errorf("no tool %s", name)
			continue
		}
		if got := tools.NeedsApproval(tl); got != want {
			t.Errorf("NeedsApproval(%s) = %v, want %v", name, got, want)
		}
	}
}
