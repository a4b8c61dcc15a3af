package api_test

import (
	"github.com/longhaul-dev/longhaul/internal/runs"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/internal/identity"
	"github.com/longhaul-dev/longhaul/skills"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// TestMetricsRoute: with a MetricsHandler (longhaul api's default) the API
// serves GET /metrics on its own listener without a key, as /healthz,
// while /v1 still wants one; without it /metrics is no route.
func TestMetricsRoute(t *testing.T) {
	catalog, err := skills.Load(skills.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	keys, err := identity.ParseKeys([]string{"ci:sk-test"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "longhaul_test_total", Help: "A test series."}))
	tests := []struct {
		name    string
		handler http.Handler
		path    string
		status  int
		body    string
	}{
		{"metrics without a key", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), "/metrics", http.StatusOK, "longhaul_test_total 0"},
		{"the API still wants a key", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), "/v1/models", http.StatusUnauthorized, ""},
		{"no handler, no route", nil, "/metrics", http.StatusNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := api.New(api.Config{TaskQueue: "q", Keys: keys, Metrics: prometheus.NewRegistry(), MetricsHandler: tt.handler}, runs.NewTemporal(panicking{}, runs.Config{TaskQueue: "q"}), catalog, slog.New(slog.DiscardHandler))
			resp, err := srv.App().Test(httptest.NewRequest(http.MethodGet, tt.path, nil))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status || !strings.Contains(string(b), tt.body) {
				t.Errorf("GET %s = %d %s; want %d with %q", tt.path, resp.StatusCode, b, tt.status, tt.body)
			}
		})
	}
}
