// Package agents runs agents that ask agents (agents: in an agent file)
// through the whole stack: an ask_ tool's call runs the asked agent as a
// child run, the parent's event stream shows the child's progress on the
// call, the parent answers with the child's answer, and cancelling the
// parent reaches the child.
package agents

import (
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/ssetest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/internal/testing/webtest"
	"github.com/longhaul-dev/longhaul/internal/wire"
	"go.temporal.io/sdk/temporal"
)

// layer is a concierge that asks a helper, which has the clock, and a
// vip agent that only admins may use.
var layer = fstest.MapFS{
	"concierge.md": {Data: []byte("---\nagent: concierge\ndescription: Answers by asking its helper\nagents: [helper, vip]\n---\nAsk the helper.\n")},
	"vip.md":       {Data: []byte("---\nagent: vip\ndescription: Serves admins\nallow: {roles: [admin]}\n---\nServe.\n")},
	"helper.md":    {Data: []byte("---\nagent: helper\ndescription: Knows the time\nskills: [clock]\n---\nYou tell the time.\n")},
}

var ann = map[string]string{"X-OpenWebUI-User-Id": "ann", "X-OpenWebUI-User-Name": "ann"}

func within(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// call sends a request to the API as who and decodes the answer's JSON
// into out (nil: none), failing unless the status is want.
func call(t *testing.T, ctx context.Context, env *testenv.Env, method, path string, body any, who map[string]string, want int, out any) {
	t.Helper()
	req := webtest.NewRequest(method, env.URL+path, body, who).WithContext(ctx)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s = %d %s, want %d", method, path, resp.StatusCode, b, want)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
	}
}

// events follows the run's event stream (GET /v1/runs/{id}/events) and
// hands each event to each in turn until each says stop or the stream
// ends; it returns whether the stream ended.
func events(t *testing.T, ctx context.Context, env *testenv.Env, run string, each func(longhaul.Event) (stop bool)) bool {
	t.Helper()
	req := webtest.NewRequest("GET", env.URL+"/v1/runs/"+run+"/events", nil, ann).WithContext(ctx)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("events of %s: %d", run, resp.StatusCode)
	}
	rd := ssetest.NewReader(resp.Body)
	for {
		f, err := rd.Next()
		if err == io.EOF {
			return true
		}
		if err != nil {
			t.Fatalf("events of %s: %v", run, err)
		}
		var e longhaul.Event
		if err := json.Unmarshal([]byte(f.Data), &e); err != nil {
			t.Fatalf("event %q: %v", f.Data, err)
		}
		if each(e) {
			return false
		}
	}
}

// startAsk starts ann's run of the concierge.
func startAsk(t *testing.T, ctx context.Context, env *testenv.Env) string {
	t.Helper()
	var created wire.RunCreated
	call(t, ctx, env, "POST", "/v1/runs", map[string]any{"agent": "concierge", "input": "What time is it? Ask the helper."}, ann, http.StatusAccepted, &created)
	return created.ID
}

// TestAskShowsChildProgress: the concierge asks the helper; the parent's
// stream shows the child's run on the call's tool_start and the child's
// work as tool_status events on the call; the call's output is the
// helper's answer, which the concierge's answer uses; the child run is
// ann's to read.
func TestAskShowsChildProgress(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Layers: []fs.FS{layer}})
	ctx := within(t, 2*time.Minute)
	followed := make(chan struct{})
	env.Model.Enqueue(
		llmtest.ToolCalls(llmtest.ToolCall{ID: "call_ask", Name: "ask_helper", Arguments: `{"question":"What time is it?"}`}),
		// The helper's first call waits until the test follows the
		// parent's stream: its later work shows there.
		llmtest.Func(func(llmtest.Request) llmtest.Reply {
			select {
			case <-followed:
			case <-ctx.Done():
			}
			return llmtest.ToolCalls(llmtest.ToolCall{ID: "call_clock", Name: "current_time", Arguments: `{}`})
		}),
		llmtest.Text("It is noon."),
		llmtest.Func(func(r llmtest.Request) llmtest.Reply {
			for _, m := range r.ToolResults() {
				if m.ToolCallID == "call_ask" && m.Content == "It is noon." {
					return llmtest.Text("The helper says: It is noon.")
				}
			}
			return llmtest.Text("The helper's answer never came.")
		}),
	)
	run := startAsk(t, ctx, env)
	var child string
	var statuses []string
	var output longhaul.ToolOutputData
	var done longhaul.DoneData
	ended := events(t, ctx, env, run, func(e longhaul.Event) bool {
		switch e.Type {
		case longhaul.EventToolStart:
			var d longhaul.ToolStartData
			if e.Decode(&d) == nil && d.Name == "ask_helper" {
				child = d.Run
				close(followed)
			}
		case longhaul.EventToolStatus:
			var d longhaul.ToolStatusData
			if e.Decode(&d) == nil && d.ToolCallID == "call_ask" && d.Name == "ask_helper" {
				statuses = append(statuses, d.Message)
			}
		case longhaul.EventToolOutput:
			_ = e.Decode(&output)
		case longhaul.EventDone:
			_ = e.Decode(&done)
		}
		return false
	})
	if !ended || done.Status != contract.StatusCompleted {
		t.Fatalf("stream ended %v, run %+v", ended, done)
	}
	if child != run+"-ask-1" {
		t.Fatalf("tool_start names the child %q, want %s-ask-1", child, run)
	}
	for _, want := range []string{"helper: calling current_time UTC", "helper: thinking (turn 2)"} {
		if !slices.Contains(statuses, want) {
			t.Errorf("the parent's stream shows %q, not %q", statuses, want)
		}
	}
	if output.Output != "It is noon." || output.Error {
		t.Errorf("the call's output %+v", output)
	}
	var got wire.Run
	call(t, ctx, env, "GET", "/v1/runs/"+run, nil, ann, http.StatusOK, &got)
	if got.Result != "The helper says: It is noon." {
		t.Errorf("the parent answered %q", got.Result)
	}
	call(t, ctx, env, "GET", "/v1/runs/"+child, nil, ann, http.StatusOK, &got)
	if got.Agent != "helper" || got.Status != contract.StatusCompleted || got.Result != "It is noon." {
		t.Errorf("the child run %+v", got)
	}
	// The parent's audit names the child on the call.
	var audit wire.Audit
	call(t, ctx, env, "GET", "/v1/runs/"+run+"/audit", nil, ann, http.StatusOK, &audit)
	if len(audit.ToolCalls) != 1 || audit.ToolCalls[0].Run != child || audit.ToolCalls[0].Result != "It is noon." {
		t.Errorf("audit's calls %+v", audit.ToolCalls)
	}
	// The child is ann's, as its parent: nobody else reads it.
	call(t, ctx, env, "GET", "/v1/runs/"+child, nil, map[string]string{"X-OpenWebUI-User-Id": "bob"}, http.StatusNotFound, nil)
}

