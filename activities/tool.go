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
	"github.com/longhaul-dev/longhaul/internal/tools"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
)

// ToolRequest is one tool call to run.
type ToolRequest struct {
	Call longhaul.ToolCall `json:"call"`
	// Agent, and Skill when the call comes from a skill's own loop, say
	// whose call it is. CallTool reads what they may use from the catalog
	// the worker loaded, never from the request: a forged or stale request
	// (a checkpoint carried across continue-as-new, a workflow started by
	// hand) cannot widen it.
	Agent string `json:"agent"`
	Skill string `json:"skill,omitempty"`
	// Seq numbers the call among all the run's tool calls, from 1. The
	// workflow carries it across continue-as-new, so it is never reused;
	// the idempotency key is made of it (see IdempotencyKey).
	Seq int64 `json:"seq"`
	// Approval is the id of the input update with which a person approved
	// the call. A tool that requires approval runs only when that update is
	// recorded in the run's history as approving this call (see
	// ApprovalGrant).
	Approval string `json:"approval,omitempty"`
	// After is the offset of the call's tool_start event: its progress
	// belongs after it.
	After int64 `json:"after,omitempty"`
	// User is the run's user key and Chat its chat id: what the memory
	// tools are scoped by. The workflow sets them from its input, which the
	// API built from the authenticated principal; the model's arguments
	// never carry them.
	User string `json:"user,omitempty"`
	Chat string `json:"chat,omitempty"`
	// Principal is the run's user whole (role, groups, id, e-mail), what
	// allow: rules judge: CallTool refuses a tool they do not let the user
	// use, as it refuses one outside the scope. The workflow sets it from
	// its input; a request without it (a call scheduled before it existed)
	// is judged as the user key alone, with no role or groups.
	Principal *longhaul.User `json:"principal,omitempty"`
	// VectorStores are the run's vector stores (the agent's and the
	// request's): what document_search searches, as User. The workflow
	// sets them; the model's arguments never carry them.
	VectorStores []string `json:"vector_stores,omitempty"`
}

