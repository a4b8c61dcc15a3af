package mcpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/api/runweb"
	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// arguments are an agent tool's arguments (inputSchema).
type arguments struct {
	Question string `json:"question"`
}

// start starts the run a tools/call of agent asks for, through the gate,
// and returns its id.
func (s *session) start(ctx context.Context, agent string, raw json.RawMessage) (string, error) {
	var args arguments
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if len(raw) == 0 || dec.Decode(&args) != nil || strings.TrimSpace(args.Question) == "" {
		return "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `arguments: must be {"question": "<a non-empty string>"}`}
	}
	r := runs.Request{
		ID: runs.NewRunID(), Agent: agent, User: s.p.User, Door: runs.DoorMCP,
		Messages: []longhaul.Message{{Role: longhaul.RoleUser, Content: args.Question}},
		// Nobody reads the run's text as it comes: progress reports durable
		// events, and the answer is read from the run's state.
		Quiet: true,
	}
	id, err := runweb.Start(ctx, s.h.Gate, r)
	if err != nil {
		return "", rpcError(err)
	}
	return id, nil
}

// callTool answers a plain tools/call: it starts the run and answers with
// its answer when it ends. On the stateless revision, a call that names a
// run as its requestState is the retry of one whose run asked for an
// approval (approvalInput): it hands the run the answer and follows it on.
func (s *session) callTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	release, err := s.stream()
	if err != nil {
		return nil, err
	}
	defer release()
	o := awaiting{token: req.Params.GetProgressToken(), asked: map[string]bool{}}
	// The stateless revision asks by input requests a client that can
	// elicit, as its request's _meta says.
	caps := req.ClientCapabilities()
	o.inputRequests = s.modern && caps != nil && caps.Elicitation != nil
	id := req.Params.RequestState
	if s.modern && id != "" {
		err = s.answer(ctx, id, req.Params.InputResponses, o.asked)
	} else {
		id, err = s.start(ctx, req.Params.Name, req.Params.Arguments)
	}
	if err != nil {
		return nil, err
	}
	return s.await(ctx, req.Session, id, o)
}

// awaiting is how await follows a run.
type awaiting struct {
	// token is the progress token, if any.
	token any
	// meta is the _meta of an elicitation (a task's related-task key).
	meta mcp.Meta
	// asked are the approvals not to ask for (asked, or answered).
	asked map[string]bool
	// inputRequests asks for an approval as the call's answer
	// (approvalInput) rather than by elicitation.
	inputRequests bool
}

// answer hands run id, the caller's own (any other is not found), the
// answer among responses to the approval it waits for, as tasks/update
// and an elicitation decide it; an approval decided is marked in asked,
// not to be asked again while the run takes it. Answers to any other
// key, an approval already decided or never asked, are ignored (as the
// Tasks extension's tasks.md, "Task Update Requests", allows).
func (s *session) answer(ctx context.Context, id string, responses mcp.InputResponseMap, asked map[string]bool) error {
	w, err := s.waiting(ctx, id)
	if err != nil || w == nil {
		return err
	}
	res, ok := responses[approvalKey(w.ToolCallID)].(*mcp.ElicitResult)
	if ok && (res.Action == "accept" || res.Action == "decline") {
		s.decide(ctx, id, res)
		asked[w.ToolCallID] = true
	}
	return nil
}

// approvalInput asks, on the stateless revision (which has no requests
// from server to client), for the approval of run id's tool call as a
// multi-round-trip answer (SEP-2322, the SDK's CallToolResult.InputRequests):
// the client calls again with its answer in inputResponses and the run's
// id as requestState.
func approvalInput(id, call string, a longhaul.ApprovalRequiredData) *mcp.CallToolResult {
	ask := approvalParams(id, a.Name, a.Arguments, nil)
	ask.Mode = "form"
	return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{approvalKey(call): ask}, RequestState: id}
}

// stream takes one of the principal's open streams (LONGHAUL_MAX_STREAMS)
// for a call that answers when its run ends, as GET /v1/runs/{id}/events
// does.
func (s *session) stream() (func(), error) {
	release, err := runweb.Stream(s.h.Gate, s.p.Name)
	if err != nil {
		return nil, rpcError(err)
	}
	return release, nil
}

// await follows run id to its end and answers with its tool result. With a
// progress token, each tool call, step and model answer of the run is a
// progress notification; a wait for an approval not yet asked is an
// elicitation when the client can elicit, or with o.inputRequests the
// call's answer (approvalInput).
func (s *session) await(ctx context.Context, ss *mcp.ServerSession, id string, o awaiting) (*mcp.CallToolResult, error) {
	f := s.h.Runs.Service.Follow(id)
	defer f.Release()
	pending := map[string]longhaul.ApprovalRequiredData{}
	progress := 0.0
	for b, err := range runs.Batches(ctx, f, runs.Cursor{}, nil) {
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "lost the events of run " + id + ": " + err.Error()}
		}
		for _, it := range b.Items {
			track(pending, it.Event)
			if msg := progressMessage(it.Event); msg != "" && o.token != nil {
				progress++
				_ = ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: o.token, Progress: progress, Message: msg})
			}
		}
		if b.Done {
			break
		}
		for call, a := range pending {
			switch {
			case o.asked[call]:
			case o.inputRequests:
				return approvalInput(id, call, a), nil
			case canElicit(ss):
				o.asked[call] = true
				s.elicit(ctx, ss, id, a, o.meta)
			}
		}
	}
	return s.result(ctx, id)
}

