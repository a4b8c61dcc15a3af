package mcpapi

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/longhaul-dev/longhaul/contract"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The stateless revision's Tasks: the extension io.modelcontextprotocol/tasks
// (github.com/modelcontextprotocol/experimental-ext-tasks,
// specification/draft/tasks.md), which the official TypeScript client's
// Tasks package, @modelcontextprotocol/ext-tasks 0.2.2, calls its "V2"
// (dist/client/task-protocol-v2.js). A client declares it in each
// request's _meta capabilities; the server declares it in server/discover;
// a tools/call of a client that declared it answers with a task
// (resultType "task"), and tasks/get (the task with its result inlined, or
// what it waits for as inputRequests), tasks/update (the answers) and
// tasks/cancel follow it. There is no tasks/result or tasks/list: the SDK
// answers them as unknown methods. As in 2025-11-25's Tasks, a task is a
// run and its id the run's.

// tasksExtension names the extension (tasks.md, "Extension Identifier").
const tasksExtension = "io.modelcontextprotocol/tasks"

// resultComplete is what resultType says of a result that is the request's
// own (tasks.md, "Polymorphic Results"; tasks/get's, tasks/update's and
// tasks/cancel's always are).
const resultComplete = "complete"

// taskV2 is a DetailedTask (tasks.md, "Tasks"): a Task with ttlMs and
// pollIntervalMs, and the fields of its status, as tasks/get and a
// task-creating tools/call (resultType "task") answer it.
type taskV2 struct {
	mcp.ResultBase
	ResultType     string                  `json:"resultType"`
	TaskID         string                  `json:"taskId"`
	Status         string                  `json:"status"`
	StatusMessage  string                  `json:"statusMessage,omitempty"`
	CreatedAt      string                  `json:"createdAt"`
	LastUpdatedAt  string                  `json:"lastUpdatedAt"`
	TTLMs          *int64                  `json:"ttlMs"`
	PollIntervalMs int64                   `json:"pollIntervalMs,omitempty"`
	InputRequests  map[string]inputRequest `json:"inputRequests,omitempty"`
	Result         json.RawMessage         `json:"result,omitempty"`
}

// inputRequest is a request the server needs the client to fulfil, an
// elicitation (MRTR's InputRequest).
type inputRequest struct {
	Method string            `json:"method"`
	Params *mcp.ElicitParams `json:"params"`
}

// ackV2 answers tasks/update and tasks/cancel (an empty result).
type ackV2 struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
}

// updateParams are tasks/update's: answers to the task's inputRequests,
// by their keys.
type updateParams struct {
	mcp.ParamsBase
	TaskID         string               `json:"taskId"`
	InputResponses mcp.InputResponseMap `json:"inputResponses"`
}

// modernMiddleware holds each request to the principal it was
// authenticated as, and answers a tools/call of a client that declared the
// Tasks extension with a task.
func (s *session) modernMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		extra := req.GetExtra()
		if extra == nil || extra.Header.Get(headerPrincipal) != s.p.Name {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "this request belongs to another principal"}
		}
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		ctx, stop := s.h.bind(ctx, extra)
		defer stop()
		call, ok := req.(*mcp.CallToolRequest)
		if ok && call.Params != nil && declaresTasks(call.ClientCapabilities()) {
			return s.startTaskV2(ctx, call)
		}
		return next(ctx, method, req)
	}
}

// declaresTasks reports whether caps (a request's, from its _meta)
// declare the Tasks extension (tasks.md, "Capability Negotiation"): the
// server "MUST NOT return CreateTaskResult to a client that did not".
func declaresTasks(caps *mcp.ClientCapabilities) bool {
	if caps == nil {
		return false
	}
	_, ok := caps.Extensions[tasksExtension]
	return ok
}

// addTaskMethodsV2 adds tasks/get, tasks/update and tasks/cancel to srv.
func (s *session) addTaskMethodsV2(srv *mcp.Server) {
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	must(mcp.AddReceivingCustomMethod(srv, "tasks/get", s.getTaskV2))
	must(mcp.AddReceivingCustomMethod(srv, "tasks/update", s.updateTask))
	must(mcp.AddReceivingCustomMethod(srv, "tasks/cancel", func(ctx context.Context, ss *mcp.ServerSession, p *taskIDParams) (*ackV2, error) {
		if _, err := s.cancelTask(ctx, ss, p); err != nil {
			return nil, err
		}
		return &ackV2{ResultType: resultComplete}, nil
	}))
}

