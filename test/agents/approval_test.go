package agents

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// shopLayer is a concierge that asks a helper, whose order tool (an HTTP
// tool) needs a person's approval.
var shopLayer = fstest.MapFS{
	"concierge.md": {Data: []byte("---\nagent: concierge\ndescription: Answers by asking its helper\nagents: [helper]\n---\nAsk the helper.\n")},
	"helper.md":    {Data: []byte("---\nagent: helper\ndescription: Orders things\nskills: [orders]\n---\nYou order things.\n")},
	"orders.md": {Data: []byte(`---
skill: orders
description: Places orders
tools: [place_order]
http_tools:
  - name: place_order
    description: Orders an item
    method: post
    url: ${ORDERS_URL}/order
    parameters: {type: object, properties: {item: {type: string}}, required: [item]}
    approval: required
---
Order only what the user asks for.
`)},
}

// chatTurn sends messages to the concierge on ann's chat chat as Open
// WebUI does (not streamed) and returns the answer's text and run.
func chatTurn(t *testing.T, env *testenv.Env, chat string, messages []map[string]string) (string, string) {
	t.Helper()
	headers := map[string]string{"X-OpenWebUI-Chat-Id": chat}
	for k, v := range ann {
		headers[k] = v
	}
	return env.Chat(t.Context(), t, "concierge", messages, headers)
}

// TestChildApprovalAnsweredOnParentChat: the concierge asks the helper,
// whose order needs approval. The concierge's chat shows the approval
// (naming the helper), the concierge's run waits for the helper's call
// (GET /v1/runs/{id}), and nothing is ordered; the user's "approve" on
// the concierge's chat reaches the helper, whose order runs once, and
// the concierge answers with the helper's answer in the same response.
func TestChildApprovalAnsweredOnParentChat(t *testing.T) {
	var orders atomic.Int32
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		orders.Add(1)
		_, _ = io.WriteString(w, `{"order":"ord-1"}`)
	}))
	t.Cleanup(svc.Close)
	env := testenv.Start(t, testenv.Options{Layers: []fs.FS{shopLayer}, Env: map[string]string{"ORDERS_URL": svc.URL}})
	ctx := within(t, 2*time.Minute)
	var told string
	env.Model.Enqueue(
		llmtest.ToolCalls(llmtest.ToolCall{ID: "call_ask", Name: "ask_helper", Arguments: `{"question":"Order the book"}`}),
		llmtest.ToolCalls(llmtest.ToolCall{ID: "call_order", Name: "place_order", Arguments: `{"item":"book"}`}),
		llmtest.Func(func(r llmtest.Request) llmtest.Reply {
			for _, m := range r.ToolResults() {
				if m.ToolCallID == "call_order" {
					told = m.Content
				}
			}
			return llmtest.Text("Ordered the book: ord-1.")
		}),
		llmtest.Text("The helper ordered the book: ord-1."),
	)
	const chat = "chat-order"
	question := map[string]string{"role": "user", "content": "Order the book, please."}
	prompt, run := chatTurn(t, env, chat, []map[string]string{question})
	for _, want := range []string{"Approval needed", "`helper`", "`place_order`", `"item":"book"`, "Reply `approve`"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("the concierge's chat lacks %q:\n%s", want, prompt)
		}
	}
	var got wire.Run
	call(t, ctx, env, "GET", "/v1/runs/"+run, nil, ann, http.StatusOK, &got)
	w := got.Waiting
	if got.Status != contract.StatusWaiting || w == nil || w.Run != run+"-ask-1" || w.Agent != "helper" || w.Tool != "place_order" || w.Arguments != `{"item":"book"}` {
		t.Fatalf("the concierge's run is %s, waiting %+v", got.Status, w)
	}
	if n := orders.Load(); n != 0 {
		t.Fatalf("%d orders before the user approved", n)
	}
	answer, again := chatTurn(t, env, chat, []map[string]string{
		question, {"role": "assistant", "content": prompt}, {"role": "user", "content": "approve"},
	})
	if again != run {
		t.Errorf("the approval ran as %q, not in the waiting run %q", again, run)
	}
	if !strings.HasSuffix(answer, "The helper ordered the book: ord-1.") {
		t.Errorf("the answer after approval: %q", answer)
	}
	if n := orders.Load(); n != 1 {
		t.Errorf("%d orders, want 1", n)
	}
	if !strings.Contains(told, "ord-1") {
		t.Errorf("the helper read %q", told)
	}
	call(t, ctx, env, "GET", "/v1/runs/"+run+"-ask-1", nil, ann, http.StatusOK, &got)
	if got.Status != contract.StatusCompleted || got.Result != "Ordered the book: ord-1." {
		t.Errorf("the helper's run: %s %q", got.Status, got.Result)
	}
}
