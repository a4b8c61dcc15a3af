package mcpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/api/mcpapi"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/longhaul-dev/longhaul/internal/testing/runsfake"
	"github.com/longhaul-dev/longhaul/internal/testing/webtest"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The MCP server over runsfake, driven by the Go SDK's own client: what
// these tests check is the protocol side (streams that flush mid-call,
// task ownership, sessions held to their principal, the errors); the runs
// themselves run end to end in test/mcpserver.

// serve is the MCP handler over fake at /v1/mcp (behind webtest's auth
// of Alice and Bob), on a port of its own.
func serve(t *testing.T, fake runs.Service, keepAlive ...time.Duration) string {
	t.Helper()
	return serveLimited(t, fake, runs.Limits{}, keepAlive...)
}

// serveLimited is serve with the principals' limits.
func serveLimited(t *testing.T, fake runs.Service, limits runs.Limits, keepAlive ...time.Duration) string {
	t.Helper()
	rw, gate := webtest.RunsOver(fake, limits)
	h := &mcpapi.Handler{Runs: rw, Gate: gate, Catalog: webtest.Catalog(t), Stopping: t.Context()}
	if len(keepAlive) > 0 {
		h.KeepAlive = keepAlive[0]
	}
	h.Init()
	app := webtest.App(t, func(_, v1 fiber.Router) { v1.All("/mcp", h.Serve) })
	return webtest.Listen(t, app) + "/v1/mcp"
}

// keyed adds a principal's headers to every request.
type keyed struct{ headers map[string]string }

func (k keyed) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for h, v := range k.headers {
		r.Header.Set(h, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// legacy has the SDK's client ask for 2025-11-25, with sessions: unpinned,
// it would probe server/discover and speak the stateless revision
// (client.go:319-385).
var legacy = &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}

// connect opens a session as who, with opts.
func connect(t *testing.T, url string, who map[string]string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: keyed{who}}}, legacy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestPlainCallStreams: a plain call's progress reaches the client while
// the run still works (the bridge flushes), and the call answers with the
// run's answer; a failed run answers isError.
func TestPlainCallStreams(t *testing.T) {
	fake := runsfake.New()
	started := make(chan *runsfake.Run, 1)
	fake.OnStart = func(r *runsfake.Run) { started <- r }
	url := serve(t, fake)
	progress := make(chan string, 4)
	cs := connect(t, url, webtest.Alice, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		progress <- req.Params.Message
	}})
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		p := &mcp.CallToolParams{Name: "assistant", Arguments: map[string]any{"question": "hi"}}
		p.SetProgressToken("p1")
		res, err := cs.CallTool(context.Background(), p)
		done <- answer{res, err}
	}()
	r := <-started
	if r.Memo[runs.MemoDoor] != runs.DoorMCP || r.Owner != "alice" {
		t.Errorf("run memo %v owner %s, want door mcp, alice's", r.Memo, r.Owner)
	}
	r.Emit(longhaul.EventToolStart, longhaul.ToolStartData{ToolCallID: "c1", Name: "current_time"})
	if got := <-progress; got != "calling tool current_time" {
		t.Errorf("progress = %q", got)
	}
	runsfake.Answered("Hello.")(r)
	a := <-done
	if a.err != nil || a.res.IsError || a.res.Content[0].(*mcp.TextContent).Text != "Hello." {
		t.Fatalf("call = %+v, %v; want Hello.", a.res, a.err)
	}

	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "assistant", Arguments: map[string]any{"question": "again"}})
		done <- answer{res, err}
	}()
	(<-started).Fail("model_error", "the model is down")
	a = <-done
	if a.err != nil || !a.res.IsError || !strings.Contains(a.res.Content[0].(*mcp.TextContent).Text, "the model is down") {
		t.Fatalf("failed run's call = %+v, %v; want isError with the error", a.res, a.err)
	}
}

