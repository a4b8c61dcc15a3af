package activities

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/internal/budget"
	"github.com/longhaul-dev/longhaul/internal/tracing"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/semconv/v1.40.0/genaiconv"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/activity"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/temporal"
)

// The engine's series, recorded through the worker's Temporal metrics
// handler (see internal/metrics), which adds the activity type, task queue
// and namespace. Prometheus names them with a _total suffix.
const (
	// MetricModelCalls counts finished model call attempts by model, kind
	// (chat: a streamed turn; structured: a plan, review or dispatch) and
	// outcome.
	MetricModelCalls = "longhaul_model_calls"
	// MetricModelTokens counts the tokens of model calls by model and
	// direction (in: the prompt; out: the completion).
	MetricModelTokens = "longhaul_model_tokens"
	// MetricModelRetries counts the model call attempts after the first.
	MetricModelRetries = "longhaul_model_retries"
	// MetricToolCalls counts tool call attempts by tool and outcome.
	MetricToolCalls = "longhaul_tool_calls"
	// MetricContextFits counts model requests by model and how they fit
	// the model's window (as_built, shortened, compact: older turns must
	// be summarized first, exceeded: the run ends).
	MetricContextFits = "longhaul_context_fits"
	// MetricContextUsed is the share of the window the model's latest
	// request used, by model.
	MetricContextUsed = "longhaul_context_used_ratio"
	// MetricCompactions counts compactions by model (the compact role's).
	MetricCompactions = "longhaul_context_compactions"
	// MetricSpendTokens counts the settled tokens of chat model calls by
	// agent, model and direction, and by principal where
	// LONGHAUL_METRICS_PRINCIPAL asks for it.
	MetricSpendTokens = "longhaul_spend_tokens"
	// MetricSpendCost counts their cost (LONGHAUL_MODEL_PRICES) in
	// millionths of a US dollar, by the same labels.
	MetricSpendCost = "longhaul_spend_microdollars"
)

// MetricHelp describes the activities' series for Prometheus.
var MetricHelp = map[string]string{
	MetricModelCalls:   "Model call attempts, by model, kind (chat, structured) and outcome (ok, error, refused, cancelled).",
	MetricModelTokens:  "Tokens of model calls, by model and direction (in: prompt, out: completion).",
	MetricModelRetries: "Model call attempts after the first, by model.",
	MetricToolCalls:    "Tool call attempts, by tool and outcome (ok, error, refused, cancelled).",
	MetricContextFits:  "Model requests by model and how they fit its context window (as_built, shortened, compact, exceeded).",
	MetricContextUsed:  "Share of its context window the model's latest request used, by model.",
	MetricCompactions:  "Compactions of older turns into a summary, by the compact role's model.",
	MetricSpendTokens:  "Settled tokens of chat model calls, by agent, model, direction (in, out) and, with LONGHAUL_METRICS_PRINCIPAL, principal.",
	MetricSpendCost:    "Cost of chat model calls in millionths of a US dollar (LONGHAUL_MODEL_PRICES), by agent, model and, with LONGHAUL_METRICS_PRINCIPAL, principal.",
}

// observeWindow records how one model request fit its window.
func observeWindow(ctx context.Context, d longhaul.ContextData, compact int, err error) {
	h := activity.GetMetricsHandler(ctx).WithTags(map[string]string{"model": d.Model})
	how := "as_built"
	switch {
	case err != nil:
		how = "exceeded"
	case compact > 0:
		how = "compact"
	case d.Changed():
		how = "shortened"
	}
	h.WithTags(map[string]string{"fit": how}).Counter(MetricContextFits).Inc(1)
	if d.Window > 0 && err == nil {
		h.Gauge(MetricContextUsed).Update(float64(d.Used+d.Reserved) / float64(d.Window))
	}
}

// modelSpan starts the span of one model call attempt (GenAI semantic
// conventions) and returns what ends it, recording the call's metrics too:
// Longhaul's own and the GenAI client metrics (genAIMetrics).
func modelSpan(ctx context.Context, kind, model string) (context.Context, func(responseModel string, usage longhaul.Usage, err error)) {
	ctx, span := tracing.Tracer().Start(ctx, "chat "+model, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		semconv.GenAIOperationNameChat, semconv.GenAIProviderNameOpenAI, semconv.GenAIRequestModel(model),
		attribute.String("longhaul.model_call.kind", kind)))
	began := time.Now()
	return ctx, func(responseModel string, usage longhaul.Usage, err error) {
		if responseModel != "" {
			span.SetAttributes(semconv.GenAIResponseModel(responseModel))
		}
		span.SetAttributes(semconv.GenAIUsageInputTokens(usage.PromptTokens), semconv.GenAIUsageOutputTokens(usage.CompletionTokens))
		endSpan(span, err)
		countModel(ctx, kind, model, usage, err)
		genAIMetrics(ctx, time.Since(began), model, responseModel, usage, err)
	}
}

