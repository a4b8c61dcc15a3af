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
	exp := collect(t)
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
	for _, name := range []string{"invoke_agent assistant", "RunActivity:ChatCompletion", "chat llmtest", "RunActivity:CallTool", "execute_tool current_time"} {
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

// collect makes an in-memory exporter the global tracer provider's for
// the test: the tests' collector.
func collect(t *testing.T) *tracetest.InMemoryExporter {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() {
		otel.SetTracerProvider(prev)
		_ = tp.Shutdown(context.Background())
	})
	return exp
}

// TestResearchRunHasTheAgentOnTop runs a research run (a plan of a web
// page read and an answer) in an Open WebUI chat and reads its spans back
// from the collector: the run's span is the GenAI conventions'
// invoke_agent span of the researcher, with the agent's name and the
// chat's id, and every model call's chat span and the tool's execute_tool
// span hang below it.
func TestResearchRunHasTheAgentOnTop(t *testing.T) {
	exp := collect(t)
	page, fetch := pageServer(t, `<html><body><p>The Australian pelican's bill is up to 47 cm.</p></body></html>`)
	env := testenv.Start(t, testenv.Options{Fetch: fetch, Tracing: true})
	scriptPlan(env, "Say how long a pelican's bill is", []map[string]any{
		{"kind": "tool", "target": "web_fetch", "title": "Read the page", "arguments": map[string]any{"url": page + "/p", "max_chars": nil}, "success": "the length"},
		{"kind": "completion", "title": "Answer", "input": "the length", "success": "said"},
	}, "the page says")
	env.Model.SetDefault(llmtest.Text("Up to 47 cm."))
	resp := do(t, env, "POST", "/v1/chat/completions", chatBody{"model": "researcher", "messages": userMsg("How long is a pelican's bill?")},
		withChat(owui, "chat-spans"))
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("chat = %d", resp.StatusCode)
	}
	// The workflow's span ends as the run's last workflow task completes,
	// which may be a moment after the answer was read: wait for it.
	var spans tracetest.SpanStubs
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		spans = exp.GetSpans()
		if find(spans, "invoke_agent researcher") != nil || time.Now().After(deadline) {
			break
		}
	}
	top := find(spans, "invoke_agent researcher")
	if top == nil {
		t.Fatalf("no invoke_agent span among %v", names(spans))
	}
	attrs := attribute.NewSet(top.Attributes...)
	for key, want := range map[attribute.Key]string{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "researcher"} {
		if v, _ := attrs.Value(key); v.AsString() != want {
			t.Errorf("the agent span's %s = %q, want %q", key, v.AsString(), want)
		}
	}
	if v, _ := attrs.Value("gen_ai.conversation.id"); !strings.Contains(v.AsString(), "chat-spans") {
		t.Errorf("the agent span's gen_ai.conversation.id = %q, want the chat's", v.AsString())
	}
	byID := map[trace.SpanID]tracetest.SpanStub{}
	for _, s := range spans {
		byID[s.SpanContext.SpanID()] = s
	}
	below := func(s tracetest.SpanStub) bool {
		for p := s.Parent.SpanID(); p.IsValid(); p = byID[p].Parent.SpanID() {
			if p == top.SpanContext.SpanID() {
				return true
			}
			if _, ok := byID[p]; !ok {
				return false
			}
		}
		return false
	}
	calls := 0
	for _, s := range spans {
		if strings.HasPrefix(s.Name, "chat ") || strings.HasPrefix(s.Name, "execute_tool ") {
			calls++
			if !below(s) {
				t.Errorf("the %q span is not below the agent's", s.Name)
			}
		}
	}
	// A plan, a review, the step's answer and the final answer, and the
	// page read.
	if calls < 4 || find(spans, "execute_tool web_fetch") == nil {
		t.Errorf("%d model and tool spans among %v", calls, names(spans))
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
