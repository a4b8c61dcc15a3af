package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/internal/wire"
	"github.com/sashabaranov/go-openai"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// shop is an HTTP service whose orders are the side effect a person must
// approve; it counts them.
type shop struct {
	mu     sync.Mutex
	orders []string
}

func (s *shop) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Item string `json:"item"`
	}
	_ = json.NewDecoder(r.Body).Decode(&body)
	s.mu.Lock()
	s.orders = append(s.orders, body.Item)
	n := len(s.orders)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain")
	fmt.Fprintf(w, "order %d placed: %s", n, body.Item)
}

func (s *shop) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.orders)
}

// approvalStack starts a stack whose clerk agent orders from a shop
// through an HTTP tool that needs approval; cfg (if any) configures its API.
func approvalStack(t *testing.T, cfg ...api.Config) (*testenv.Env, *shop) {
	t.Helper()
	sh := &shop{}
	srv := httptest.NewServer(sh)
	t.Cleanup(srv.Close)
	opts := testenv.Options{Layers: []fs.FS{testenv.Clerk}, Env: map[string]string{"SHOP_URL": srv.URL}, Memory: true}
	if len(cfg) > 0 {
		opts.API = cfg[0]
	}
	env := testenv.Start(t, opts)
	return env, sh
}

// scriptOrder scripts the model for one order: it calls place_order for a
// book with call id, then answers with what the tool message said, which
// it reports through told.
func scriptOrder(env *testenv.Env, id string, told chan<- string) {
	scriptOrderCall(env, id)
	scriptOrderAnswer(env, id, told)
}

// scriptOrderCall scripts the model's call of place_order alone, for a test
// whose other runs speak to the model before this one goes on.
func scriptOrderCall(env *testenv.Env, id string) {
	env.Model.Enqueue(llmtest.ToolCalls(llmtest.ToolCall{ID: id, Name: "place_order", Arguments: `{"item":"book"}`}))
}

// scriptOrderAnswer scripts the model's answer after the order.
func scriptOrderAnswer(env *testenv.Env, id string, told chan<- string) {
	env.Model.Enqueue(llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		var tool string
		for _, m := range r.Chat.Messages {
			if m.Role == openai.ChatMessageRoleTool && m.ToolCallID == id {
				tool = m.Content
			}
		}
		told <- tool
		return llmtest.Text("Done. The shop said: " + tool)
	}))
}

// streamFrames are a chat stream's frames, read whole.
type streamFrames struct {
	text     string
	statuses []string
	finish   string
}

func readStream(t *testing.T, resp *http.Response) streamFrames {
	t.Helper()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	frames := sseData(t, resp.Body)
	out := streamFrames{text: chunkText(t, frames)}
	for _, f := range frames {
		var s wire.StatusFrame
		if json.Unmarshal([]byte(f), &s) == nil && s.Event.Type == "status" {
			out.statuses = append(out.statuses, s.Event.Data.Description)
		}
		var c wire.ChatChunk
		if json.Unmarshal([]byte(f), &c) == nil {
			for _, ch := range c.Choices {
				if ch.FinishReason != nil {
					out.finish = *ch.FinishReason
				}
			}
		}
	}
	return out
}

// chatHeaders are Open WebUI's headers for a message of a chat.
func chatHeaders(chat, message string) map[string]string {
	h := withChat(owui, chat)
	h["X-OpenWebUI-Message-Id"] = message
	return h
}

func conversation(turns ...string) []map[string]string {
	out := make([]map[string]string, len(turns))
	for i, c := range turns {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		out[i] = map[string]string{"role": role, "content": c}
	}
	return out
}

// say sends the chat's message (Open WebUI's message id) to the clerk at
// env, streamed, with the conversation so far, turns.
func say(t *testing.T, env *testenv.Env, chat, message string, turns ...string) *http.Response {
	t.Helper()
	return do(t, env, "POST", "/v1/chat/completions", chatBody{"model": "clerk", "stream": true, "messages": conversation(turns...)}, chatHeaders(chat, message))
}

