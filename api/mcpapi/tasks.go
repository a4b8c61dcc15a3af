package mcpapi

import (
	"context"
	"errors"
	"time"

	"github.com/longhaul-dev/longhaul/api/runweb"
	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCP 2025-11-25's Tasks (basic/utilities/tasks), which the Go SDK v1.8.0
// does not know: the SDK refuses a method it has no handler for before
// any middleware sees it (shared.go:235-238 checkRequest, also run by the
// transport, streamable.go:1480), so tasks/* are the SDK's custom methods
// (server.go:2286 AddReceivingCustomMethod), which go through the same
// middleware. A task is a run started through this door; its id is the
// run's, and all that is known of it is read from the run, so any session
// of its principal reads it.

// pollInterval is how often a client is asked to poll tasks/get.
const pollInterval = 1000

// relatedTask is the _meta key naming a message's task (schema
// RELATED_TASK_META_KEY; the TS SDK's dist/esm/types.js:5).
const relatedTask = "io.modelcontextprotocol/related-task"

// Task is a task as MCP's schema says it (Task: taskId, status, ttl,
// createdAt, lastUpdatedAt, pollInterval, statusMessage).
type Task struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	TTL           *int64 `json:"ttl"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	PollInterval  int64  `json:"pollInterval,omitempty"`
	StatusMessage string `json:"statusMessage,omitempty"`
}

// The task statuses (schema TaskStatus).
const (
	TaskWorking       = "working"
	TaskInputRequired = "input_required"
	TaskCompleted     = "completed"
	TaskFailed        = "failed"
	TaskCancelled     = "cancelled"
)

// createTaskResult answers a task-augmented request (CreateTaskResult).
type createTaskResult struct {
	mcp.ResultBase
	Task Task `json:"task"`
}

// taskResult answers tasks/get and tasks/cancel (the Task's fields).
type taskResult struct {
	mcp.ResultBase
	Task
}

// taskIDParams are tasks/get's, tasks/result's and tasks/cancel's params.
type taskIDParams struct {
	mcp.ParamsBase
	TaskID string `json:"taskId"`
}

// listParams are tasks/list's.
type listParams struct {
	mcp.ParamsBase
	Cursor string `json:"cursor,omitempty"`
}

// listResult answers tasks/list.
type listResult struct {
	mcp.ResultBase
	Tasks      []Task `json:"tasks"`
	NextCursor string `json:"nextCursor,omitempty"`
}

// addTaskMethods adds tasks/get, tasks/result, tasks/list and
// tasks/cancel to srv.
func (s *session) addTaskMethods(srv *mcp.Server) {
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	must(mcp.AddReceivingCustomMethod(srv, "tasks/get", func(ctx context.Context, _ *mcp.ServerSession, p *taskIDParams) (*taskResult, error) {
		t, err := s.task(ctx, p)
		return &taskResult{Task: t}, err
	}))
	must(mcp.AddReceivingCustomMethod(srv, "tasks/result", s.taskResult))
	must(mcp.AddReceivingCustomMethod(srv, "tasks/cancel", s.cancelTask))
	must(mcp.AddReceivingCustomMethod(srv, "tasks/list", s.listTasks))
}

// startTask answers a task-augmented tools/call: it starts the run and
// answers with its task at once.
func (s *session) startTask(ctx context.Context, req mcp.Request) (mcp.Result, error) {
	call, ok := req.(*mcp.CallToolRequest)
	if !ok || call.Params == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call: missing params"}
	}
	id, now, err := s.startCall(ctx, call)
	if err != nil {
		return nil, err
	}
	return &createTaskResult{Task: Task{TaskID: id, Status: TaskWorking, CreatedAt: now, LastUpdatedAt: now, PollInterval: pollInterval}}, nil
}

// startCall starts the run of a task-augmented call of one of the
// session's tools, and says when, as a task's times are written.
func (s *session) startCall(ctx context.Context, call *mcp.CallToolRequest) (id, now string, err error) {
	if !s.tool(call.Params.Name) {
		return "", "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown tool \"" + call.Params.Name + "\""}
	}
	if id, err = s.start(ctx, call.Params.Name, call.Params.Arguments); err != nil {
		return "", "", err
	}
	return id, time.Now().UTC().Format(time.RFC3339Nano), nil
}

// tool reports whether name is one of the session's tools: an agent its
// principal may use.
func (s *session) tool(name string) bool {
	for _, a := range s.h.Catalog.AgentsFor(s.p.User) {
		if a.ID == name {
			return true
		}
	}
	return false
}

// task reads the task p names: a run of the session's principal, started
// through whichever door (one run, every door: a run the runs API, a chat
// or A2A started is an MCP task too); any other id is not found.
func (s *session) task(ctx context.Context, p *taskIDParams) (Task, error) {
	if p == nil || p.TaskID == "" {
		return Task{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "taskId: required"}
	}
	st, info, err := s.h.Runs.ReadRun(ctx, p.TaskID, s.p.Name)
	var we *web.Error
	if errors.As(err, &we) && we.Status == 404 {
		return Task{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Failed to retrieve task: Task not found"}
	}
	if err != nil {
		return Task{}, rpcError(err)
	}
	return taskOf(p.TaskID, runweb.StatusOf(st.Status, info), st, info), nil
}

// taskOf is the task of run id in status (the run's, as the API says it).
func taskOf(id, status string, st contract.RunState, info runs.Info) Task {
	t := Task{TaskID: id, Status: TaskWorking, PollInterval: pollInterval}
	created, updated := time.Now(), time.Now()
	if info.Started != nil {
		created = *info.Started
	}
	switch status {
	case contract.StatusWaiting:
		t.Status = TaskInputRequired
		if w := st.Waiting; w != nil {
			t.StatusMessage = "waiting for approval of tool " + w.Tool
			updated = w.Since
		}
	case contract.StatusCompleted:
		t.Status = TaskCompleted
	case contract.StatusFailed:
		t.Status, t.StatusMessage = TaskFailed, st.Error
	case contract.StatusCancelled:
		t.Status = TaskCancelled
	}
	if info.Closed != nil {
		updated = *info.Closed
	}
	t.CreatedAt = created.UTC().Format(time.RFC3339Nano)
	t.LastUpdatedAt = updated.UTC().Format(time.RFC3339Nano)
	return t
}

// taskResult answers tasks/result: it waits for the run's end (eliciting
// its approvals when the client can) and answers with the tool result,
// which names its task in _meta (Tasks, "Associating Task-Related
// Messages": tasks/result MUST).
func (s *session) taskResult(ctx context.Context, ss *mcp.ServerSession, p *taskIDParams) (*mcp.CallToolResult, error) {
	if _, err := s.task(ctx, p); err != nil {
		return nil, err
	}
	release, err := s.stream()
	if err != nil {
		return nil, err
	}
	defer release()
	// What a task's messages carry (Tasks, "Associating Task-Related
	// Messages": its elicitations too).
	related := mcp.Meta{relatedTask: map[string]any{"taskId": p.TaskID}}
	res, err := s.await(ctx, ss, p.TaskID, awaiting{meta: related, asked: map[string]bool{}})
	if err != nil {
		return nil, err
	}
	if res.Content == nil {
		res.Content = []mcp.Content{}
	}
	res.Meta = related
	return res, nil
}

// cancelTask answers tasks/cancel: it asks the run to stop. A finished
// run's task cannot be cancelled (-32602).
func (s *session) cancelTask(ctx context.Context, _ *mcp.ServerSession, p *taskIDParams) (*taskResult, error) {
	t, err := s.task(ctx, p)
	if err != nil {
		return nil, err
	}
	switch t.Status {
	case TaskCompleted, TaskFailed, TaskCancelled:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Cannot cancel task: already in terminal status '" + t.Status + "'"}
	}
	if err := s.h.Runs.Service.Cancel(ctx, p.TaskID); err != nil {
		if errors.Is(err, runs.ErrNotFound) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Cannot cancel task: it has already finished"}
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "cannot cancel run " + p.TaskID + ": " + err.Error()}
	}
	t.Status, t.StatusMessage = TaskCancelled, "cancellation requested"
	t.LastUpdatedAt = time.Now().UTC().Format(time.RFC3339Nano)
	return &taskResult{Task: t}, nil
}

// listPage is how many runs tasks/list reads at once.
const listPage = 50

// listTasks answers tasks/list: the principal's runs, whichever door
// started them (tasks/get takes any of them too), newest open ones first
// (as GET /v1/runs lists them). The cursor is the visibility page token,
// sealed for this principal.
func (s *session) listTasks(ctx context.Context, _ *mcp.ServerSession, p *listParams) (*listResult, error) {
	if !runs.LiteralOK(s.p.Name) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "your runs cannot be listed: your principal's name cannot be matched by a visibility query"}
	}
	filter := runs.Filter{Owner: s.p.Name}
	query := filter.Query()
	var token []byte
	if p != nil && p.Cursor != "" {
		var ok bool
		if token, ok = web.OpenPageToken(query, p.Cursor); !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "cursor: not a cursor this server returned to you"}
		}
	}
	page, err := s.h.Runs.Service.List(ctx, filter, listPage, token)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "cannot list runs: " + err.Error()}
	}
	out := &listResult{Tasks: []Task{}}
	for _, e := range page.Runs {
		status := runweb.StatusOf(e.Attrs[contract.SearchAttrStatus.GetName()], e)
		out.Tasks = append(out.Tasks, taskOf(e.ID, status, contract.RunState{}, e))
	}
	if len(page.Next) > 0 {
		out.NextCursor = web.SealPageToken(query, page.Next)
	}
	return out, nil
}