// startTaskV2 starts the run of call and answers with its task (tasks.md,
// "Task Creation": "MUST NOT return CreateTaskResult until the task is
// durably created"; the run has started once the gate answers).
func (s *session) startTaskV2(ctx context.Context, call *mcp.CallToolRequest) (mcp.Result, error) {
	id, now, err := s.startCall(ctx, call)
	if err != nil {
		return nil, err
	}
	return &taskV2{ResultType: "task", TaskID: id, Status: TaskWorking, CreatedAt: now, LastUpdatedAt: now, PollIntervalMs: pollInterval}, nil
}

// getTaskV2 answers tasks/get: the run as a task, with its tool result
// when it has ended, or the approval it waits for as an elicitation. A
// run that failed is a completed task whose result is an error (isError),
// as a plain call answers: "failed" is for JSON-RPC errors only (tasks.md,
// "Task Status").
func (s *session) getTaskV2(ctx context.Context, _ *mcp.ServerSession, p *taskIDParams) (*taskV2, error) {
	t, err := s.task(ctx, p)
	if err != nil {
		return nil, err
	}
	out := &taskV2{
		ResultType: resultComplete, TaskID: t.TaskID, Status: t.Status, StatusMessage: t.StatusMessage,
		CreatedAt: t.CreatedAt, LastUpdatedAt: t.LastUpdatedAt, PollIntervalMs: t.PollInterval,
	}
	switch t.Status {
	case TaskCompleted, TaskFailed:
		res, err := s.result(ctx, p.TaskID)
		if err != nil {
			return nil, err
		}
		if out.Result, err = completeResult(res); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		out.Status = TaskCompleted
	case TaskInputRequired:
		w, err := s.waiting(ctx, p.TaskID)
		if err != nil {
			return nil, err
		}
		out.InputRequests = map[string]inputRequest{}
		if w != nil {
			ask := approvalParams(p.TaskID, w.Tool, w.Arguments, nil)
			// MRTR's elicitations name their mode (ext-tasks' V2 schema
			// takes a form's as "form" or none).
			ask.Mode = "form"
			out.InputRequests[approvalKey(w.ToolCallID)] = inputRequest{Method: "elicitation/create", Params: ask}
		}
	}
	return out, nil
}

// completeResult is res as a task's result: a complete CallToolResult
// (resultType "complete", as ext-tasks' V2 result schema reads it,
// core/v2/schemas.js CompleteCallToolResultV2Schema).
func completeResult(res *mcp.CallToolResult) (json.RawMessage, error) {
	b, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	m["resultType"] = resultComplete
	return json.Marshal(m)
}

// waiting is the approval run id waits for, nil when it waits for none.
func (s *session) waiting(ctx context.Context, id string) (*contract.Waiting, error) {
	st, _, err := s.h.Runs.ReadRun(ctx, id, s.p.Name)
	if err != nil {
		return nil, rpcError(err)
	}
	if w := st.Waiting; w != nil && w.Kind == contract.WaitApproval {
		return w, nil
	}
	return nil, nil
}

// approvalKey is the inputRequests key of the approval of tool call
// call: unique over the task's life, as tasks.md ("Task Update Requests")
// requires, since a tool call is decided once.
func approvalKey(call string) string { return "approve-" + call }

// updateTask answers tasks/update: the answer to the approval the run
// waits for is its decision (as POST /v1/runs/{id}/input takes it); an
// answer that cancels leaves the run waiting (answer).
func (s *session) updateTask(ctx context.Context, _ *mcp.ServerSession, p *updateParams) (*ackV2, error) {
	if _, err := s.task(ctx, &taskIDParams{TaskID: p.TaskID}); err != nil {
		return nil, err
	}
	if err := s.answer(ctx, p.TaskID, p.InputResponses, map[string]bool{}); err != nil {
		return nil, err
	}
	return &ackV2{ResultType: resultComplete}, nil
}

// approvalParams are the elicitation that asks to approve run id's call
// of tool with args (an approval's message and schema, in whichever form
// it travels).
func approvalParams(id, tool, args string, meta mcp.Meta) *mcp.ElicitParams {
	return &mcp.ElicitParams{
		Meta:            meta,
		Message:         fmt.Sprintf("Run %s asks to call the tool %s with %s. Approve?", id, tool, args),
		RequestedSchema: approvalSchema,
	}
}

// decide hands res, an answer to an approval's elicitation, to run id:
// accepting with approve true approves, with false or declining denies; a
// cancel decides nothing.
func (s *session) decide(ctx context.Context, id string, res *mcp.ElicitResult) {
	if res.Action != "accept" && res.Action != "decline" {
		return
	}
	approve := res.Action == "accept" && res.Content["approve"] == true
	if _, err := s.h.Runs.Deliver(ctx, id, contract.InputRequest{Approve: &approve}); err != nil {
		s.h.Log.Info("mcp approval not taken", "run", id, "error", err)
	}
}