// askOrder scripts an order with call id (scriptOrder) and sends the
// chat's first message, asking env's clerk for a book; it returns the run,
// its answer, checked to ask for approval, and what the model is told of
// the order.
func askOrder(t *testing.T, env *testenv.Env, chat, id string) (string, streamFrames, <-chan string) {
	t.Helper()
	told := make(chan string, 1)
	scriptOrder(env, id, told)
	first := say(t, env, chat, "m1", "Order a book")
	asked := readStream(t, first)
	checkPrompt(t, asked.text)
	return first.Header.Get(api.HeaderRunID), asked, told
}

// checkPrompt checks that text asks for approval of the scripted order.
func checkPrompt(t *testing.T, text string) {
	t.Helper()
	for _, want := range []string{"Approval needed", "`place_order`", `{"item":"book"}`, "Reply `approve`", "`deny`", "write a reply"} {
		if !strings.Contains(text, want) {
			t.Errorf("approval prompt lacks %q:\n%s", want, text)
		}
	}
}

func TestApprovalThroughRunsAPI(t *testing.T) {
	env, sh := approvalStack(t)
	ctx := within(t, 2*time.Minute)
	ann := user("ann")
	told := make(chan string, 1)
	scriptOrder(env, "o1", told)

	run := startRun(t, env, map[string]any{"agent": "clerk", "input": "Order a book"}, ann)
	events, _ := readEvents(t, openEvents(t, ctx, env, run.ID, "", ann), func(e sseEvent) bool {
		return e.Type == string(longhaul.EventApprovalRequired)
	})
	var asked longhaul.ApprovalRequiredData
	if err := events[len(events)-1].Event.Decode(&asked); err != nil || asked.ToolCallID != "o1" || asked.Name != "place_order" ||
		asked.Arguments != `{"item":"book"}` || !strings.HasPrefix(asked.Target, "POST ") {
		t.Fatalf("approval_required = %+v (%v)", asked, err)
	}
	got := getRun(t, env, run.ID, ann)
	if got.Status != contract.StatusWaiting || got.Waiting == nil || got.Waiting.Kind != "approval" ||
		got.Waiting.Tool != "place_order" || got.Waiting.ToolCallID != "o1" || got.Waiting.Arguments != `{"item":"book"}` {
		t.Fatalf("waiting run: status %q, waiting %+v", got.Status, got.Waiting)
	}
	if n := sh.count(); n != 0 {
		t.Fatalf("the tool ran %d times before it was approved", n)
	}

	resp := doWant(t, env.URL, "POST", "/v1/runs/"+run.ID+"/input", map[string]any{"approve": true}, ann, http.StatusOK)
	if res := decode[contract.InputResult](t, resp); res.Decision != contract.DecisionApproved {
		t.Fatalf("input result %+v", res)
	}
	all := followToDone(t, ctx, env, run.ID, ann)
	if d := doneData(t, all); d.Status != contract.StatusCompleted {
		t.Fatalf("done = %+v", d)
	}
	var decision longhaul.ApprovalData
	for _, e := range all {
		if e.Type == string(longhaul.EventApproval) {
			_ = e.Event.Decode(&decision)
		}
	}
	if decision.Decision != contract.DecisionApproved || decision.ToolCallID != "o1" {
		t.Errorf("approval event = %+v", decision)
	}
	if tool := <-told; !strings.Contains(tool, "placed: book") {
		t.Errorf("the model read %q, not the order", tool)
	}
	if n := sh.count(); n != 1 {
		t.Errorf("the tool ran %d times, want 1", n)
	}
	if got := getRun(t, env, run.ID, ann); got.Status != contract.StatusCompleted || got.Waiting != nil {
		t.Errorf("finished run: status %q, waiting %+v", got.Status, got.Waiting)
	}

	again := do(t, env, "POST", "/v1/runs/"+run.ID+"/input", map[string]any{"approve": true}, ann)
	if again.StatusCode != http.StatusConflict {
		b, _ := io.ReadAll(again.Body)
		t.Fatalf("second input = %d %s, want 409", again.StatusCode, b)
	}
}