// TestBadCalls: an unknown tool, an agent the caller may not use and bad
// arguments are JSON-RPC errors -32602; no run starts.
func TestBadCalls(t *testing.T) {
	fake := runsfake.New()
	cs := connect(t, serve(t, fake), webtest.Alice, nil)
	for _, p := range []*mcp.CallToolParams{
		{Name: "nobody", Arguments: map[string]any{"question": "hi"}},
		{Name: "assistant", Arguments: map[string]any{"question": ""}},
		{Name: "assistant", Arguments: map[string]any{"prompt": "hi"}},
	} {
		_, err := cs.CallTool(t.Context(), p)
		var rpc *jsonrpc.Error
		if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("call %s %v: %v, want -32602", p.Name, p.Arguments, err)
		}
	}
	if fake.Len() != 0 {
		t.Errorf("%d runs started, want none", fake.Len())
	}
}

type taskID struct {
	mcp.ParamsBase
	TaskID string `json:"taskId"`
}

type taskOut struct {
	mcp.ResultBase
	mcpapi.Task
}

// TestTaskOwnership: tasks/get reads a run of the caller's, started
// through /mcp or another door, in any session; another principal's run
// is "Task not found" (-32602); the status follows the run's.
func TestTaskOwnership(t *testing.T) {
	fake := runsfake.New()
	mine := fake.Add("run-mine", "alice", contract.AgentInput{Agent: "assistant"})
	mine.Memo[runs.MemoDoor] = runs.DoorMCP
	fake.Add("run-bob", "bob", contract.AgentInput{Agent: "assistant"}).Memo[runs.MemoDoor] = runs.DoorMCP
	fake.Add("run-other-door", "alice", contract.AgentInput{Agent: "assistant"}).Memo[runs.MemoDoor] = runs.DoorRuns
	url := serve(t, fake)
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	if err := mcp.AddSendingCustomMethod[*taskID, *taskOut](c, "tasks/get"); err != nil {
		t.Fatal(err)
	}
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: keyed{webtest.Alice}}}, legacy)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	get := func(id string) (*taskOut, error) {
		return mcp.CallCustomMethod[*taskID, *taskOut](t.Context(), cs, "tasks/get", &taskID{TaskID: id})
	}
	if got, err := get("run-mine"); err != nil || got.Status != mcpapi.TaskWorking || got.TaskID != "run-mine" {
		t.Errorf("tasks/get run-mine = %+v, %v; want working", got, err)
	}
	mine.Wait()
	if got, err := get("run-mine"); err != nil || got.Status != mcpapi.TaskInputRequired {
		t.Errorf("tasks/get of a waiting run = %+v, %v; want input_required", got, err)
	}
	runsfake.Answered("done")(mine)
	if got, err := get("run-mine"); err != nil || got.Status != mcpapi.TaskCompleted {
		t.Errorf("tasks/get of a finished run = %+v, %v; want completed", got, err)
	}
	if got, err := get("run-other-door"); err != nil || got.TaskID != "run-other-door" || got.Status != mcpapi.TaskWorking {
		t.Errorf("tasks/get of a run the runs API started = %+v, %v; want it, working", got, err)
	}
	for _, id := range []string{"run-bob", "run-none"} {
		_, err := get(id)
		var rpc *jsonrpc.Error
		if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams || rpc.Message != "Failed to retrieve task: Task not found" {
			t.Errorf("tasks/get %s: %v, want -32602 Task not found", id, err)
		}
	}
}

// post sends one JSON-RPC message to url as who, in session (if any),
// and returns the answer's session id and its first data line.
func post(t *testing.T, url string, who map[string]string, session, body string) (string, string) {
	t.Helper()
	headers := map[string]string{"Mcp-Protocol-Version": "2025-11-25"}
	if session != "" {
		headers["Mcp-Session-Id"] = session
	}
	for h, v := range who {
		headers[h] = v
	}
	return postWith(t, url, headers, body)
}

// postWith POSTs body with headers and returns the session id and the
// first event's data.
func postWith(t *testing.T, url string, headers map[string]string, body string) (string, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for h, v := range headers {
		req.Header.Set(h, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var seen strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			return resp.Header.Get("Mcp-Session-Id"), data
		}
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			// An error the SDK answers as JSON (as the stateless
			// revision's errors are).
			return resp.Header.Get("Mcp-Session-Id"), sc.Text()
		}
		seen.WriteString(sc.Text() + "\n")
	}
	t.Fatalf("no data in the answer (%d): %s", resp.StatusCode, seen.String())
	return "", ""
}

