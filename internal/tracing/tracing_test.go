package tracing_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/internal/tracing"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// TestLogHandlerNamesTheTrace: a line logged with a traced context carries
// the trace and span ids; one logged without carries neither.
func TestLogHandlerNamesTheTrace(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(tracing.LogHandler(slog.NewTextHandler(&buf, nil))).With("component", "api")
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	ctx, span := tp.Tracer("test").Start(context.Background(), "request")
	log.InfoContext(ctx, "traced", "run", "run-1")
	span.End()
	log.Info("untraced")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	sc := span.SpanContext()
	if len(lines) != 2 || !strings.Contains(lines[0], "trace_id="+sc.TraceID().String()) || !strings.Contains(lines[0], "span_id="+sc.SpanID().String()) ||
		!strings.Contains(lines[0], "component=api") || !strings.Contains(lines[0], "run=run-1") {
		t.Fatalf("traced line: %q", lines[0])
	}
	if strings.Contains(lines[1], "trace_id") {
		t.Errorf("untraced line: %q", lines[1])
	}
}
