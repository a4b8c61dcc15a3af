// Package metrics is Longhaul's Prometheus endpoint. One registry per
// process holds three kinds of series: the HTTP API's (recorded by the API
// with the collectors of API), the engine's (recorded through Temporal's
// metrics handler from workflows and activities, so a replayed workflow
// counts nothing twice), and the Temporal SDK's own client and worker
// series, which the same handler carries. The handler is OpenTelemetry's,
// exported to the registry by OpenTelemetry's Prometheus exporter.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
)

// Off is the value of LONGHAUL_METRICS_ADDR that serves no metrics.
const Off = "off"

// Metrics is a process's registry and the Temporal metrics handler that
// records into it.
type Metrics struct {
	// Registry holds every series the endpoint serves.
	Registry *prometheus.Registry
	// Temporal is the handler for client.Options.MetricsHandler: the SDK's
	// series and the engine's (workflow.GetMetricsHandler,
	// activity.GetMetricsHandler) go through it.
	Temporal client.MetricsHandler
	provider *sdkmetric.MeterProvider
}

// New makes a registry with the Go runtime's and the process's series and
// a Temporal metrics handler exporting into it. help describes the series
// recorded through the handler by name (Prometheus's HELP); the Temporal
// SDK's own get a generic description.
func New(help map[string]string) (*Metrics, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp), sdkmetric.WithView(func(inst sdkmetric.Instrument) (sdkmetric.Stream, bool) {
		if inst.Description != "" {
			return sdkmetric.Stream{}, false
		}
		d, ok := help[inst.Name]
		if !ok {
			d = "Temporal SDK's " + strings.ReplaceAll(strings.TrimPrefix(inst.Name, "temporal_"), "_", " ") + " (see docs.temporal.io, SDK metrics)."
		}
		return sdkmetric.Stream{Name: inst.Name, Description: d, Unit: inst.Unit}, true
	}))
	handler := temporalotel.NewMetricsHandler(temporalotel.MetricsHandlerOptions{
		Meter:                provider.Meter("longhaul"),
		UseMonotonicCounters: true,
		// A meter error (a clash of a name's kinds) loses that series,
		// never the call that records it.
		OnError: func(err error) { slog.Default().Warn("metrics: " + err.Error()) },
	})
	return &Metrics{Registry: reg, Temporal: handler, provider: provider}, nil
}

// Handler serves the registry in Prometheus's text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}

// Serve serves /metrics on addr until ctx ends. It returns once the
// address is bound (or could not be), serving on in the background; the
// returned address is the one bound (addr may end in :0).
func (m *Metrics) Serve(ctx context.Context, addr string, log *slog.Logger) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("LONGHAUL_METRICS_ADDR %s: %w (set another address, or off)", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	ServeOn(ctx, ln, mux, "metrics", log, m.provider.Shutdown)
	return ln.Addr().String(), nil
}

// ServeOn serves h on ln in the background until ctx ends, then shuts the
// server down, and after it each of stop, within 5 seconds in all. An
// error that stops the server early is logged as the what endpoint's: a
// process's own endpoints (metrics, profiles) beside its work.
func ServeOn(ctx context.Context, ln net.Listener, h http.Handler, what string, log *slog.Logger, stop ...func(context.Context) error) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error(what+" endpoint stopped", "error", err)
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		for _, f := range stop {
			_ = f(sctx)
		}
	}()
}