// TestSessionOfAnother: a session answers only the principal that
// opened it; its initialize result declares Tasks and its tools say they
// may run as tasks.
func TestSessionOfAnother(t *testing.T) {
	url := serve(t, runsfake.New())
	session, init := post(t, url, webtest.Alice, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	var ir struct {
		Result struct {
			Capabilities struct {
				Tasks struct {
					Requests struct {
						Tools struct {
							Call *struct{} `json:"call"`
						} `json:"tools"`
					} `json:"requests"`
					List *struct{} `json:"list"`
				} `json:"tasks"`
			} `json:"capabilities"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(init), &ir); err != nil || ir.Result.Capabilities.Tasks.Requests.Tools.Call == nil || ir.Result.Capabilities.Tasks.List == nil {
		t.Fatalf("initialize = %s (%v), want capabilities.tasks", init, err)
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	if _, got := post(t, url, webtest.Alice, session, list); !strings.Contains(got, `"execution":{"taskSupport":"optional"}`) {
		t.Errorf("alice's tools/list = %s, want tools with taskSupport", got)
	}
	_, got := post(t, url, webtest.Bob, session, list)
	var resp struct {
		Error *jsonrpc.Error `json:"error"`
	}
	if json.Unmarshal([]byte(got), &resp) != nil || resp.Error == nil || resp.Error.Code != jsonrpc.CodeInvalidRequest {
		t.Errorf("bob's tools/list in alice's session = %s, want -32600", got)
	}
}

// TestNoStandaloneStream: GET answers 405, as the transport allows.
func TestNoStandaloneStream(t *testing.T) {
	url := serve(t, runsfake.New())
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", webtest.Alice["Authorization"])
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET = %d, want 405", resp.StatusCode)
	}
}

// TestApprovalByElicitation: a plain call whose run waits for approval
// asks the client, which can elicit, and its answer reaches the run as
// its input; declining denies.
func TestApprovalByElicitation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answer  *mcp.ElicitResult
		approve bool
	}{
		{"accept approve", &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, true},
		{"decline", &mcp.ElicitResult{Action: "decline"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := runsfake.New()
			fake.OnStart = func(r *runsfake.Run) {
				r.Emit(longhaul.EventApprovalRequired, longhaul.ApprovalRequiredData{ToolCallID: "o1", Name: "place_order", Arguments: `{"item":"book"}`})
				r.Wait()
			}
			fake.OnInput = func(r *runsfake.Run, in contract.InputRequest) {
				decision := contract.DecisionDenied
				if in.Approve != nil && *in.Approve {
					decision = contract.DecisionApproved
				}
				r.Emit(longhaul.EventApproval, longhaul.ApprovalData{ToolCallID: "o1", Name: "place_order", Decision: decision})
				runsfake.Answered("Done: " + decision)(r)
			}
			asked := make(chan string, 1)
			cs := connect(t, serve(t, fake), webtest.Alice, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked <- req.Params.Message
				return tc.answer, nil
			}})
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "assistant", Arguments: map[string]any{"question": "order"}})
			if msg := <-asked; !strings.Contains(msg, "place_order") || !strings.Contains(msg, `{"item":"book"}`) {
				t.Errorf("elicitation = %q, want the tool call", msg)
			}
			want := "Done: " + map[bool]string{true: contract.DecisionApproved, false: contract.DecisionDenied}[tc.approve]
			if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != want {
				t.Fatalf("call = %+v, %v; want %s", res, err, want)
			}
		})
	}
}

// TestTaskAugmentedCall: a tools/call with params.task answers at once
// with a working task named by the run it started; a task that is not an
// object is -32602 and starts nothing.
func TestTaskAugmentedCall(t *testing.T) {
	fake := runsfake.New()
	url := serve(t, fake)
	session, _ := post(t, url, webtest.Alice, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	_, got := post(t, url, webtest.Alice, session, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"assistant","arguments":{"question":"hi"},"task":"soon"}}`)
	var bad struct {
		Error *jsonrpc.Error `json:"error"`
	}
	if json.Unmarshal([]byte(got), &bad) != nil || bad.Error == nil || bad.Error.Code != jsonrpc.CodeInvalidParams || fake.Len() != 0 {
		t.Errorf("task \"soon\" = %s with %d runs, want -32602 and none", got, fake.Len())
	}
	_, got = post(t, url, webtest.Alice, session, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"assistant","arguments":{"question":"hi"},"task":{"ttl":60000}}}`)
	var created struct {
		Result struct {
			Task mcpapi.Task `json:"task"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(got), &created); err != nil {
		t.Fatal(err)
	}
	tk := created.Result.Task
	r := fake.Run(tk.TaskID)
	if tk.Status != mcpapi.TaskWorking || r == nil || r.Memo[runs.MemoDoor] != runs.DoorMCP || r.Owner != "alice" {
		t.Errorf("created %s, want a working task of a run of alice's through mcp", got)
	}
}