// genAIMetrics records one model call attempt in the GenAI client metrics
// of OpenTelemetry's semantic conventions (gen_ai.client.operation.duration
// and gen_ai.client.token.usage, histograms Temporal's metrics handler has
// no kind for: they are recorded on its meter directly, which an activity
// may, as it never replays). The provider is "openai": the dialect every
// endpoint is spoken to in, whatever serves it.
func genAIMetrics(ctx context.Context, took time.Duration, model, responseModel string, usage longhaul.Usage, err error) {
	h := temporalotel.ExtractMetricsHandler(activity.GetMetricsHandler(ctx))
	if h == nil {
		return
	}
	in := genAIFor(h.GetMeter())
	attrs := []attribute.KeyValue{semconv.GenAIRequestModel(model)}
	if responseModel != "" {
		attrs = append(attrs, semconv.GenAIResponseModel(responseModel))
	}
	with := attrs
	if err != nil {
		with = append(with[:len(with):len(with)], semconv.ErrorTypeKey.String(outcome(ctx, err)))
	}
	in.duration.Record(ctx, took.Seconds(), genaiconv.OperationNameChat, genaiconv.ProviderNameOpenAI, with...)
	if err != nil {
		return
	}
	in.tokens.Record(ctx, int64(usage.PromptTokens), genaiconv.OperationNameChat, genaiconv.ProviderNameOpenAI, genaiconv.TokenTypeInput, attrs...)
	in.tokens.Record(ctx, int64(usage.CompletionTokens), genaiconv.OperationNameChat, genaiconv.ProviderNameOpenAI, genaiconv.TokenTypeOutput, attrs...)
}

// genAIInstruments are the GenAI client metrics' instruments of one meter.
type genAIInstruments struct {
	duration genaiconv.ClientOperationDuration
	tokens   genaiconv.ClientTokenUsage
}

var (
	genAIMu    sync.Mutex
	genAIMeter = map[metric.Meter]genAIInstruments{}
)

// genAIFor is meter's GenAI instruments, made on its first call: a meter
// is a process's (its metrics handler's), so this is one entry.
func genAIFor(meter metric.Meter) genAIInstruments {
	genAIMu.Lock()
	defer genAIMu.Unlock()
	in, ok := genAIMeter[meter]
	if !ok {
		// An instrument the meter refuses is a no-op one: the call is
		// not the metric's to fail.
		in.duration, _ = genaiconv.NewClientOperationDuration(meter)
		in.tokens, _ = genaiconv.NewClientTokenUsage(meter)
		genAIMeter[meter] = in
	}
	return in
}

// toolSpan starts the span of one tool call attempt and returns what ends
// it, recording the call's metrics too; label names the tool in metrics.
func toolSpan(ctx context.Context, call longhaul.ToolCall, label, target string) (context.Context, func(err error)) {
	attrs := []attribute.KeyValue{semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(call.Name), semconv.GenAIToolCallID(call.ID)}
	if target != "" {
		attrs = append(attrs, attribute.String("longhaul.tool.target", target))
	}
	ctx, span := tracing.Tracer().Start(ctx, "execute_tool "+call.Name, trace.WithAttributes(attrs...))
	return ctx, func(err error) {
		endSpan(span, err)
		countTool(ctx, label, err)
	}
}

func endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// countModel records one model call attempt of kind: its outcome, its
// tokens and, for a retry, the retry.
func countModel(ctx context.Context, kind, model string, usage longhaul.Usage, err error) {
	h := activity.GetMetricsHandler(ctx).WithTags(map[string]string{"model": model})
	h.WithTags(map[string]string{"kind": kind, "outcome": outcome(ctx, err)}).Counter(MetricModelCalls).Inc(1)
	if usage.PromptTokens > 0 {
		h.WithTags(map[string]string{"direction": "in"}).Counter(MetricModelTokens).Inc(int64(usage.PromptTokens))
	}
	if usage.CompletionTokens > 0 {
		h.WithTags(map[string]string{"direction": "out"}).Counter(MetricModelTokens).Inc(int64(usage.CompletionTokens))
	}
	if activity.GetInfo(ctx).Attempt > 1 {
		h.Counter(MetricModelRetries).Inc(1)
	}
}

// countTool records one tool call attempt and its outcome.
func countTool(ctx context.Context, tool string, err error) {
	activity.GetMetricsHandler(ctx).WithTags(map[string]string{"tool": tool, "outcome": outcome(ctx, err)}).Counter(MetricToolCalls).Inc(1)
}

// outcome names how a call ended: ok, cancelled, refused (the engine or
// the endpoint would not run it; retrying cannot help) or error.
func outcome(ctx context.Context, err error) string {
	var app *temporal.ApplicationError
	switch {
	case err == nil:
		return "ok"
	case ctx.Err() != nil || temporal.IsCanceledError(err):
		return "cancelled"
	case errors.As(err, &app) && (app.Type() == longhaul.ErrTypeToolRefused || app.Type() == longhaul.ErrTypeModelRejected):
		return "refused"
	}
	return "error"
}

// countSpend records one settled chat model call's tokens and cost. The
// principal is a label only when byPrincipal is set: one series per user
// is more than Prometheus should hold where users are many.
func countSpend(ctx context.Context, c budget.Call, in, out, cost int64, byPrincipal bool) {
	tags := map[string]string{"agent": c.Agent, "model": c.Model}
	if byPrincipal {
		tags["principal"] = c.Principal
	}
	h := activity.GetMetricsHandler(ctx).WithTags(tags)
	h.WithTags(map[string]string{"direction": "in"}).Counter(MetricSpendTokens).Inc(in)
	h.WithTags(map[string]string{"direction": "out"}).Counter(MetricSpendTokens).Inc(out)
	h.Counter(MetricSpendCost).Inc(cost)
}
