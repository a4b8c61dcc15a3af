package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/access"
	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/internal/textcut"
	"github.com/longhaul-dev/longhaul/internal/toolargs"
	"github.com/longhaul-dev/longhaul/internal/tools"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
)

// toolUser is the user a tool call's allow: rules judge.
func toolUser(r contract.ToolRequest) longhaul.User {
	if r.Principal != nil {
		return *r.Principal
	}
	return longhaul.User{Principal: r.User}
}

// IdempotencyKey is the key a tool call is made with: the run's workflow id
// (which continue-as-new keeps) and the call's sequence number (which it
// never resets), the same on every attempt and never shared by two calls,
// whatever ids the model gave its calls.
func IdempotencyKey(workflowID string, seq int64) string {
	return workflowID + "/call-" + strconv.FormatInt(seq, 10)
}

// UpdateReader reads the recorded outcome of a workflow update;
// client.Client is one.
type UpdateReader interface {
	GetWorkflowUpdateHandle(client.GetWorkflowUpdateHandleOptions) client.WorkflowUpdateHandle
}

// CallTool runs one tool call. It refuses, without running anything
// (non-retryable errors), a tool the catalog does not give the request's
// agent or skill, a tool that requires approval without a recorded approval
// of this very call, and arguments that do not match the tool's schema;
// failures of the tool itself are retryable, and the workflow feeds the
// final error back to the model. The idempotency key is the same on every
// attempt (see IdempotencyKey).
func (a *Activities) CallTool(ctx context.Context, req contract.ToolRequest) (_ contract.ToolResponse, err error) {
	info := activity.GetInfo(ctx)
	a.progress(req.Progress)
	name := req.Call.Name
	// A name the model made up is no label of its own.
	label := name
	if !a.tools.Has(name) {
		label = "unknown"
	}
	ctx, end := toolSpan(ctx, req.Call, label, a.toolTarget(name, req.Call.Arguments))
	defer func() { end(err) }()
	t, err := a.allowedTool(req)
	if err != nil {
		return contract.ToolResponse{}, err
	}
	if tools.NeedsApproval(t) {
		if err := a.checkApproval(ctx, info.WorkflowExecution.ID, info.WorkflowExecution.RunID, req); err != nil {
			return contract.ToolResponse{}, err
		}
	}
	checked := toolargs.Check(req.Call.Arguments)
	if checked.Err != nil {
		return contract.ToolResponse{}, nonRetryable(longhaul.ErrTypeToolRefused, errors.New(toolargs.Refusal(name, req.Call.Arguments, checked.Err)))
	}
	args := json.RawMessage(checked.Arguments)
	if err := a.tools.Validate(name, args); err != nil {
		return contract.ToolResponse{}, nonRetryable(longhaul.ErrTypeToolRefused, err)
	}
	// A plan step's workflow works for its run (stepRun): the stream
	// clients follow, the outputs kept. Its idempotency keys stay its own.
	run := stepRun(info)
	stopBeat := a.heartbeat(ctx)
	defer stopBeat()
	res, err := t.Call(ctx, tools.Call{
		ID:             req.Call.ID,
		IdempotencyKey: IdempotencyKey(info.WorkflowExecution.ID, req.Seq),
		Arguments:      args,
		User:           req.User,
		Chat:           req.Chat,
		Run:            run,
		VectorStores:   req.VectorStores,
		Progress: func(message string, progress float64) {
			activity.RecordHeartbeat(ctx, progress)
			a.Bus.ToolStatus(run, req.After, longhaul.ToolStatusData{
				ToolCallID: req.Call.ID, Name: name, Message: message, Progress: progress,
			})
		},
	})
	if err != nil {
		if ctx.Err() != nil {
			return contract.ToolResponse{}, ctx.Err()
		}
		if errors.Is(err, tools.ErrInvalidArguments) {
			return contract.ToolResponse{}, nonRetryable(longhaul.ErrTypeToolRefused, err)
		}
		if errors.Is(err, tools.ErrPermanent) {
			// The same call would fail the same way: tell the model now.
			return contract.ToolResponse{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("tool %s failed: %v", name, err), longhaul.ErrTypeToolFailed, err)
		}
		if info.Attempt >= contract.ToolAttempts {
			return contract.ToolResponse{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("tool %s failed: %v", name, err), longhaul.ErrTypeToolFailed, err)
		}
		return contract.ToolResponse{}, toolFailed(name, err)
	}
	resp, err := a.toolResponse(ctx, run, req.Call, res)
	if err == nil && res.Connect != nil && run == info.WorkflowExecution.ID {
		// A plan step's workflow does not wait for a connection; its
		// run's tool result tells the model, as a chat's does.
		resp.Connect = &contract.Connect{Server: res.Connect.Server, URL: res.Connect.URL}
	}
	return resp, err
}