// TestCancelParentCancelsChild: cancelling the parent (POST
// /v1/runs/{id}/cancel) while the helper works cancels the helper's run.
func TestCancelParentCancelsChild(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Layers: []fs.FS{layer}})
	ctx := within(t, 2*time.Minute)
	env.Model.Enqueue(
		llmtest.ToolCalls(llmtest.ToolCall{ID: "call_ask", Name: "ask_helper", Arguments: `{"question":"What time is it?"}`}),
		llmtest.Hang(), // the helper thinks until it is stopped
	)
	run := startAsk(t, ctx, env)
	var child string
	events(t, ctx, env, run, func(e longhaul.Event) bool {
		var d longhaul.ToolStartData
		if e.Type == longhaul.EventToolStart && e.Decode(&d) == nil {
			child = d.Run
		}
		return child != ""
	})
	// The helper's model call has begun.
	if err := env.Model.WaitRequests(ctx, 2); err != nil {
		t.Fatal(err)
	}
	call(t, ctx, env, "POST", "/v1/runs/"+run+"/cancel", nil, ann, http.StatusAccepted, nil)
	if err := env.Client.GetWorkflow(ctx, child, "").Get(ctx, nil); !temporal.IsCanceledError(err) {
		t.Fatalf("the child ended with %v, want cancelled", err)
	}
	var got wire.Run
	call(t, ctx, env, "GET", "/v1/runs/"+child, nil, ann, http.StatusOK, &got)
	if got.Status != contract.StatusCancelled {
		t.Errorf("the child run is %s, want cancelled", got.Status)
	}
	if err := env.Client.GetWorkflow(ctx, run, "").Get(ctx, nil); !temporal.IsCanceledError(err) {
		t.Fatalf("the parent ended with %v, want cancelled", err)
	}
	if !strings.HasPrefix(child, run) {
		t.Errorf("child %s is not named for its parent %s", child, run)
	}
}

// TestAskHonoursAllow: ann may not use the vip agent (allow: admins), so
// the concierge's runs for her are offered no ask_vip, and a call of it
// anyway is refused as a tool error the model reads; no child run starts.
func TestAskHonoursAllow(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Layers: []fs.FS{layer}})
	ctx := within(t, 2*time.Minute)
	env.Model.Enqueue(
		llmtest.ToolCalls(llmtest.ToolCall{ID: "call_vip", Name: "ask_vip", Arguments: `{"question":"Let me in?"}`}),
		llmtest.Text("I may not ask the vip agent."),
	)
	run := startAsk(t, ctx, env)
	var start longhaul.ToolStartData
	var output longhaul.ToolOutputData
	events(t, ctx, env, run, func(e longhaul.Event) bool {
		switch e.Type {
		case longhaul.EventToolStart:
			_ = e.Decode(&start)
		case longhaul.EventToolOutput:
			_ = e.Decode(&output)
		}
		return false
	})
	if start.Name != "ask_vip" || start.Run != "" {
		t.Errorf("tool_start %+v, want no child run", start)
	}
	if !output.Error || !strings.Contains(output.Output, `tool "ask_vip" is not allowed here`) {
		t.Errorf("the call's output %+v, want a refusal", output)
	}
	reqs := env.Model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2 (no child run)", len(reqs))
	}
	var offered []string
	for _, tl := range reqs[0].Chat.Tools {
		offered = append(offered, tl.Function.Name)
	}
	if !slices.Equal(offered, []string{"ask_helper"}) {
		t.Errorf("ann's run is offered %v, want [ask_helper]", offered)
	}
}
