package mcpapi_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/longhaul-dev/longhaul/internal/testing/runsfake"
	"github.com/longhaul-dev/longhaul/internal/testing/webtest"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// modernCall is one request of MCP's stateless revision, as who: the
// revision's headers (MCP-Protocol-Version, and the routing headers the SDK
// checks, streamable_headers.go:359-393) and per-request _meta, with the
// Tasks extension among the client's capabilities when tasks is set. It
// returns the JSON-RPC response's result or error.
func modernCall(t *testing.T, url string, who map[string]string, method, params string, tasks bool) (json.RawMessage, *jsonrpc.Error) {
	t.Helper()
	caps := `{}`
	if tasks {
		caps = `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`
	}
	var p map[string]any
	if err := json.Unmarshal([]byte(params), &p); err != nil {
		t.Fatal(err)
	}
	p["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": json.RawMessage(caps),
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": p})
	headers := map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
	if name, ok := p["name"].(string); ok {
		headers["Mcp-Name"] = name
	}
	for h, v := range who {
		headers[h] = v
	}
	_, data := postWith(t, url, headers, string(body))
	var msg struct {
		Result json.RawMessage `json:"result"`
		Error  *jsonrpc.Error  `json:"error"`
	}
	if err := json.Unmarshal([]byte(data), &msg); err != nil {
		t.Fatalf("%s: %v in %s", method, err, data)
	}
	return msg.Result, msg.Error
}

// taskV2 is a task of the Tasks extension as tasks/get answers it.
type taskV2 struct {
	ResultType    string `json:"resultType"`
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	TTLMs         *int64 `json:"ttlMs"`
	InputRequests map[string]struct {
		Method string `json:"method"`
		Params struct {
			Mode    string `json:"mode"`
			Message string `json:"message"`
		} `json:"params"`
	} `json:"inputRequests"`
	Result *struct {
		ResultType string `json:"resultType"`
		IsError    bool   `json:"isError"`
		Content    []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"result"`
}

// getV2 is tasks/get of id as who.
func getV2(t *testing.T, url string, who map[string]string, id string) (taskV2, *jsonrpc.Error) {
	t.Helper()
	res, rpcErr := modernCall(t, url, who, "tasks/get", `{"taskId":"`+id+`"}`, true)
	var tk taskV2
	if rpcErr == nil {
		if err := json.Unmarshal(res, &tk); err != nil {
			t.Fatalf("tasks/get: %v in %s", err, res)
		}
	}
	return tk, rpcErr
}

// TestStatelessDiscover: server/discover offers the stateless revision
// beside the 2025 ones, with the Tasks extension; a session's methods of
// 2025-11-25's Tasks are not the stateless revision's.
func TestStatelessDiscover(t *testing.T) {
	url := serve(t, runsfake.New())
	res, rpcErr := modernCall(t, url, webtest.Alice, "server/discover", `{}`, false)
	var d struct {
		SupportedVersions []string `json:"supportedVersions"`
		Capabilities      struct {
			Tools      any            `json:"tools"`
			Extensions map[string]any `json:"extensions"`
		} `json:"capabilities"`
	}
	if rpcErr != nil || json.Unmarshal(res, &d) != nil {
		t.Fatalf("server/discover = %s, %v", res, rpcErr)
	}
	if !slices.Contains(d.SupportedVersions, "2026-07-28") || !slices.Contains(d.SupportedVersions, "2025-11-25") ||
		d.Capabilities.Tools == nil || d.Capabilities.Extensions["io.modelcontextprotocol/tasks"] == nil {
		t.Errorf("server/discover = %s, want 2026-07-28 and 2025-11-25, tools and the Tasks extension", res)
	}
	// The revision's _meta without its header: the session handler
	// refuses the version, naming those it serves.
	headers := map[string]string{}
	for h, v := range webtest.Alice {
		headers[h] = v
	}
	_, data := postWith(t, url, headers, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	var refused struct {
		Error *jsonrpc.Error `json:"error"`
	}
	if json.Unmarshal([]byte(data), &refused) != nil || refused.Error == nil || refused.Error.Code != -32022 || !strings.Contains(string(refused.Error.Data), "2025-11-25") {
		t.Errorf("a 2026-07-28 request without its header = %s, want -32022 naming 2025-11-25", data)
	}
	for _, m := range []string{"tasks/result", "tasks/list"} {
		if _, rpcErr := modernCall(t, url, webtest.Alice, m, `{"taskId":"run-x"}`, true); rpcErr == nil || rpcErr.Code != jsonrpc.CodeMethodNotFound {
			t.Errorf("%s on the stateless revision: %v, want method not found", m, rpcErr)
		}
	}
}

// TestTasksExtension: a tools/call of a client that declares the Tasks
// extension answers with a task; tasks/get reads it, asks for its
// approval as an inputRequest, and inlines its result; tasks/update
// decides the approval; another principal does not find the task.
func TestTasksExtension(t *testing.T) {
	fake := runsfake.New()
	url := serve(t, fake)
	res, rpcErr := modernCall(t, url, webtest.Alice, "tools/call", `{"name":"assistant","arguments":{"question":"hi"}}`, true)
	var created taskV2
	if rpcErr != nil || json.Unmarshal(res, &created) != nil {
		t.Fatalf("tools/call = %s, %v", res, rpcErr)
	}
	r := fake.Run(created.TaskID)
	if created.ResultType != "task" || created.Status != "working" || created.TTLMs != nil || r == nil || r.Owner != "alice" || r.Memo[runs.MemoDoor] != runs.DoorMCP {
		t.Fatalf("tools/call = %s, want a working task (resultType task, ttlMs null) of a run of alice's through mcp", res)
	}
	if _, rpcErr := getV2(t, url, webtest.Bob, created.TaskID); rpcErr == nil || rpcErr.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("bob's tasks/get of alice's task: %v, want -32602", rpcErr)
	}
	r.SetState(func(st *contract.RunState) {
		st.Status = contract.StatusWaiting
		st.Waiting = &contract.Waiting{Kind: contract.WaitApproval, ToolCallID: "o1", Tool: "place_order", Arguments: `{"item":"book"}`}
	})
	tk, rpcErr := getV2(t, url, webtest.Alice, created.TaskID)
	ask, ok := tk.InputRequests["approve-o1"]
	if rpcErr != nil || tk.Status != "input_required" || tk.ResultType != "complete" || !ok || ask.Method != "elicitation/create" ||
		ask.Params.Mode != "form" || !strings.Contains(ask.Params.Message, "place_order") {
		t.Fatalf("tasks/get of a run waiting for approval = %+v, %v; want input_required asking to approve o1", tk, rpcErr)
	}
	update := func(key, answer string) {
		t.Helper()
		if _, rpcErr := modernCall(t, url, webtest.Alice, "tasks/update", `{"taskId":"`+created.TaskID+`","inputResponses":{"`+key+`":`+answer+`}}`, true); rpcErr != nil {
			t.Fatalf("tasks/update: %v", rpcErr)
		}
	}
	update("approve-o0", `{"action":"accept","content":{"approve":true}}`)
	update("approve-o1", `{"action":"cancel"}`)
	if in := r.Inputs(); len(in) != 0 {
		t.Errorf("inputs after an unknown key and a cancel = %+v, want none", in)
	}
	update("approve-o1", `{"action":"accept","content":{"approve":true}}`)
	if in := r.Inputs(); len(in) != 1 || in[0].Approve == nil || !*in[0].Approve {
		t.Errorf("inputs = %+v, want one approval", in)
	}
	r.Finish(contract.AgentResult{Content: "Ordered."})
	tk, rpcErr = getV2(t, url, webtest.Alice, created.TaskID)
	if rpcErr != nil || tk.Status != "completed" || tk.Result == nil || tk.Result.ResultType != "complete" || tk.Result.IsError ||
		len(tk.Result.Content) != 1 || tk.Result.Content[0].Text != "Ordered." {
		t.Errorf("tasks/get of a finished run = %+v, %v; want completed with its answer inlined", tk, rpcErr)
	}
	if _, rpcErr := modernCall(t, url, webtest.Alice, "tasks/cancel", `{"taskId":"`+created.TaskID+`"}`, true); rpcErr == nil || rpcErr.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("tasks/cancel of a finished task: %v, want -32602", rpcErr)
	}
}

// TestTasksExtensionFailedRun: a run that failed is a completed task
// whose result is an error ("failed" is for JSON-RPC errors only).
func TestTasksExtensionFailedRun(t *testing.T) {
	fake := runsfake.New()
	fake.Add("run-f", "alice", contract.AgentInput{Agent: "assistant"}).Fail("model_error", "the model is down")
	url := serve(t, fake)
	tk, rpcErr := getV2(t, url, webtest.Alice, "run-f")
	if rpcErr != nil || tk.Status != "completed" || tk.Result == nil || !tk.Result.IsError || !strings.Contains(tk.Result.Content[0].Text, "the model is down") {
		t.Errorf("tasks/get of a failed run = %+v, %v; want completed, isError with the run's error", tk, rpcErr)
	}
}

// TestStatelessWithoutTasks: a tools/call of a client that does not
// declare the Tasks extension is not answered with a task ("MUST NOT").
func TestStatelessWithoutTasks(t *testing.T) {
	fake := runsfake.New()
	fake.OnStart = runsfake.Answered("Hello.")
	url := serve(t, fake)
	res, rpcErr := modernCall(t, url, webtest.Alice, "tools/call", `{"name":"assistant","arguments":{"question":"hi"}}`, false)
	var out struct {
		ResultType string `json:"resultType"`
		Content    []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if rpcErr != nil || json.Unmarshal(res, &out) != nil || out.ResultType != "complete" || len(out.Content) != 1 || out.Content[0].Text != "Hello." {
		t.Errorf("tools/call without the extension = %s, %v; want the answer, complete", res, rpcErr)
	}
}

// TestRequestStateOfAnother: a retried call (SEP-2322) whose requestState
// names another principal's run finds no run, and hands it nothing.
func TestRequestStateOfAnother(t *testing.T) {
	fake := runsfake.New()
	bobs := fake.Add("run-bob", "bob", contract.AgentInput{Agent: "assistant"})
	bobs.SetState(func(st *contract.RunState) {
		st.Status = contract.StatusWaiting
		st.Waiting = &contract.Waiting{Kind: contract.WaitApproval, ToolCallID: "o1", Tool: "place_order"}
	})
	url := serve(t, fake)
	_, rpcErr := modernCall(t, url, webtest.Alice, "tools/call", `{"name":"assistant","arguments":{"question":"hi"},"requestState":"run-bob","inputResponses":{"approve-o1":{"action":"accept","content":{"approve":true}}}}`, false)
	if rpcErr == nil || rpcErr.Code != jsonrpc.CodeInvalidParams || len(bobs.Inputs()) != 0 || fake.Len() != 1 {
		t.Errorf("alice's retry naming bob's run: %v, %d inputs, %d runs; want -32602, none, no new run", rpcErr, len(bobs.Inputs()), fake.Len())
	}
}