// releasing is runsfake whose followers say when they are released: when
// the call that followed the run has ended.
type releasing struct {
	*runsfake.Service
	released chan string
}

func (s releasing) Follow(id string) runs.Follower {
	return &releasingFollower{Follower: s.Service.Follow(id), id: id, released: s.released}
}

type releasingFollower struct {
	runs.Follower
	id       string
	released chan string
}

func (f *releasingFollower) Release() {
	f.Follower.Release()
	f.released <- f.id
}

// TestQuietCallKeepsAlive: a plain call whose run says nothing gets its
// stream's headers and keep-alive lines; when its client leaves, the call
// ends (its follower is released) while the run goes on.
func TestQuietCallKeepsAlive(t *testing.T) {
	fake := releasing{Service: runsfake.New(), released: make(chan string, 1)}
	started := make(chan *runsfake.Run, 1)
	fake.OnStart = func(r *runsfake.Run) { started <- r }
	url := serve(t, fake, 20*time.Millisecond)
	session, _ := post(t, url, webtest.Alice, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	ctx, leave := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"assistant","arguments":{"question":"hi"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Authorization", webtest.Alice["Authorization"])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r := <-started
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("quiet call answered %d %q, want an event stream", resp.StatusCode, ct)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != ": keep-alive\n" {
		t.Fatalf("first line %q (%v), want a keep-alive comment", line, err)
	}
	leave()
	resp.Body.Close()
	if id := <-fake.released; id != r.ID {
		t.Errorf("released the follower of %s, want %s's", id, r.ID)
	}
	if st, _ := fake.State(t.Context(), r.ID); st.Status != contract.StatusRunning {
		t.Errorf("run status %q after the client left, want running", st.Status)
	}
}

// TestRefusedStart: a start the gate refuses (a principal over
// LONGHAUL_MAX_RUNS) is a JSON-RPC internal error whose data carries
// Longhaul's error, and starts nothing.
func TestRefusedStart(t *testing.T) {
	fake := runsfake.New()
	fake.Add("run-running", "alice", contract.AgentInput{Agent: "assistant"})
	cs := connect(t, serveLimited(t, fake, runs.Limits{Runs: 1}), webtest.Alice, nil)
	_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "assistant", Arguments: map[string]any{"question": "hi"}})
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInternalError || !strings.Contains(rpc.Message, "too many runs") {
		t.Fatalf("call over the run limit: %v, want -32603 too many runs", err)
	}
	var data struct {
		Status int    `json:"status"`
		Code   string `json:"code"`
	}
	if json.Unmarshal(rpc.Data, &data) != nil || data.Status != http.StatusTooManyRequests || data.Code != "rate_limit_exceeded" {
		t.Errorf("error data = %s, want status 429, rate_limit_exceeded", rpc.Data)
	}
	if fake.Len() != 1 {
		t.Errorf("%d runs, want the one running", fake.Len())
	}
}
