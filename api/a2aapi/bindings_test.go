package a2aapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/api/a2aapi"
	"github.com/longhaul-dev/longhaul/api/sse"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/runsfake"
	"github.com/longhaul-dev/longhaul/internal/testing/webtest"
)

// The A2A bindings served from runsfake, under /v1 (webtest's key check
// standing in for the server's auth): what these tests check is the
// protocol side — envelopes, error codes, routes — for runs the test
// scripts; test/a2a drives the whole stack with the official client.

func serve(t *testing.T, fake *runsfake.Service) *fiber.App {
	t.Helper()
	rw, gate := webtest.RunsOver(fake)
	h := &a2aapi.Handlers{Runs: rw, Gate: gate, Streams: &sse.Streams{}, Catalog: webtest.Catalog(t)}
	return webtest.App(t, func(root, v1 fiber.Router) {
		root.Get("/a2a/:agent/.well-known/agent-card.json", h.Card)
		v1.Post("/a2a/:agent", h.JSONRPC)
		v1.All("/a2a/:agent/*", h.REST)
	})
}

// answered is a fake with alice's completed run-1 of the assistant.
func answered() *runsfake.Service {
	fake := runsfake.New()
	r := fake.Add("run-1", "alice", contract.AgentInput{
		Agent: "assistant", Messages: []longhaul.Message{{Role: longhaul.RoleUser, Content: "Hi"}},
		Metadata: map[string]string{a2aapi.MetaContext: "ctx-1"},
	})
	runsfake.Answered("Hello.")(r)
	return fake
}

// v1 are the headers of Alice's requests at A2A 1.0.
func v1(extra ...string) map[string]string {
	h := map[string]string{"A2A-Version": "1.0"}
	for k, v := range webtest.Alice {
		h[k] = v
	}
	for i := 0; i+1 < len(extra); i += 2 {
		h[extra[i]] = extra[i+1]
	}
	return h
}

// rpc posts a JSON-RPC request and decodes its answer.
func rpc(t *testing.T, app *fiber.App, headers map[string]string, body string) (result json.RawMessage, code int, reason string) {
	t.Helper()
	req, _ := http.NewRequest("POST", "/v1/a2a/assistant", strings.NewReader(body))
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	resp := webtest.Send(t, app, req)
	var out struct {
		JSONRPC string
		ID      json.RawMessage
		Result  json.RawMessage
		Error   *struct {
			Code int
			Data []struct{ Reason string }
		}
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &out); err != nil || out.JSONRPC != "2.0" {
		t.Fatalf("answer %d %s: not JSON-RPC (%v)", resp.StatusCode, b, err)
	}
	if out.Error != nil {
		if len(out.Error.Data) > 0 {
			reason = out.Error.Data[0].Reason
		}
		return nil, out.Error.Code, reason
	}
	return out.Result, 0, ""
}

func TestJSONRPCErrors(t *testing.T) {
	app := serve(t, answered())
	get := `{"jsonrpc":"2.0","id":7,"method":"GetTask","params":{"id":"run-1"}}`
	for _, tc := range []struct {
		name    string
		headers map[string]string
		body    string
		code    int
		reason  string
	}{
		{"no version is 0.3", webtest.Alice, get, -32009, "VERSION_NOT_SUPPORTED"},
		{"not JSON", v1(), `{`, -32700, ""},
		{"a batch", v1(), ` [` + get + `]`, -32600, ""},
		{"not JSON-RPC", v1(), `{"id":1,"method":"GetTask"}`, -32600, ""},
		{"no such method", v1(), `{"jsonrpc":"2.0","id":1,"method":"tasks/get"}`, -32601, ""},
		{"bad params", v1(), `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":7}}`, -32602, "INVALID_PARAMS"},
		{"another's task", map[string]string{"A2A-Version": "1.0", "Authorization": webtest.Bob["Authorization"]}, get, -32001, "TASK_NOT_FOUND"},
		{"no such task", v1(), `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"run-2"}}`, -32001, "TASK_NOT_FOUND"},
		{"a time filter", v1(), `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"statusTimestampAfter":"2026-01-01T00:00:00Z"}}`, -32602, "INVALID_PARAMS"},
		{"cancel a finished task", v1(), `{"jsonrpc":"2.0","id":1,"method":"CancelTask","params":{"id":"run-1"}}`, -32002, "TASK_NOT_CANCELABLE"},
		{"subscribe to a finished task", v1(), `{"jsonrpc":"2.0","id":1,"method":"SubscribeToTask","params":{"id":"run-1"}}`, -32004, "UNSUPPORTED_OPERATION"},
		{"message to a finished task", v1(), `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","taskId":"run-1","parts":[{"text":"more"}]}}}`, -32004, "UNSUPPORTED_OPERATION"},
		{"a file part", v1(), `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"url":"https://x/y.pdf"}]}}}`, -32005, "CONTENT_TYPE_NOT_SUPPORTED"},
		{"a later push config", v1(), `{"jsonrpc":"2.0","id":1,"method":"CreateTaskPushNotificationConfig","params":{"taskId":"run-1","url":"https://x/hook"}}`, -32003, "PUSH_NOTIFICATION_NOT_SUPPORTED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, code, reason := rpc(t, app, tc.headers, tc.body)
			if code != tc.code || reason != tc.reason {
				t.Errorf("error %d %q, want %d %q", code, reason, tc.code, tc.reason)
			}
		})
	}
}

