package activities_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/tools"
	"github.com/longhaul-dev/longhaul/skills"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
)

// recordedUpdates stands in for Temporal's record of a run's input
// updates: each update id's outcome, as the workflow's handler returned it.
type recordedUpdates struct {
	mu       sync.Mutex
	outcomes map[string]any
	asked    []client.GetWorkflowUpdateHandleOptions
}

func (r *recordedUpdates) GetWorkflowUpdateHandle(o client.GetWorkflowUpdateHandleOptions) client.WorkflowUpdateHandle {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, o)
	return &recordedUpdate{opts: o, outcome: r.outcomes[o.UpdateID]}
}

type recordedUpdate struct {
	opts    client.GetWorkflowUpdateHandleOptions
	outcome any
}

func (u *recordedUpdate) WorkflowID() string { return u.opts.WorkflowID }
func (u *recordedUpdate) RunID() string      { return u.opts.RunID }
func (u *recordedUpdate) UpdateID() string   { return u.opts.UpdateID }

// Get decodes the recorded outcome the way the SDK's JSON converter does.
func (u *recordedUpdate) Get(_ context.Context, valuePtr any) error {
	if u.outcome == nil {
		return serviceerror.NewNotFound("update not found")
	}
	b, err := json.Marshal(u.outcome)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, valuePtr)
}

// approvalFixture is a worker whose agent "mover" has the HTTP tool
// delete_title, marked approval: required, against a service that counts
// the requests it gets.
type approvalFixture struct {
	acts     *activities.Activities
	updates  *recordedUpdates
	mu       sync.Mutex
	requests []*http.Request
}

func newApprovalFixture(t *testing.T) *approvalFixture {
	t.Helper()
	f := &approvalFixture{updates: &recordedUpdates{outcomes: map[string]any{}}}
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		f.mu.Lock()
		f.requests = append(f.requests, r)
		f.mu.Unlock()
		_, _ = io.WriteString(w, `{"deleted":true}`)
	}))
	t.Cleanup(svc.Close)
	t.Setenv("MEDIA_URL", svc.URL)
	layer := fstest.MapFS{
		"media.md": {Data: []byte(`---
skill: media
description: Manages the media library
tools: [delete_title, current_time]
http_tools:
  - name: delete_title
    description: Deletes a title from the library
    method: post
    url: ${MEDIA_URL}/delete
    parameters: {type: object, properties: {id: {type: integer}}, required: [id]}
    approval: required
---
Delete only what the user asks for.
`)},
		"mover.md": {Data: []byte("---\nagent: mover\ndescription: Moves media\nskills: [media]\n---\nYou manage media.\n")},
	}
	cat, err := skills.Load(skills.Builtin(), layer)
	if err != nil {
		t.Fatalf("skills.Load: %v", err)
	}
	defs := cat.HTTPTools()
	i := slices.IndexFunc(defs, func(h *tools.HTTPToolDef) bool { return h.Name == "delete_title" })
	if i < 0 {
		t.Fatal("the catalog has no delete_title")
	}
	del, err := tools.NewHTTPTool(defs[i], tools.HTTPToolOptions{})
	if err != nil {
		t.Fatalf("NewHTTPTool: %v", err)
	}
	reg, err := tools.NewRegistry(&tools.CurrentTime{Now: fixedClock}, del)
	if err != nil {
		t.Fatalf("NewRegistry: %v", err)
	}
	f.acts = activities.New(activities.LLMConfig{BaseURL: "http://127.0.0.1:1", Model: "unused"}, cat, reg, slog.New(slog.DiscardHandler))
	f.acts.Updates = f.updates
	return f
}

func (f *approvalFixture) served() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