// track keeps the approvals a run waits for: asked for and not yet
// decided.
func track(pending map[string]longhaul.ApprovalRequiredData, e longhaul.Event) {
	switch e.Type {
	case longhaul.EventApprovalRequired:
		var a longhaul.ApprovalRequiredData
		if e.Decode(&a) == nil {
			pending[a.ToolCallID] = a
		}
	case longhaul.EventApproval:
		var a longhaul.ApprovalData
		if e.Decode(&a) == nil {
			delete(pending, a.ToolCallID)
		}
	}
}

// progressMessage is what a progress notification says of e; empty for an
// event that is not progress.
func progressMessage(e longhaul.Event) string {
	switch e.Type {
	case longhaul.EventToolStart:
		var d longhaul.ToolStartData
		if e.Decode(&d) == nil {
			return "calling tool " + d.Name
		}
	case longhaul.EventStepStart:
		return "step started"
	case longhaul.EventStepResult:
		return "step finished"
	case longhaul.EventContent:
		return "the model answered"
	case longhaul.EventApprovalRequired:
		var d longhaul.ApprovalRequiredData
		if e.Decode(&d) == nil {
			return "waiting for approval of tool " + d.Name
		}
	}
	return ""
}

// canElicit reports whether ss's client declared the elicitation
// capability (MCP 2025-11-25, Elicitation, "Capabilities").
func canElicit(ss *mcp.ServerSession) bool {
	p := ss.InitializeParams()
	return p != nil && p.Capabilities != nil && p.Capabilities.Elicitation != nil
}

// approvalSchema is what an approval's elicitation asks for.
var approvalSchema = json.RawMessage(`{"type":"object","properties":{"approve":{"type":"boolean","title":"Approve","description":"Let the agent run the tool call."}},"required":["approve"]}`)

// elicit asks the client to approve the tool call run id waits for, and
// hands its answer to the run as POST /v1/runs/{id}/input would. Accepting
// with approve true approves, with false or declining denies; a client
// that cancels leaves the run waiting.
func (s *session) elicit(ctx context.Context, ss *mcp.ServerSession, id string, a longhaul.ApprovalRequiredData, meta mcp.Meta) {
	res, err := ss.Elicit(ctx, approvalParams(id, a.Name, a.Arguments, meta))
	if err != nil {
		s.h.Log.Debug("mcp elicitation got no decision", "run", id, "error", err)
		return
	}
	s.decide(ctx, id, res)
}

// result is the tool result of finished run id: its answer, or its
// failure (isError).
func (s *session) result(ctx context.Context, id string) (*mcp.CallToolResult, error) {
	st, info, err := s.h.Runs.ReadRun(ctx, id, s.p.Name)
	if err != nil {
		return nil, rpcError(err)
	}
	res := &mcp.CallToolResult{}
	switch runweb.StatusOf(st.Status, info) {
	case contract.StatusCompleted:
		out, err := s.h.Runs.Service.Result(ctx, id)
		if err != nil {
			return nil, rpcError(runweb.RunError(err))
		}
		res.Content = []mcp.Content{&mcp.TextContent{Text: out.Content}}
	case contract.StatusCancelled:
		res.IsError = true
		res.Content = []mcp.Content{&mcp.TextContent{Text: "run " + id + " was cancelled"}}
	default:
		msg := st.Error
		if msg == "" {
			msg = "the run ended without finishing: " + info.Status
		}
		res.IsError = true
		res.Content = []mcp.Content{&mcp.TextContent{Text: "run " + id + " failed: " + msg}}
	}
	return res, nil
}

// rpcError is err in JSON-RPC's words (MCP 2025-11-25, Tasks, "Protocol
// Errors"): what the caller asked wrongly (an unknown agent or task, bad
// input, a finished run) is -32602 invalid params; the rest -32603, with
// Longhaul's error type and code in data.
func rpcError(err error) error {
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) {
		return err
	}
	var we *web.Error
	if !errors.As(err, &we) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	data, _ := json.Marshal(map[string]any{"status": we.Status, "type": we.Type, "code": we.Code})
	code := int64(jsonrpc.CodeInternalError)
	if we.Status == 400 || we.Status == 404 || we.Status == 409 || we.Status == 413 {
		code = jsonrpc.CodeInvalidParams
	}
	return &jsonrpc.Error{Code: code, Message: we.Message, Data: data}
}
