// Package tracing sets up OpenTelemetry tracing from the standard OTEL_*
// environment variables: with OTEL_EXPORTER_OTLP_ENDPOINT (or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) set, spans are exported over OTLP
// (http/protobuf, or gRPC when OTEL_EXPORTER_OTLP_PROTOCOL says grpc);
// without it nothing is recorded. The API's request span, Temporal's
// workflow and activity spans (its tracing interceptor) and the model and
// tool call spans all go through the global tracer provider set here, so
// one chat is one trace.
package tracing

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
)

// Name is the instrumentation scope of Longhaul's own spans.
const Name = "github.com/longhaul-dev/longhaul"

// Tracer is the tracer of Longhaul's own spans (the global provider's).
func Tracer() trace.Tracer { return otel.Tracer(Name) }

// Propagator reads and writes W3C trace context and baggage: a caller's
// traceparent continues in the API's spans.
var Propagator propagation.TextMapPropagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// Enabled reports whether the environment asks for spans to be exported.
func Enabled() bool {
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Setup installs the W3C trace-context propagator and, when Enabled, a
// tracer provider exporting over OTLP, named service unless
// OTEL_SERVICE_NAME says otherwise. The returned function flushes and
// stops it.
func Setup(ctx context.Context, service string) (func(context.Context) error, error) {
	otel.SetTextMapPropagator(Propagator)
	if !Enabled() {
		return func(context.Context) error { return nil }, nil
	}
	var exp sdktrace.SpanExporter
	var err error
	switch protocol() {
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	case "http/protobuf", "":
		exp, err = otlptracehttp.New(ctx)
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL %q: want grpc or http/protobuf", protocol())
	}
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName(service)))
	if err != nil {
		return nil, err
	}
	// resource.Default reads OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES;
	// they win over the command's name.
	if os.Getenv("OTEL_SERVICE_NAME") != "" {
		res = resource.Default()
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { slog.Default().Warn("tracing: " + err.Error()) }))
	return tp.Shutdown, nil
}

func protocol() string {
	if p := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"); p != "" {
		return p
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
}

// Interceptor is Temporal's OpenTelemetry interceptor on the global tracer
// provider: a client's workflow starts carry the caller's span, and its
// workers continue it in workflow and activity spans (and put the trace
// and span ids on the workflow's and activity's loggers).
func Interceptor() (interceptor.Interceptor, error) {
	return temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{Tracer: otel.Tracer("temporal-sdk-go")})
}

// LogHandler adds the trace and span ids of a record's context to it, so
// a log line written with a request's or a call's context (InfoContext,
// ErrorContext) names its trace.
func LogHandler(h slog.Handler) slog.Handler { return logHandler{h} }

type logHandler struct{ slog.Handler }

func (h logHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, r)
}

func (h logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return logHandler{h.Handler.WithAttrs(as)}
}

func (h logHandler) WithGroup(name string) slog.Handler { return logHandler{h.Handler.WithGroup(name)} }

// Interceptors are the client interceptors of every Temporal client of
// Longhaul's: Temporal's tracing interceptor (Interceptor), and inside it
// the one that makes an agent run's workflow span the invoke_agent span of
// OpenTelemetry's GenAI conventions (AgentSpans).
func Interceptors() ([]interceptor.ClientInterceptor, error) {
	tracer, err := Interceptor()
	if err != nil {
		return nil, err
	}
	return []interceptor.ClientInterceptor{tracer, &AgentSpans{}}, nil
}
