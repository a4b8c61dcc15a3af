package api_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// TestOneChatIsOneTrace sends a chat that calls a tool, with a caller's
// traceparent, and reads the spans an in-memory exporter received: the
// request's span continues the caller's trace, and the workflow, the
// model calls (with their GenAI attributes) and the tool call hang below
// it, one tree.
func TestOneChatIsOneTrace(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() {
		otel.SetTracerProvider(prev)
		_ = tp.Shutdown(context.Background())
	})

	env := testenv.Start(t, testenv.Options{Tracing: true})
	env.Model.On(func(r llmtest.Request) bool { return r.Chat.Messages[len(r.Chat.Messages)-1].Role == "user" },
		llmtest.ToolCalls(llmtest.ToolCall{ID: "call_1", Name: "current_time", Arguments: `{}`}).With(llmtest.Usage(30, 4)))
	env.Model.On(func(llmtest.Request) bool { return true }, llmtest.Text("Tea time.", llmtest.Usage(50, 3)))

	caller, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	parent, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	resp := do(t, env, "POST", "/v1/chat/completions", chatBody{"model": "assistant", "messages": conversation("What time is it?")},
		map[string]string{"traceparent": "00-" + caller.String() + "-" + parent.String() + "-01"})
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("chat = %d", resp.StatusCode)
	}

	// The request's span ends as its answer is written: wait for it.
	var spans tracetest.SpanStubs
	deadline := time.Now().Add(30 * time.Second)
	for {
		spans = exp.GetSpans()
		if find(spans, "POST /v1/chat/completions") != nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	byID := map[trace.SpanID]tracetest.SpanStub{}
	for _, s := range spans {
		byID[s.SpanContext.SpanID()] = s
	}
	req := find(spans, "POST /v1/chat/completions")
	if req == nil {
		t.Fatalf("no span of the request among %v", names(spans))
	}
	if req.SpanContext.TraceID() != caller || req.Parent.SpanID() != parent {
		t.Fatalf("the request's span is in trace %s under %s, want the caller's %s under %s", req.SpanContext.TraceID(), req.Parent.SpanID(), caller, parent)
	}
	// under reports whether s hangs below the request's span.
	under := func(s tracetest.SpanStub) bool {
		for p := s.Parent.SpanID(); p.IsValid(); p = byID[p].Parent.SpanID() {
			if p == req.SpanContext.SpanID() {
				return true
			}
			if _, ok := byID[p]; !ok {
				return false
			}
		}
		return false
	}
	for _, name := range []string{"RunWorkflow:AgentWorkflow", "RunActivity:ChatCompletion", "chat llmtest", "RunActivity:CallTool", "execute_tool current_time"} {
		s := find(spans, name)
		if s == nil {
			t.Errorf("no %q span among %v", name, names(spans))
			continue
		}
		if s.SpanContext.TraceID() != caller || !under(*s) {
			t.Errorf("the %q span is not below the request's span in the caller's trace", name)
		}
	}
	var inTokens, outTokens int64
	for _, s := range spans {
		if s.Name != "chat llmtest" {
			continue
		}
		attrs := attribute.NewSet(s.Attributes...)
		if v, ok := attrs.Value("gen_ai.request.model"); !ok || v.AsString() != "llmtest" {
			t.Errorf("a model span's gen_ai.request.model = %v", v)
		}
		in, _ := attrs.Value("gen_ai.usage.input_tokens")
		out, _ := attrs.Value("gen_ai.usage.output_tokens")
		inTokens, outTokens = inTokens+in.AsInt64(), outTokens+out.AsInt64()
	}
	if inTokens != 80 || outTokens != 7 {
		t.Errorf("model spans counted %d tokens in and %d out, want 80 and 7", inTokens, outTokens)
	}
	if s := find(spans, "execute_tool current_time"); s != nil {
		attrs := attribute.NewSet(s.Attributes...)
		if v, _ := attrs.Value("gen_ai.tool.call.id"); !strings.HasPrefix(v.AsString(), "call_") {
			t.Errorf("the tool span's call id is %q", v.AsString())
		}
	}
}

func find(spans tracetest.SpanStubs, name string) *tracetest.SpanStub {
	for i := range spans {
		if spans[i].Name == name {
			return &spans[i]
		}
	}
	return nil
}

func names(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}