func TestApprovalThroughChat(t *testing.T) {
	env, sh := approvalStack(t)
	ctx := within(t, 2*time.Minute)
	orders := 0
	checkOrders := func(t *testing.T, want int) {
		t.Helper()
		orders += want
		if n := sh.count(); n != orders {
			t.Fatalf("the shop has %d orders, want %d", n, orders)
		}
	}

	t.Run("approve", func(t *testing.T) {
		const chat = "chat-approve"
		runID, asked, told := askOrder(t, env, chat, "a1")
		if runID != contract.ChatRunID("u1/"+chat, 1, "m1") {
			t.Fatalf("run id %q", runID)
		}
		if asked.finish != "stop" || len(asked.statuses) == 0 || !strings.HasPrefix(asked.statuses[len(asked.statuses)-1], "Waiting for your approval: place_order · POST ") {
			t.Errorf("finish %q, statuses %q", asked.finish, asked.statuses)
		}
		checkOrders(t, 0)

		// The next message goes out as soon as the answer ended, before
		// visibility may show the run waiting.
		next := say(t, env, chat, "m2", "Order a book", asked.text, " Approve! ")
		if got := next.Header.Get(api.HeaderRunID); got != runID {
			t.Fatalf("the answer ran as %q, not in the waiting run %q", got, runID)
		}
		rest := readStream(t, next)
		if tool := <-told; !strings.Contains(tool, "placed: book") {
			t.Errorf("the model read %q, not the order", tool)
		}
		if !strings.Contains(rest.text, `<details type="tool_calls" done="true" id="a1" name="place_order"`) ||
			!strings.HasSuffix(rest.text, "</details>\nDone. The shop said: order 1 placed: book") {
			t.Errorf("the rest of the run reads %q", rest.text)
		}
		if strings.Contains(rest.text, "Approval needed") {
			t.Errorf("the answer repeats the prompt: %q", rest.text)
		}
		if rest.finish != "stop" || !contains(rest.statuses, "Approved: place_order") || !contains(rest.statuses, "Used 1 tool call") {
			t.Errorf("finish %q, statuses %q", rest.finish, rest.statuses)
		}
		checkOrders(t, 1)
		if got := getRun(t, env, runID, owui); got.Status != contract.StatusCompleted {
			t.Errorf("run status %q", got.Status)
		}
		if r := do(t, env, "GET", "/v1/runs/"+contract.ChatRunID("u1/"+chat, 2, "m2"), nil, owui); r.StatusCode != 404 {
			t.Errorf("the answer started a run of its own: GET = %d", r.StatusCode)
		}

		// With nothing waiting, the chat's next message is a new turn.
		env.Model.Enqueue(llmtest.Text("You're welcome."))
		thanks := say(t, env, chat, "m3", "Order a book", asked.text, "Approve!", rest.text, "thanks")
		if got := thanks.Header.Get(api.HeaderRunID); got != contract.ChatRunID("u1/"+chat, 3, "m3") {
			t.Errorf("thanks ran as %q", got)
		}
		if got := readStream(t, thanks); got.text != "You're welcome." {
			t.Errorf("thanks: %q", got.text)
		}
		checkOrders(t, 0)
	})

	t.Run("deny, not streamed, plain client", func(t *testing.T) {
		told := make(chan string, 1)
		scriptOrder(env, "d1", told)
		md := map[string]string{"chat_id": "deny-1"}
		first := do(t, env, "POST", "/v1/chat/completions", chatBody{"model": "clerk", "user": "bob", "metadata": md, "messages": conversation("Order a book")}, nil)
		if first.StatusCode != 200 {
			b, _ := io.ReadAll(first.Body)
			t.Fatalf("status %d: %s", first.StatusCode, b)
		}
		runID := first.Header.Get(api.HeaderRunID)
		asked := decode[openai.ChatCompletionResponse](t, first)
		checkPrompt(t, asked.Choices[0].Message.Content)
		if strings.Contains(asked.Choices[0].Message.Content, "<details") || asked.Choices[0].FinishReason != "stop" {
			t.Errorf("plain client got %+v", asked.Choices[0])
		}
		checkOrders(t, 0)

		next := do(t, env, "POST", "/v1/chat/completions", chatBody{"model": "clerk", "user": "bob", "metadata": md,
			"messages": conversation("Order a book", asked.Choices[0].Message.Content, "DENY.")}, nil)
		if next.StatusCode != 200 {
			b, _ := io.ReadAll(next.Body)
			t.Fatalf("status %d: %s", next.StatusCode, b)
		}
		if got := next.Header.Get(api.HeaderRunID); got != runID {
			t.Fatalf("the answer ran as %q, not in the waiting run %q", got, runID)
		}
		tool := <-told
		if tool != "error: the user denied this call" {
			t.Errorf("the model was told %q", tool)
		}
		answer := decode[openai.ChatCompletionResponse](t, next)
		if got := answer.Choices[0].Message.Content; got != "Done. The shop said: "+tool {
			t.Errorf("answer %q", got)
		}
		checkOrders(t, 0)
	})

	t.Run("two calls, one prompt after the other", func(t *testing.T) {
		const chat = "chat-two"
		told := make(chan []string, 1)
		env.Model.Enqueue(
			llmtest.ToolCalls(
				llmtest.ToolCall{ID: "t1", Name: "place_order", Arguments: `{"item":"book"}`},
				llmtest.ToolCall{ID: "t2", Name: "place_order", Arguments: `{"item":"pen"}`},
			),
			llmtest.Func(func(r llmtest.Request) llmtest.Reply {
				var tools []string
				for _, m := range r.ToolResults() {
					tools = append(tools, m.ToolCallID+": "+m.Content)
				}
				told <- tools
				return llmtest.Text("Handled both.")
			}),
		)
		first := say(t, env, chat, "m1", "Order a book and a pen")
		runID := first.Header.Get(api.HeaderRunID)
		one := readStream(t, first)
		if !strings.Contains(one.text, `{"item":"book"}`) || strings.Contains(one.text, "pen") {
			t.Fatalf("first prompt: %q", one.text)
		}
		second := say(t, env, chat, "m2", "Order a book and a pen", one.text, "ok")
		if got := second.Header.Get(api.HeaderRunID); got != runID {
			t.Fatalf("the answer ran as %q, not in the waiting run %q", got, runID)
		}
		two := readStream(t, second)
		if !strings.HasPrefix(two.text, "**Approval needed:**") || !strings.Contains(two.text, `{"item":"pen"}`) || strings.Contains(two.text, "book") {
			t.Fatalf("second prompt: %q", two.text)
		}
		if n := len(two.statuses); n == 0 || !contains(two.statuses, "Approved: place_order") || !strings.HasPrefix(two.statuses[n-1], "Waiting for your approval: place_order") {
			t.Errorf("statuses %q", two.statuses)
		}
		// The approved call may be running by now: only the second waits.
		third := do(t, env, "POST", "/v1/chat/completions", chatBody{"model": "clerk",
			"messages": conversation("Order a book and a pen", one.text, "ok", two.text, "no")}, chatHeaders(chat, "m3"))
		if got := third.Header.Get(api.HeaderRunID); got != runID {
			t.Fatalf("the answer ran as %q, not in the waiting run %q", got, runID)
		}
		tools := <-told
		if len(tools) != 2 || !strings.HasPrefix(tools[0], "t1: order ") || tools[1] != "t2: error: the user denied this call" {
			t.Errorf("the model was told %q", tools)
		}
		answer := decode[openai.ChatCompletionResponse](t, third)
		text := answer.Choices[0].Message.Content
		if strings.Count(text, "<details") != 1 || !strings.Contains(text, `id="t1"`) || !strings.HasSuffix(text, "Handled both.") {
			t.Errorf("answer %q", text)
		}
		checkOrders(t, 1)
	})

	t.Run("reply", func(t *testing.T) {
		const chat = "chat-reply"
		runID, asked, told := askOrder(t, env, chat, "r1")

		next := say(t, env, chat, "m2", "Order a book", asked.text, "Make it a paperback, please.")
		if got := next.Header.Get(api.HeaderRunID); got != runID {
			t.Fatalf("the reply ran as %q, not in the waiting run %q", got, runID)
		}
		rest := readStream(t, next)
		if tool := <-told; tool != "error: the user did not approve this call and said: Make it a paperback, please." {
			t.Errorf("the model was told %q", tool)
		}
		if !strings.HasPrefix(rest.text, "Done. The shop said: error: the user did not approve") || strings.Contains(rest.text, "<details") {
			t.Errorf("the rest of the run reads %q", rest.text)
		}
		if !contains(rest.statuses, "Not approved, with a reply: place_order") {
			t.Errorf("statuses %q", rest.statuses)
		}
		all := followToDone(t, ctx, env, runID, owui)
		for _, e := range all {
			var d longhaul.ApprovalData
			if e.Type == string(longhaul.EventApproval) && (e.Event.Decode(&d) != nil || d.Decision != contract.DecisionReplied || d.Text != "Make it a paperback, please.") {
				t.Errorf("approval event %+v", d)
			}
		}
		checkOrders(t, 0)
	})
}