func TestGetTask(t *testing.T) {
	app := serve(t, answered())
	res, code, _ := rpc(t, app, v1(), `{"jsonrpc":"2.0","id":"a","method":"GetTask","params":{"id":"run-1"}}`)
	if code != 0 {
		t.Fatalf("GetTask: error %d", code)
	}
	var task a2aapi.Task
	_ = json.Unmarshal(res, &task)
	if task.ID != "run-1" || task.ContextID != "ctx-1" || task.Status.State != a2aapi.StateCompleted || len(task.Artifacts) != 1 ||
		*task.Artifacts[0].Parts[0].Text != "Hello." || len(task.History) != 2 || task.History[0].Role != a2aapi.RoleUser {
		t.Errorf("task %s: want run-1 completed with its answer", res)
	}
	// The HTTP+JSON binding reads the same task, its history cut to none.
	resp := webtest.Do(t, app, "GET", "/v1/a2a/assistant/tasks/run-1?historyLength=0", nil, v1())
	rest := webtest.Decode[a2aapi.Task](t, resp)
	if resp.StatusCode != 200 || rest.ID != "run-1" || rest.History != nil || len(rest.Artifacts) != 1 {
		t.Errorf("GET tasks/run-1?historyLength=0 = %d %+v", resp.StatusCode, rest)
	}
}

func TestRESTErrors(t *testing.T) {
	app := serve(t, answered())
	for _, tc := range []struct {
		method, path   string
		status         int
		reason, grpcSt string
	}{
		{"GET", "/v1/a2a/assistant/tasks/run-2", 404, "TASK_NOT_FOUND", "NOT_FOUND"},
		{"POST", "/v1/a2a/assistant/tasks/run-1:cancel", 409, "TASK_NOT_CANCELABLE", "FAILED_PRECONDITION"},
		{"DELETE", "/v1/a2a/assistant/tasks/run-1", 404, "", "NOT_FOUND"},
		{"GET", "/v1/a2a/nobody/tasks/run-1", 404, "INVALID_PARAMS", "NOT_FOUND"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			resp := webtest.Do(t, app, tc.method, tc.path, nil, v1())
			var body struct {
				Error struct {
					Code    int
					Status  string
					Details []struct{ Reason string }
				}
			}
			_ = json.NewDecoder(resp.Body).Decode(&body)
			reason := ""
			if len(body.Error.Details) > 0 {
				reason = body.Error.Details[0].Reason
			}
			if resp.StatusCode != tc.status || body.Error.Code != tc.status || reason != tc.reason || body.Error.Status != tc.grpcSt {
				t.Errorf("%d %+v, want %d %s %s", resp.StatusCode, body, tc.status, tc.reason, tc.grpcSt)
			}
		})
	}
}

// TestAnswerWaiting: a message with the taskId of a task that waits for
// approval delivers its data part as the run's input, as POST
// /v1/runs/{id}/input would.
func TestAnswerWaiting(t *testing.T) {
	fake := runsfake.New()
	r := fake.Add("run-1", "alice", contract.AgentInput{Agent: "assistant", Metadata: map[string]string{a2aapi.MetaContext: "ctx-1"}})
	r.Wait()
	app := serve(t, fake)
	body := map[string]any{
		"message":       map[string]any{"messageId": "m", "role": "ROLE_USER", "taskId": "run-1", "contextId": "ctx-1", "parts": []any{map[string]any{"data": map[string]any{"approve": true}}}},
		"configuration": map[string]any{"returnImmediately": true},
	}
	resp := webtest.Do(t, app, "POST", "/v1/a2a/assistant/message:send", body, v1())
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"task":{"id":"run-1"`) {
		t.Fatalf("message:send = %d %s", resp.StatusCode, b)
	}
	if in := r.Inputs(); len(in) != 1 || in[0].Approve == nil || !*in[0].Approve {
		t.Errorf("the run took %+v, want one approval", in)
	}
	body["message"].(map[string]any)["contextId"] = "another"
	resp = webtest.Do(t, app, "POST", "/v1/a2a/assistant/message:send", body, v1())
	if resp.StatusCode != 400 {
		t.Errorf("a message of another context = %d, want 400", resp.StatusCode)
	}
}

func TestCard(t *testing.T) {
	app := serve(t, runsfake.New())
	resp := webtest.Do(t, app, "GET", "/a2a/assistant/.well-known/agent-card.json", nil, nil)
	card := webtest.Decode[a2aapi.AgentCard](t, resp)
	if card.Name != "assistant" || len(card.SupportedInterfaces) != 2 || !strings.HasSuffix(card.SupportedInterfaces[0].URL, "/a2a/assistant") ||
		!card.Capabilities.Streaming || !card.Capabilities.PushNotifications || card.SecuritySchemes["bearer"].HTTPAuth.Scheme != "Bearer" || len(card.Skills) == 0 {
		t.Errorf("card %+v", card)
	}
	if resp := webtest.Do(t, app, "GET", "/a2a/nobody/.well-known/agent-card.json", nil, nil); resp.StatusCode != 404 {
		t.Errorf("card of no agent = %d, want 404", resp.StatusCode)
	}
}
