package api_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/internal/identity"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/owuitest"
	"github.com/longhaul-dev/longhaul/internal/testing/runsfake"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// The Open WebUI scenarios: Longhaul behind an OpenAI connection of Open
// WebUI v0.11.0, every request built as that Open WebUI builds it
// (owuitest), through the real API, Temporal and worker; only the model is
// scripted.

const owuiKey = "sk-open-webui-connection"

// owuiAPI is an API that trusts the connection's proxy key and verifies
// Open WebUI's signed user.
var owuiAPI = api.Config{
	Keys:      []identity.Key{{Name: "owui", Secret: owuiKey, Proxy: true}},
	JWTSecret: []byte(owuiSecret),
}

// owuiEnv starts a stack with owuiAPI.
func owuiEnv(t *testing.T) *testenv.Env {
	t.Helper()
	return testenv.Start(t, testenv.Options{API: owuiAPI})
}

// owuiFake serves owuiAPI over runs the test scripts: for what the API
// alone decides (who the user is, what it refuses).
func owuiFake(t *testing.T) (*testenv.Env, *runsfake.Service) {
	t.Helper()
	fake := runsfake.New()
	return testenv.Start(t, testenv.Options{Runs: fake, API: owuiAPI}), fake
}

// owuiConn is the connection the compose file sets up: user forwarding on,
// the user signed, the message id as a custom header, the usage capability,
// and Open WebUI's built-in time tools offered in Native mode.
func owuiConn(env *testenv.Env) *owuitest.Connection {
	return &owuitest.Connection{
		BaseURL: env.URL + "/v1", Key: owuiKey,
		ForwardUserInfo: true, JWTSecret: owuiSecret,
		Headers: owuitest.ForwardMessageID(),
		Usage:   true, Tools: owuitest.BuiltinTime,
	}
}

var (
	ann = owuitest.User{ID: "0f6c-ann", Email: "ann@example.com", Name: "Ann Lee", Role: "user"}
	bob = owuitest.User{ID: "7a21-bob", Email: "bob@example.com", Name: "Bob", Role: "user"}
)

// modelCalls is the number of model calls so far.
func modelCalls(env *testenv.Env) int { return len(env.Model.Requests()) }

// lastCall is the model's last request.
func lastCall(t *testing.T, env *testenv.Env) llmtest.Request {
	t.Helper()
	reqs := env.Model.Requests()
	if len(reqs) == 0 {
		t.Fatal("the model was never called")
	}
	return reqs[len(reqs)-1]
}

func toolNames(r llmtest.Request) []string {
	var names []string
	for _, tl := range r.Chat.Tools {
		names = append(names, tl.Function.Name)
	}
	return names
}