// laggyVisibility is a Temporal client whose visibility shows no waiting
// run for the first hide looks, as a cluster's visibility store may lag
// behind the run's own state.
type laggyVisibility struct {
	client.Client
	mu    sync.Mutex
	looks int
	hide  int
}

func (l *laggyVisibility) ListWorkflow(ctx context.Context, req *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	if strings.Contains(req.GetQuery(), "LonghaulStatus = 'waiting'") {
		l.mu.Lock()
		l.looks++
		hidden := l.looks <= l.hide
		l.mu.Unlock()
		if hidden {
			return &workflowservice.ListWorkflowExecutionsResponse{}, nil
		}
	}
	return l.Client.ListWorkflow(ctx, req)
}

func (l *laggyVisibility) lookCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.looks
}

// TestApprovalVisibilityLag answers an approval prompt while visibility
// does not show the run waiting yet: the API looks again until it does. A
// message that answers no prompt looks once.
func TestApprovalVisibilityLag(t *testing.T) {
	env, sh := approvalStack(t)
	laggy := &laggyVisibility{Client: env.Client, hide: 3}
	srv := api.New(api.Config{TaskQueue: testenv.TaskQueue, Blobs: env.Blobs, ModelTimeout: 30 * time.Second}, runs.NewTemporal(laggy, runs.Config{TaskQueue: testenv.TaskQueue, Namespace: env.Namespace, Blobs: env.Blobs}), env.Catalog, slog.New(slog.DiscardHandler))
	base := serve(t, srv)
	lagged := &testenv.Env{T: t, URL: base, Model: env.Model}

	const chat = "chat-lag"
	runID, asked, told := askOrder(t, lagged, chat, "l1")
	if n := laggy.lookCount(); n != 0 {
		t.Fatalf("a chat's first message looked for waiting runs %d times", n)
	}

	next := say(t, lagged, chat, "m2", "Order a book", asked.text, "yes")
	if got := next.Header.Get(api.HeaderRunID); got != runID {
		t.Fatalf("the answer ran as %q, not in the waiting run %q", got, runID)
	}
	if n := laggy.lookCount(); n != 4 {
		t.Errorf("looked %d times for the waiting run, want 4 (3 hidden)", n)
	}
	rest := readStream(t, next)
	if tool := <-told; !strings.Contains(tool, "placed: book") || !strings.HasSuffix(rest.text, "Done. The shop said: "+tool) {
		t.Errorf("the model read %q; the rest of the run reads %q", tool, rest.text)
	}
	if n := sh.count(); n != 1 {
		t.Errorf("the shop has %d orders, want 1", n)
	}

	// A message that answers no prompt looks once, and starts a new turn.
	laggy.mu.Lock()
	laggy.looks, laggy.hide = 0, 100
	laggy.mu.Unlock()
	env.Model.Enqueue(llmtest.Text("You're welcome."))
	thanks := say(t, lagged, chat, "m3", "Order a book", asked.text, "yes", rest.text, "thanks")
	if got := thanks.Header.Get(api.HeaderRunID); got != contract.ChatRunID("u1/"+chat, 3, "m3") {
		t.Errorf("thanks ran as %q", got)
	}
	readStream(t, thanks)
	if n := laggy.lookCount(); n != 1 {
		t.Errorf("a message answering no prompt looked %d times, want 1", n)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
