package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"unicode/utf8"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/internal/tools"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
)

// ToolRequest is one tool call to run.
type ToolRequest struct {
	Call longhaul.ToolCall `json:"call"`
	// Scope lists the tools the calling agent, skill or step may use. A call
	// outside it is refused here, whatever the model or the plan says.
	Scope []string `json:"scope"`
	// After is the offset of the call's tool_start event: its progress
	// belongs after it.
	After int64 `json:"after,omitempty"`
}

// ToolResponse is a tool's result as the model will read it.
type ToolResponse struct {
	Content   string `json:"content"`
	Truncated bool   `json:"truncated,omitempty"`
	// Ref names the whole result in the store when Content is an excerpt.
	Ref string `json:"ref,omitempty"`
}

// CallTool runs one tool call. It refuses a tool outside the scope and
// arguments that do not match the tool's schema without running anything
// (non-retryable errors); failures of the tool itself are retryable, and the
// workflow feeds the final error back to the model. The idempotency key is the
// workflow id and tool call id, the same on every attempt.
func (a *Activities) CallTool(ctx context.Context, req ToolRequest) (ToolResponse, error) {
	info := activity.GetInfo(ctx)
	name := req.Call.Name
	if !slices.Contains(req.Scope, name) {
		return ToolResponse{}, nonRetryable(ErrTypeToolRefused, fmt.Errorf("tool %q is not allowed here (allowed: %v)", name, req.Scope))
	}
	t, ok := a.tools.Get(name)
	if !ok {
		return ToolResponse{}, nonRetryable(ErrTypeToolRefused, fmt.Errorf("unknown tool %q", name))
	}
	args := json.RawMessage(req.Call.Arguments)
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if err := a.tools.Validate(name, args); err != nil {
		return ToolResponse{}, nonRetryable(ErrTypeToolRefused, err)
	}
	stopBeat := a.heartbeat(ctx)
	defer stopBeat()
	res, err := t.Call(ctx, tools.Call{
		ID:             req.Call.ID,
		IdempotencyKey: info.WorkflowExecution.ID + "/" + req.Call.ID,
		Arguments:      args,
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
			return ToolResponse{}, nonRetryable(ErrTypeToolRefused, err)
		}
		if errors.Is(err, tools.ErrPermanent) {
			// The same call would fail the same way: tell the model now.
			return ToolResponse{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("tool %s failed: %v", name, err), ErrTypeToolFailed, err)
		}
		return ToolResponse{}, toolFailed(name, err)
	}
	return a.toolResponse(ctx, info.WorkflowExecution.ID, req.Call, res)
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
	r := []rune(res.Content)
	content := string(r[:a.MaxToolOutput]) + fmt.Sprintf(
		"\n\n[output cut: %d of %d characters shown; the whole output is stored as %s]", a.MaxToolOutput, len(r), ref)
	return ToolResponse{Content: content, Truncated: true, Ref: ref}, nil
}

// toolTarget names what a call acts on: the tool's own answer when it is a
// tools.Targeter, else the first of the common argument names.
func (a *Activities) toolTarget(name, args string) string {
	if t, ok := a.tools.Get(name); ok {
		if tg, ok := t.(tools.Targeter); ok {
			return shorten(tg.Target(json.RawMessage(args)), 60)
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
		return shorten(s, 60)
	}
	return ""
}

func shorten(s string, max int) string {
	if r := []rune(s); len(r) > max {
		return string(r[:max]) + "…"
	}
	return s
}

// truncate cuts s to at most max characters and notes the cut.
func truncate(s string, max int) (string, bool) {
	if max <= 0 || utf8.RuneCountInString(s) <= max {
		return s, false
	}
	r := []rune(s)
	return string(r[:max]) + fmt.Sprintf("\n\n[output truncated: %d of %d characters shown]", max, len(r)), true
}