// TestOpenWebUIChat follows one chat of one user through the turns Open
// WebUI sends: a first turn whose answer uses the agent's tool, a
// follow-up, Regenerate, a network retry, an edited earlier message, the
// title and tags tasks.
func TestOpenWebUIChat(t *testing.T) {
	env := owuiEnv(t)
	conn := owuiConn(env)
	chat := conn.NewChat(ann, "assistant")
	runs := map[string]bool{}

	// First turn: the agent's own tool runs inside the run and shows as
	// Open WebUI's tool card; Open WebUI's built-in tools are offered
	// beside it; usage arrives because the model's capability asks for it.
	env.Model.Enqueue(
		llmtest.ToolCalls(llmtest.ToolCall{ID: "t1", Name: "current_time", Arguments: `{}`}),
		llmtest.Text("It is noon."),
	)
	first := chat.Ask("What time is it?")
	a1 := owuitest.OK(t, first)
	if !strings.HasPrefix(a1.RunID, "chat-") || !strings.Contains(a1.Content, `<details type="tool_calls"`) || !strings.HasSuffix(a1.Content, "It is noon.") {
		t.Fatalf("first turn: run %q, content %q", a1.RunID, a1.Content)
	}
	if a1.Usage == nil || a1.FinishReason != "stop" {
		t.Errorf("first turn: usage %v, finish %q", a1.Usage, a1.FinishReason)
	}
	if got := toolNames(env.Model.Requests()[0]); !slices.Contains(got, "current_time") || !slices.Contains(got, "get_current_timestamp") {
		t.Errorf("the model was offered %v", got)
	}
	runs[a1.RunID] = true
	chat.Answer(a1.Content)

	// A follow-up is a new run of the next turn; the model reads the
	// first turn's tool call back (restored from the conversation store),
	// not Open WebUI's flattened text.
	env.Model.Enqueue(llmtest.Text("Tomorrow is Friday."))
	a2 := owuitest.OK(t, chat.Ask("And what day is tomorrow?"))
	if runs[a2.RunID] || a2.Content != "Tomorrow is Friday." {
		t.Fatalf("follow-up: run %q (seen %v), content %q", a2.RunID, runs, a2.Content)
	}
	runs[a2.RunID] = true
	restored := false
	for _, m := range lastCall(t, env).Chat.Messages {
		restored = restored || (m.Role == "tool" && m.ToolCallID == "t1")
	}
	if !restored {
		t.Errorf("the follow-up's model call lacks the first turn's tool result: %+v", lastCall(t, env).Chat.Messages)
	}
	chat.Answer(a2.Content)

	// Regenerate: the same history, a new message id: a new run and a new
	// answer, never the old one.
	env.Model.Enqueue(llmtest.Text("Tomorrow is Saturday."))
	regen := chat.Regenerate()
	calls := modelCalls(env)
	a3 := owuitest.OK(t, regen)
	if runs[a3.RunID] || a3.Content != "Tomorrow is Saturday." || modelCalls(env) != calls+1 {
		t.Fatalf("regenerate: run %q (seen %v), content %q, model calls %d → %d", a3.RunID, runs, a3.Content, calls, modelCalls(env))
	}
	runs[a3.RunID] = true
	chat.Answer(a3.Content)

	// A network retry of the same request (the same message id) attaches
	// to its run: the same answer, and the model is not called again.
	calls = modelCalls(env)
	a4 := owuitest.OK(t, regen)
	if a4.RunID != a3.RunID || a4.Content != a3.Content || modelCalls(env) != calls {
		t.Fatalf("retry: run %q (want %q), content %q, model calls %d → %d", a4.RunID, a3.RunID, a4.Content, calls, modelCalls(env))
	}

	// Editing the first question makes a new branch: a new run of turn 1
	// that sees only the edited question.
	env.Model.Enqueue(llmtest.Text("Paris is in France."))
	a5 := owuitest.OK(t, chat.Edit(1, "Where is Paris?"))
	if runs[a5.RunID] || a5.Content != "Paris is in France." {
		t.Fatalf("edit: run %q (seen %v), content %q", a5.RunID, runs, a5.Content)
	}
	var users []string
	for _, m := range lastCall(t, env).Chat.Messages {
		if m.Role == "user" {
			users = append(users, llmtest.MessageText(m))
		}
	}
	if !slices.Equal(users, []string{"Where is Paris?"}) {
		t.Errorf("the edited branch's model call asked %q", users)
	}
	runs[a5.RunID] = true
	chat.Answer(a5.Content)

	// The title and tags tasks go straight to the model: one call, no
	// agent prompt, no tools, a run of their own. Open WebUI sends them
	// with the chat's id and an empty message id.
	for _, task := range []struct {
		name   string
		req    *owuitest.Request
		answer string
	}{
		{"title", chat.Title(), `{ "title": "🗼 Paris Location" }`},
		{"tags", chat.Tags(), `{ "tags": ["Geography"] }`},
	} {
		if task.req.Header.Get(owuitest.HeaderChatID) != chat.ID || task.req.Header.Get(owuitest.HeaderMessageID) != "" {
			t.Fatalf("%s task headers %v", task.name, task.req.Header)
		}
		env.Model.Enqueue(llmtest.Text(task.answer))
		calls := modelCalls(env)
		a := owuitest.OK(t, task.req)
		call := lastCall(t, env)
		if a.Content != task.answer || runs[a.RunID] || strings.HasPrefix(a.RunID, "chat-") || modelCalls(env) != calls+1 {
			t.Fatalf("%s task: run %q, content %q, model calls %d → %d", task.name, a.RunID, a.Content, calls, modelCalls(env))
		}
		if len(call.Chat.Tools) != 0 || len(call.Chat.Messages) != 1 || !strings.HasPrefix(call.LastUserMessage(), "### Task:") {
			t.Errorf("%s task reached the model with %d tools and messages %+v", task.name, len(call.Chat.Tools), call.Chat.Messages)
		}
	}
}