// allowedTool is the tool req calls, when the call may run it: the tool
// is in the scope of the call's agent or skill, its allow: rules let the
// call's user use it, and the call has its number (its idempotency key);
// otherwise a refusal the model reads.
func (a *Activities) allowedTool(req contract.ToolRequest) (tools.Tool, error) {
	name := req.Call.Name
	allowed, err := a.toolScope(req.Agent, req.Skill, toolUser(req))
	if err != nil {
		return nil, nonRetryable(longhaul.ErrTypeToolRefused, err)
	}
	if !slices.Contains(allowed, name) {
		return nil, nonRetryable(longhaul.ErrTypeToolRefused, fmt.Errorf("tool %q is not allowed here (allowed: %v)", name, allowed))
	}
	if req.Seq <= 0 {
		// Without its number the call has no idempotency key of its own.
		return nil, nonRetryable(longhaul.ErrTypeToolRefused, fmt.Errorf("tool call %q has no sequence number", req.Call.ID))
	}
	t, ok := a.tools.Get(name)
	if !ok {
		return nil, nonRetryable(longhaul.ErrTypeToolRefused, fmt.Errorf("unknown tool %q", name))
	}
	if !access.ToolAllows(t, toolUser(req)) {
		return nil, nonRetryable(longhaul.ErrTypeToolRefused, fmt.Errorf("tool %q is not allowed here (allow: rules, %s)", name, access.Describe(toolUser(req))))
	}
	return t, nil
}

// toolScope is the tools the catalog gives agent, or its skill when skill
// is set, as far as their allow: rules let user use them: what a call made
// for them may run.
func (a *Activities) toolScope(agent, skill string, user longhaul.User) ([]string, error) {
	ag, ok := a.catalog.AgentFor(agent, user)
	if !ok {
		return nil, fmt.Errorf("unknown agent %q", agent)
	}
	if skill == "" {
		return a.catalog.AgentToolsFor(ag, user), nil
	}
	s, ok := a.catalog.Skill(skill)
	if !ok || !a.catalog.SkillAllows(ag, skill, user) {
		return nil, fmt.Errorf("agent %q has no skill %q", agent, skill)
	}
	return s.Tools, nil
}

// checkApproval checks that the run's history records a person's approval
// of the call: the input update req.Approval names completed with the
// grant of this call. A call approved through an ancestor run
// (req.ApprovalWorkflow) is checked in that run's history, whose grant
// must name this run. Without one the call is refused.
func (a *Activities) checkApproval(ctx context.Context, workflowID, runID string, req contract.ToolRequest) error {
	name := req.Call.Name
	if req.Approval == "" {
		return nonRetryable(longhaul.ErrTypeToolRefused, fmt.Errorf("tool %q needs a person's approval and the call has none", name))
	}
	if a.Updates == nil {
		return nonRetryable(longhaul.ErrTypeToolRefused, fmt.Errorf("tool %q needs a person's approval and this worker cannot read approvals (no Temporal client)", name))
	}
	var res struct {
		Approved *contract.ApprovalGrant `json:"approved"`
	}
	want := contract.GrantFor(req.Seq, req.Call)
	if req.ApprovalWorkflow != "" {
		// Approved through an ancestor run, which recorded the update and
		// granted this run's call.
		want.Run = workflowID
		workflowID, runID = req.ApprovalWorkflow, req.ApprovalRunID
	}
	h := a.Updates.GetWorkflowUpdateHandle(client.GetWorkflowUpdateHandleOptions{
		WorkflowID: workflowID, RunID: runID, UpdateID: req.Approval,
	})
	if err := h.Get(ctx, &res); err != nil {
		var nf *serviceerror.NotFound
		var appErr *temporal.ApplicationError
		if errors.As(err, &nf) || errors.As(err, &appErr) {
			return nonRetryable(longhaul.ErrTypeToolRefused, fmt.Errorf("tool %q needs a person's approval: input %q approved nothing", name, req.Approval))
		}
		return fmt.Errorf("read the approval of %s: %w", name, err)
	}
	if res.Approved == nil || *res.Approved != want {
		return nonRetryable(longhaul.ErrTypeToolRefused, fmt.Errorf("tool %q needs a person's approval: input %q did not approve this call", name, req.Approval))
	}
	return nil
}