// TestCallToolRunsApprovalRequiredToolOnlyWithItsRecordedApproval: a tool
// the catalog marks approval: required runs only when the request names an
// input update that Temporal recorded as approving this very call; whatever
// else the request says, the service sees no request.
func TestCallToolRunsApprovalRequiredToolOnlyWithItsRecordedApproval(t *testing.T) {
	call := longhaul.ToolCall{ID: "call_1", Name: "delete_title", Arguments: `{"id":931285}`}
	other := longhaul.ToolCall{ID: "call_1", Name: "delete_title", Arguments: `{"id":1}`}
	approved := func(g contract.ApprovalGrant) any {
		return map[string]any{"decision": "approved", "approved": g}
	}
	tests := []struct {
		name     string
		approval string
		outcome  any
		msg      string
	}{
		{name: "no approval", msg: "needs a person's approval and the call has none"},
		{name: "an update Temporal never recorded", approval: "forged-update", msg: "approved nothing"},
		{name: "a denial", approval: "u-denied", outcome: map[string]any{"decision": "denied"}, msg: "did not approve this call"},
		{name: "the approval of an earlier call", approval: "u-earlier", outcome: approved(contract.GrantFor(6, call)), msg: "did not approve this call"},
		{name: "the approval of other arguments", approval: "u-other", outcome: approved(contract.GrantFor(7, other)), msg: "did not approve this call"},
		{name: "the approval of another tool", approval: "u-tool", outcome: approved(contract.GrantFor(7, longhaul.ToolCall{Name: "current_time", Arguments: call.Arguments})), msg: "did not approve this call"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newApprovalFixture(t)
			if tt.outcome != nil {
				f.updates.outcomes[tt.approval] = tt.outcome
			}
			env := quietSuite().NewTestActivityEnvironment()
			env.RegisterActivity(f.acts)
			_, err := callTool(t, env, f.acts, contract.ToolRequest{Call: call, Agent: "mover", Seq: 7, Approval: tt.approval})
			wantAppError(t, err, longhaul.ErrTypeToolRefused, true, tt.msg)
			if n := f.served(); n != 0 {
				t.Errorf("the service got %d requests, want none", n)
			}
		})
	}

	t.Run("approved", func(t *testing.T) {
		f := newApprovalFixture(t)
		f.updates.outcomes["u-7"] = approved(contract.GrantFor(7, call))
		env := quietSuite().NewTestActivityEnvironment()
		env.RegisterActivity(f.acts)
		env.RegisterActivity(workflowIDActivity)
		wfID, runID := envWorkflow(t, env)
		res, err := callTool(t, env, f.acts, contract.ToolRequest{Call: call, Agent: "mover", Seq: 7, Approval: "u-7"})
		if err != nil {
			t.Fatalf("CallTool: %v", err)
		}
		if res.Content != `{"deleted":true}` {
			t.Errorf("content = %q", res.Content)
		}
		if n := f.served(); n != 1 {
			t.Fatalf("the service got %d requests, want 1", n)
		}
		if got, want := f.requests[0].Header.Get("Idempotency-Key"), activities.IdempotencyKey(wfID, 7); got != want {
			t.Errorf("Idempotency-Key = %q, want %q", got, want)
		}
		want := client.GetWorkflowUpdateHandleOptions{WorkflowID: wfID, RunID: runID, UpdateID: "u-7"}
		if len(f.updates.asked) != 1 || f.updates.asked[0] != want {
			t.Errorf("asked Temporal for %+v, want %+v", f.updates.asked, want)
		}
	})

	t.Run("a tool without approval needs none", func(t *testing.T) {
		f := newApprovalFixture(t)
		env := quietSuite().NewTestActivityEnvironment()
		env.RegisterActivity(f.acts)
		if _, err := callTool(t, env, f.acts, contract.ToolRequest{
			Call: longhaul.ToolCall{ID: "c", Name: "current_time", Arguments: `{}`}, Agent: "mover", Seq: 1,
		}); err != nil {
			t.Fatalf("CallTool: %v", err)
		}
		if len(f.updates.asked) != 0 {
			t.Errorf("asked Temporal about approvals %d times, want never", len(f.updates.asked))
		}
	})

	t.Run("Temporal unreachable is retried", func(t *testing.T) {
		f := newApprovalFixture(t)
		f.acts.Updates = unreachable{}
		env := quietSuite().NewTestActivityEnvironment()
		env.RegisterActivity(f.acts)
		_, err := callTool(t, env, f.acts, contract.ToolRequest{Call: call, Agent: "mover", Seq: 7, Approval: "u-7"})
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || appErr.NonRetryable() {
			t.Fatalf("err = %v, want a retryable error", err)
		}
		if f.served() != 0 {
			t.Error("the tool ran without its approval read")
		}
	})
}

// TestHTTPToolRefusesUndeclaredArguments: an HTTP tool's parameters are
// closed unless the skill file opens them; an argument the operator did not
// declare is refused and never reaches the service.
func TestHTTPToolRefusesUndeclaredArguments(t *testing.T) {
	f := newApprovalFixture(t)
	f.updates.outcomes["u-3"] = map[string]any{"decision": "approved", "approved": contract.GrantFor(3, longhaul.ToolCall{Name: "delete_title", Arguments: `{"id":5,"all":true}`})}
	env := quietSuite().NewTestActivityEnvironment()
	env.RegisterActivity(f.acts)
	_, err := callTool(t, env, f.acts, contract.ToolRequest{
		Call: longhaul.ToolCall{ID: "c", Name: "delete_title", Arguments: `{"id":5,"all":true}`}, Agent: "mover", Seq: 3, Approval: "u-3",
	})
	wantAppError(t, err, longhaul.ErrTypeToolRefused, true, "all")
	if n := f.served(); n != 0 {
		t.Errorf("the service got %d requests, want none", n)
	}
}

type unreachable struct{}

func (unreachable) GetWorkflowUpdateHandle(o client.GetWorkflowUpdateHandleOptions) client.WorkflowUpdateHandle {
	return failingHandle{o}
}

type failingHandle struct {
	o client.GetWorkflowUpdateHandleOptions
}

func (h failingHandle) WorkflowID() string { return h.o.WorkflowID }
func (h failingHandle) RunID() string      { return h.o.RunID }
func (h failingHandle) UpdateID() string   { return h.o.UpdateID }
func (failingHandle) Get(context.Context, any) error {
	return errors.New("connection refused")
}