// TestOpenWebUIToolLoop: the model calls one of Open WebUI's own tools.
// Longhaul hands the call to Open WebUI, which runs it and asks again with
// the result and the same message id; the same run goes on and answers.
func TestOpenWebUIToolLoop(t *testing.T) {
	env := owuiEnv(t)
	conn := owuiConn(env)
	chat := conn.NewChat(ann, "assistant")
	env.Model.Enqueue(
		llmtest.ToolCalls(llmtest.ToolCall{ID: "ts", Name: "get_current_timestamp", Arguments: `{}`}),
		llmtest.Text("The timestamp is 1767268800."),
	)
	a := owuitest.OK(t, chat.Ask("What is the Unix time?"))
	if a.FinishReason != "tool_calls" || len(a.ToolCalls) != 1 || a.ToolCalls[0].Name != "get_current_timestamp" {
		t.Fatalf("first response: finish %q, calls %+v, content %q", a.FinishReason, a.ToolCalls, a.Content)
	}
	b := owuitest.OK(t, chat.ToolResults(a.Content, a.ToolCalls, map[string]string{a.ToolCalls[0].ID: `{"current_timestamp": 1767268800}`}))
	if b.RunID != a.RunID || !strings.Contains(b.Content, "The timestamp is 1767268800.") {
		t.Fatalf("continued: run %q (want %q), content %q", b.RunID, a.RunID, b.Content)
	}
	var result string
	for _, m := range lastCall(t, env).Chat.Messages {
		if m.Role == "tool" {
			result = llmtest.MessageText(m)
		}
	}
	if !strings.Contains(result, "1767268800") {
		t.Errorf("the model did not read Open WebUI's tool result: %q", result)
	}
}

// TestOpenWebUIAttachments: an image arrives as an image_url part; a
// document arrives as Open WebUI's RAG template before the question, which
// starts with "### Task:" like a background task but is the user's turn: a
// chat run with the agent's prompt and tools.
func TestOpenWebUIAttachments(t *testing.T) {
	env := owuiEnv(t)
	conn := owuiConn(env)
	chat := conn.NewChat(ann, "assistant")
	const pixel = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
	env.Model.Enqueue(llmtest.Text("A single pixel."))
	a := owuitest.OK(t, chat.Ask("What is in the picture?", owuitest.WithImage(pixel)))
	var parts []string
	for _, m := range lastCall(t, env).Chat.Messages {
		for _, p := range m.MultiContent {
			parts = append(parts, string(p.Type))
			if p.ImageURL != nil && p.ImageURL.URL != pixel {
				t.Errorf("image reached the model as %q", p.ImageURL.URL)
			}
		}
	}
	if !slices.Contains(parts, "image_url") || a.Content != "A single pixel." {
		t.Fatalf("image turn: parts %v, content %q", parts, a.Content)
	}
	chat.Answer(a.Content)

	env.Model.Enqueue(llmtest.Text("The report says 42."))
	doc := chat.Ask("What does the report say?", owuitest.WithDocument(owuitest.Document{Name: "report.txt", ID: "f-1", Content: "The answer is 42."}))
	if q := doc.Messages()[len(doc.Messages())-1]["content"].(string); !strings.HasPrefix(q, "### Task:") {
		t.Fatalf("the double sent the document turn as %q", q)
	}
	b := owuitest.OK(t, doc)
	call := lastCall(t, env)
	if !strings.HasPrefix(b.RunID, "chat-") || b.Content != "The report says 42." {
		t.Fatalf("document turn: run %q, content %q", b.RunID, b.Content)
	}
	if len(call.Chat.Tools) == 0 || call.Chat.Messages[0].Role != "system" || !strings.Contains(call.LastUserMessage(), "The answer is 42.") {
		t.Errorf("document turn reached the model as a task: %d tools, messages %+v", len(call.Chat.Tools), call.Chat.Messages)
	}
}