// toolResponse bounds a result for the model. A longer one is cut; with a
// store, the whole of it is kept there first and the excerpt says how to
// find it, so history holds the excerpt only.
func (a *Activities) toolResponse(ctx context.Context, run string, call longhaul.ToolCall, res tools.Result) (contract.ToolResponse, error) {
	if a.MaxToolOutput <= 0 || utf8.RuneCountInString(res.Content) <= a.MaxToolOutput {
		return contract.ToolResponse{Content: res.Content, Truncated: res.Truncated}, nil
	}
	if a.Blobs == nil {
		content, _ := truncate(res.Content, a.MaxToolOutput)
		return contract.ToolResponse{Content: content, Truncated: true}, nil
	}
	ref, err := a.Blobs.Put(ctx, store.Blob{Run: run, Kind: "tool_output", Name: call.ID, Data: []byte(res.Content)})
	if err != nil {
		if errors.Is(err, store.ErrTooLarge) {
			content, _ := truncate(res.Content, a.MaxToolOutput)
			return contract.ToolResponse{Content: content, Truncated: true}, nil
		}
		return contract.ToolResponse{}, fmt.Errorf("store the output of %s: %w", call.Name, err)
	}
	content := textcut.Runes(res.Content, a.MaxToolOutput) + fmt.Sprintf(
		"\n\n[output cut: %d of %d characters shown; the whole output is stored as %s]", a.MaxToolOutput, utf8.RuneCountInString(res.Content), ref)
	return contract.ToolResponse{Content: content, Truncated: true, Ref: ref}, nil
}

// toolTarget names what a call acts on: the tool's own answer when it is a
// tools.Targeter, else the first of the common argument names.
func (a *Activities) toolTarget(name, args string) string {
	if t, ok := a.tools.Get(name); ok {
		if tg, ok := t.(tools.Targeter); ok {
			return textcut.Ellipsis(tg.Target(json.RawMessage(args)), 61)
		}
	}
	var m map[string]any
	if json.Unmarshal([]byte(args), &m) != nil {
		return ""
	}
	for _, k := range []string{"url", "path", "query", "q", "name", "id"} {
		s, ok := m[k].(string)
		if !ok || s == "" {
			continue
		}
		if u, err := url.Parse(s); k == "url" && err == nil && u.Host != "" {
			return u.Host
		}
		return textcut.Ellipsis(s, 61)
	}
	return ""
}

// truncate cuts s to at most n characters and notes the cut.
func truncate(s string, n int) (string, bool) {
	if n <= 0 || utf8.RuneCountInString(s) <= n {
		return s, false
	}
	return textcut.Runes(s, n) + fmt.Sprintf("\n\n[output truncated: %d of %d characters shown]", n, utf8.RuneCountInString(s)), true
}

// stepRun is the agent run the activity works for: its workflow's own, or,
// in a plan step's workflow, the run whose step it is (contract.StepRun).
func stepRun(info activity.Info) string {
	typ := ""
	if info.WorkflowType != nil {
		typ = info.WorkflowType.Name
	}
	return contract.StepRun(typ, info.WorkflowExecution.ID)
}
