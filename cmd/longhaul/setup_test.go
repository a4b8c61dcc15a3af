package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/devserver"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"
)

// TestSetupRegistersSearchAttributes runs `longhaul setup` against a
// Temporal server that has none of Longhaul's search attributes: the first
// run registers all four, the second finds them and changes nothing, a
// namespace that does not exist and one with an attribute of the wrong
// type are each a clear failure.
func TestSetupRegistersSearchAttributes(t *testing.T) {
	addr := testenv.FreeAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := devserver.Start(ctx, devserver.Options{
		DataDir:      t.TempDir(),
		FrontendAddr: addr,
		Namespaces:   []string{"default", "typed"},
		Logger:       slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	c, err := client.DialContext(ctx, client.Options{HostPort: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace: "typed", SearchAttributes: map[string]enumspb.IndexedValueType{"LonghaulUser": enumspb.INDEXED_VALUE_TYPE_TEXT},
	})
	if err != nil {
		t.Fatal(err)
	}

	setup := func(ns string) (int, string, string) {
		t.Setenv("LONGHAUL_TEMPORAL_ADDRESS", addr)
		t.Setenv("LONGHAUL_TEMPORAL_NAMESPACE", ns)
		var out, errs bytes.Buffer
		code := Main([]string{"setup"}, &out, &errs)
		return code, out.String(), errs.String()
	}
	code, out, errs := setup("default")
	if code != 0 || !strings.Contains(out, "registered the search attributes LonghaulAgent, LonghaulChat, LonghaulForkedFrom, LonghaulStatus, LonghaulUser") {
		t.Fatalf("first setup = %d, out %q, err %q", code, out, errs)
	}
	have, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	for name, typ := range contract.SearchAttributes() {
		if got, ok := have.GetCustomAttributes()[name]; !ok || got != typ {
			t.Errorf("%s after setup: %v (registered %v), want %v", name, got, ok, typ)
		}
	}
	if code, out, errs := setup("default"); code != 0 || !strings.Contains(out, "all registered already") {
		t.Errorf("second setup = %d, out %q, err %q", code, out, errs)
	}
	// A missing namespace is asked for again for setupNamespaceWait (the
	// frontend's namespace cache lags a new one; test/stack checks that
	// wait against a namespace created a moment before) before it fails.
	setupNamespaceWait = time.Second
	t.Cleanup(func() { setupNamespaceWait = 15 * time.Second })
	if code, _, errs := setup("nowhere"); code != 1 || !strings.Contains(errs, `namespace "nowhere" does not exist`) {
		t.Errorf("setup of a missing namespace = %d, err %q", code, errs)
	}
	if code, _, errs := setup("typed"); code != 1 || !strings.Contains(errs, "LonghaulUser is Text, Longhaul needs Keyword") {
		t.Errorf("setup over a Text attribute = %d, err %q", code, errs)
	}
}

// TestHealth: `longhaul health` is the image's healthcheck: 0 while the
// API at LONGHAUL_HTTP_ADDR answers /readyz with 200, 1 (saying why) when
// it answers otherwise or not at all.
func TestHealth(t *testing.T) {
	var ready atomic.Bool
	ready.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		if !ready.Load() {
			http.Error(w, `{"status":"unavailable","temporal":"unavailable"}`, http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	t.Setenv("LONGHAUL_HTTP_ADDR", "0.0.0.0:"+port)
	var errs bytes.Buffer
	if code := Main([]string{"health"}, io.Discard, &errs); code != 0 {
		t.Fatalf("health of a ready API = %d: %s", code, errs.String())
	}
	ready.Store(false)
	if code := Main([]string{"health"}, io.Discard, &errs); code != 1 || !strings.Contains(errs.String(), "503") || !strings.Contains(errs.String(), "temporal") {
		t.Errorf("health of an unready API = %d: %q", code, errs.String())
	}
	srv.Close()
	errs.Reset()
	if code := Main([]string{"health"}, io.Discard, &errs); code != 1 || !strings.Contains(errs.String(), "refused") {
		t.Errorf("health of no API = %d: %q", code, errs.String())
	}
}