// TestOpenWebUITwoUsers: two users of one Open WebUI are two principals.
// Bob's request that names Ann's chat and message ids gets a run of his
// own, and Ann's run and chat do not exist for him.
func TestOpenWebUITwoUsers(t *testing.T) {
	env := owuiEnv(t)
	conn := owuiConn(env)
	annChat := conn.NewChat(ann, "naked")
	env.Model.Enqueue(llmtest.Text("Ann's answer."))
	annReq := annChat.Ask("my secret plan")
	a := owuitest.OK(t, annReq)

	forged := annReq.WithHeader(owuitest.HeaderUserJWT, conn.Token(bob))
	env.Model.Enqueue(llmtest.Text("Bob's answer."))
	b := owuitest.OK(t, forged)
	if b.RunID == a.RunID || b.Content != "Bob's answer." {
		t.Fatalf("bob with ann's ids: run %q (ann's %q), content %q", b.RunID, a.RunID, b.Content)
	}
	bobAuth := map[string]string{"Authorization": "Bearer " + owuiKey, owuitest.HeaderUserJWT: conn.Token(bob)}
	if resp := doAt(t, env.URL, "GET", "/v1/runs/"+a.RunID, nil, bobAuth); resp.StatusCode != http.StatusNotFound {
		t.Errorf("bob GET ann's run = %d, want 404", resp.StatusCode)
	}
	// The chat id Bob sent is a chat of his own, holding his turn alone.
	conv := decode[wire.ConversationDetail](t, doAt(t, env.URL, "GET", "/v1/conversations/"+annChat.ID, nil, bobAuth))
	if len(conv.Timeline) != 1 || conv.Timeline[0].RunID != b.RunID {
		t.Errorf("bob's chat %q holds %+v, want his run %q alone", annChat.ID, conv.Timeline, b.RunID)
	}
	annAuth := map[string]string{"Authorization": "Bearer " + owuiKey, owuitest.HeaderUserJWT: conn.Token(ann)}
	if resp := doAt(t, env.URL, "GET", "/v1/runs/"+a.RunID, nil, annAuth); resp.StatusCode != http.StatusOK {
		t.Errorf("ann GET her run = %d", resp.StatusCode)
	}

	// A token past its expiry names nobody: 401.
	late := *conn
	late.Now = func() time.Time { return time.Now().Add(-10 * time.Minute) }
	stale := late.NewChat(ann, "naked").Ask("hello")
	resp, err := stale.Send(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("expired user token: %d, want 401", resp.StatusCode)
	}
}

// wantRefused sends req, given a minute, and checks that it is refused
// with a 401 whose error names each of want, and that no run started.
func wantRefused(t *testing.T, req *owuitest.Request, fake *runsfake.Service, what string, want ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	refused, err := req.Exchange(ctx)
	if err != nil {
		t.Fatal(err)
	}
	named := true
	for _, w := range want {
		named = named && strings.Contains(refused.Error, w)
	}
	if refused.Status != http.StatusUnauthorized || !named || fake.Len() != 0 {
		t.Fatalf("%s: status %d, error %q, %d runs; want a 401 naming %q", what, refused.Status, refused.Error, fake.Len(), want)
	}
}

// TestOpenWebUIForwardingOff: with ENABLE_FORWARD_USER_INFO_HEADERS off
// Open WebUI sends neither the user nor the chat. Where Longhaul expects
// the signed user, such a request is refused (it would otherwise make
// every user of that Open WebUI one principal), while its model list
// still answers. Where Longhaul reads plain user headers, it is refused
// the same way, with an error that names the fix.
func TestOpenWebUIForwardingOff(t *testing.T) {
	env, fake := owuiFake(t)
	conn := owuiConn(env)
	conn.ForwardUserInfo = false
	conn.Tools = nil
	annChat, bobChat := conn.NewChat(ann, "naked"), conn.NewChat(bob, "naked")
	annReq := annChat.Ask("hi")
	for _, h := range []string{owuitest.HeaderUserJWT, owuitest.HeaderUserID, owuitest.HeaderChatID} {
		if annReq.Header.Get(h) != "" {
			t.Fatalf("forwarding off, yet the double sent %s", h)
		}
	}
	wantRefused(t, annReq, fake, "no signed user", "X-OpenWebUI-User-Jwt", "ENABLE_FORWARD_USER_INFO_HEADERS")
	if models := doAt(t, env.URL, "GET", "/v1/models", nil, map[string]string{"Authorization": "Bearer " + owuiKey}); models.StatusCode != http.StatusOK {
		t.Errorf("GET /v1/models without a user = %d, want 200", models.StatusCode)
	}

	plain := env.StartAPI(func(c *api.Config) { c.JWTSecret = nil })
	conn.BaseURL = plain.URL + "/v1"
	for _, req := range []*owuitest.Request{annChat.Ask("hi"), bobChat.Ask("hi")} {
		wantRefused(t, req, fake, "plain headers, no user", "ENABLE_FORWARD_USER_INFO_HEADERS", "LONGHAUL_API_KEYS")
	}
	if resp := doAt(t, plain.URL, "GET", "/v1/runs", nil, map[string]string{"Authorization": "Bearer " + owuiKey}); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /v1/runs as the proxy key alone = %d, want 401", resp.StatusCode)
	}
	if models := doAt(t, plain.URL, "GET", "/v1/models", nil, map[string]string{"Authorization": "Bearer " + owuiKey}); models.StatusCode != http.StatusOK {
		t.Errorf("GET /v1/models without a user, plain headers = %d, want 200", models.StatusCode)
	}
}