// who is the user a call's allow: rules judge.
func (r ToolRequest) who() longhaul.User {
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

// ToolResponse is a tool's result as the model will read it.
type ToolResponse struct {
	Content   string `json:"content"`
	Truncated bool   `json:"truncated,omitempty"`
	// Ref names the whole result in the store when Content is an excerpt.
	Ref string `json:"ref,omitempty"`
}

// CallTool runs one tool call. It refuses, without running anything
// (non-retryable errors), a tool the catalog does not give the request's
// agent or skill, a tool that requires approval without a recorded approval
// of this very call, and arguments that do not match the tool's schema;
// failures of the tool itself are retryable, and the workflow feeds the
// final error back to the model. The idempotency key is the same on every
// attempt (see IdempotencyKey).
func (a *Activities) CallTool(ctx context.Context, req ToolRequest) (_ ToolResponse, err error) {
	info := activity.GetInfo(ctx)
	name := req.Call.Name
	// A name the model made up is no label of its own.
	label := name
	if !a.tools.Has(name) {
		label = "unknown"
	}
	ctx, end := toolSpan(ctx, req.Call, label, a.toolTarget(name, req.Call.Arguments))
	defer func() { end(err) }()
	allowed, err := a.toolScope(req.Agent, req.Skill, req.who())
	if err != nil {
		return ToolResponse{}, nonRetryable(longhaul.ErrTypeToolRefused, err)
	}
	if !slices.Contains(allowed, name) {
		return ToolResponse{}, nonRetryable(longhaul.ErrTypeToolRefused, fmt.Errorf("tool %q is not allowed here (allowed: %v)", name, allowed))
	}
	if req.Seq <= 0 {
		// Without its number the call has no idempotency key of its own.
		return ToolResponse{}, nonRetryable(longhaul.ErrTypeToolRefused, fmt.Errorf("tool call %q has no sequence number", req.Call.ID))
	}
	t, ok := a.tools.Get(name)
	if !ok {
		return ToolResponse{}, nonRetryable(longhaul.ErrTypeToolRefused, fmt.Errorf("unknown tool %q", name))
	}
	if !access.ToolAllows(t, req.who()) {
		return ToolResponse{}, nonRetryable(longhaul.ErrTypeToolRefused, fmt.Errorf("tool %q is not allowed here (allow: rules, %s)", name, access.Describe(req.who())))
	}
	if tools.NeedsApproval(t) {
		if err := a.checkApproval(ctx, info.WorkflowExecution.ID, info.WorkflowExecution.RunID, req); err != nil {
			return ToolResponse{}, err
		}
	}
	args := json.RawMessage(req.Call.Arguments)
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if err := a.tools.Validate(name, args); err != nil {
		return ToolResponse{}, nonRetryable(longhaul.ErrTypeToolRefused, err)
	}
	stopBeat := a.heartbeat(ctx)
	defer stopBeat()
	res, err := t.Call(ctx, tools.Call{
		ID:             req.Call.ID,
		IdempotencyKey: IdempotencyKey(info.WorkflowExecution.ID, req.Seq),
		Arguments:      args,
		User:           req.User,
		Chat:           req.Chat,
		Run:            info.WorkflowExecution.ID,
		VectorStores:   req.VectorStores,
		Progress: func(message string, progress float64) {
			activity.RecordHeartbeat(ctx, progress)
			a.Bus.ToolStatus(info.WorkflowExecution.ID, req.After, longhaul.ToolStatusData{
				ToolCallID: req.Call.ID, Name: name, Message: message, Progress: progress,
			})
		},
	})
	if err != nil {
		if ctx.Err() != nil {
			return ToolResponse{}, ctx.Err()
		}
		if errors.Is(err, tools.ErrInvalidArguments) {
			return ToolResponse{}, nonRetryable(longhaul.ErrTypeToolRefused, err)
		}
		if errors.Is(err, tools.ErrPermanent) {
			// The same call would fail the same way: tell the model now.
			return ToolResponse{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("tool %s failed: %v", name, err), longhaul.ErrTypeToolFailed, err)
		}
		return ToolResponse{}, toolFailed(name, err)
	}
	return a.toolResponse(ctx, info.WorkflowExecution.ID, req.Call, res)
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
// grant of this call. Without one the call is refused.
func (a *Activities) checkApproval(ctx context.Context, workflowID, runID string, req ToolRequest) error {
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
	if res.Approved == nil || *res.Approved != contract.GrantFor(req.Seq, req.Call) {
		return nonRetryable(longhaul.ErrTypeToolRefused, fmt.Errorf("tool %q needs a person's approval: input %q did not approve this call", name, req.Approval))
	}
	return nil
}

// toolResponse bounds a result for the model. A longer one is cut; with a
// store, the whole of it is kept there first and the excerpt says how to
// find it, so history holds the excerpt only.
func (a *Activities) toolResponse(ctx context.Context, run string, call longhaul.ToolCall, res tools.Result) (ToolResponse, error) {
	if a.MaxToolOutput <= 0 || utf8.RuneCountInString(res.Content) <= a.MaxToolOutput {
		return ToolResponse{Content: res.Content, Truncated: res.Truncated}, nil
	}
	if a.Blobs == nil {
		content, _ := truncate(res.Content, a.MaxToolOutput)
		return ToolResponse{Content: content, Truncated: true}, nil
	}
	ref, err := a.Blobs.Put(ctx, store.Blob{Run: run, Kind: "tool_output", Name: call.ID, Data: []byte(res.Content)})
	if err != nil {
		if errors.Is(err, store.ErrTooLarge) {
			content, _ := truncate(res.Content, a.MaxToolOutput)
			return ToolResponse{Content: content, Truncated: true}, nil
		}
		return ToolResponse{}, fmt.Errorf("store the output of %s: %w", call.Name, err)
	}
	content := textcut.Runes(res.Content, a.MaxToolOutput) + fmt.Sprintf(
		"\n\n[output cut: %d of %d characters shown; the whole output is stored as %s]", a.MaxToolOutput, utf8.RuneCountInString(res.Content), ref)
	return ToolResponse{Content: content, Truncated: true, Ref: ref}, nil
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