// TestOpenWebUIPlainUserHeaders: without the signing secret Open WebUI
// sends the user as plain headers, its name percent-encoded; each user is
// still a principal of their own.
func TestOpenWebUIPlainUserHeaders(t *testing.T) {
	fake := runsfake.New()
	fake.OnStart = runsfake.Answered("hello")
	env := testenv.Start(t, testenv.Options{Runs: fake, API: api.Config{Keys: []identity.Key{{Name: "owui", Secret: owuiKey, Proxy: true}}}})
	conn := owuiConn(env)
	conn.JWTSecret = ""
	conn.Tools = nil
	odd := owuitest.User{ID: "u-ö", Email: "zoë@example.com", Name: "Zoë / Ops", Role: "admin"}
	req := conn.NewChat(odd, "naked").Ask("hi")
	if got := req.Header.Get(owuitest.HeaderUserName); got != "Zo%C3%AB %2F Ops" {
		t.Fatalf("the double sent the name as %q", got)
	}
	a := owuitest.OK(t, req)
	if a.Content != "hello" {
		t.Errorf("answer %q", a.Content)
	}
	as := func(u owuitest.User) map[string]string {
		return map[string]string{"Authorization": "Bearer " + owuiKey, owuitest.HeaderUserID: u.ID, owuitest.HeaderUserEmail: u.Email}
	}
	if resp := doAt(t, env.URL, "GET", "/v1/runs/"+a.RunID, nil, as(odd)); resp.StatusCode != http.StatusOK {
		t.Errorf("her own run = %d", resp.StatusCode)
	}
	if resp := doAt(t, env.URL, "GET", "/v1/runs/"+a.RunID, nil, as(bob)); resp.StatusCode != http.StatusNotFound {
		t.Errorf("her run to bob = %d, want 404", resp.StatusCode)
	}
}

// TestOpenWebUIThinking streams a thinking model's answer to Open WebUI
// v0.11.0: the thinking arrives as reasoning (Open WebUI's "Thought for"
// block), never in the answer's text, and the next turn's history, rebuilt
// as Open WebUI rebuilds it for a model of no known provider, carries the
// answer without its thinking, so the model never reads it back.
func TestOpenWebUIThinking(t *testing.T) {
	env := owuiEnv(t)
	chat := owuiConn(env).NewChat(ann, "assistant")
	const thought = "The user asks for the day; the calendar says Tuesday."
	env.Model.Enqueue(llmtest.Text("It is Tuesday.", llmtest.Reasoning(thought)))
	a1 := owuitest.OK(t, chat.Ask("What day is it?"))
	if a1.Reasoning != thought || a1.Content != "It is Tuesday." {
		t.Fatalf("first turn: reasoning %q, content %q", a1.Reasoning, a1.Content)
	}
	chat.Keep(a1)

	env.Model.Enqueue(llmtest.Text("Wednesday."))
	next := chat.Ask("And tomorrow?")
	for _, m := range next.Messages() {
		if m["role"] == "assistant" && (m["content"] != "It is Tuesday." || m["reasoning_content"] != nil) {
			t.Errorf("Open WebUI sends the past answer as %v", m)
		}
	}
	a2 := owuitest.OK(t, next)
	if a2.Content != "Wednesday." || a2.Reasoning != "" {
		t.Fatalf("second turn: reasoning %q, content %q", a2.Reasoning, a2.Content)
	}
	for _, m := range lastCall(t, env).Chat.Messages {
		if strings.Contains(m.Content, "calendar says") || strings.Contains(m.ReasoningContent, "calendar says") {
			t.Errorf("the model reads the past thinking back: %+v", m)
		}
	}
}
