package activities_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/internal/tools"
)

func TestCallToolRefusesWithoutRunning(t *testing.T) {
	tests := []struct {
		name  string
		call  longhaul.ToolCall
		scope []string
		msg   string
	}{
		{name: "outside the scope", call: longhaul.ToolCall{ID: "c1", Name: "probe", Arguments: `{"q":"x"}`},
			scope: []string{"current_time"}, msg: "not allowed"},
		{name: "empty scope", call: longhaul.ToolCall{ID: "c1", Name: "probe", Arguments: `{"q":"x"}`},
			scope: nil, msg: "not allowed"},
		{name: "unknown tool in scope", call: longhaul.ToolCall{ID: "c1", Name: "launch_rockets", Arguments: `{}`},
			scope: []string{"launch_rockets", "probe"}, msg: "unknown tool"},
		{name: "missing required argument", call: longhaul.ToolCall{ID: "c1", Name: "probe", Arguments: `{}`},
			scope: []string{"probe"}, msg: `"q"`},
		{name: "no arguments at all", call: longhaul.ToolCall{ID: "c1", Name: "probe"},
			scope: []string{"probe"}, msg: `"q"`},
		{name: "wrong type", call: longhaul.ToolCall{ID: "c1", Name: "probe", Arguments: `{"q":42}`},
			scope: []string{"probe"}, msg: `"q"`},
		{name: "too short", call: longhaul.ToolCall{ID: "c1", Name: "probe", Arguments: `{"q":""}`},
			scope: []string{"probe"}, msg: `"q"`},
		{name: "unexpected argument", call: longhaul.ToolCall{ID: "c1", Name: "probe", Arguments: `{"q":"x","force":true}`},
			scope: []string{"probe"}, msg: "force"},
		{name: "not JSON", call: longhaul.ToolCall{ID: "c1", Name: "probe", Arguments: `{"q":`},
			scope: []string{"probe"}, msg: "not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil, nil)
			env := f.activityEnv()
			_, err := callTool(t, env, f.acts, activities.ToolRequest{Call: tt.call, Scope: tt.scope})
			wantAppError(t, err, activities.ErrTypeToolRefused, true, tt.msg)
			if n := f.probe.count(); n != 0 {
				t.Errorf("the tool ran %d times, want never", n)
			}
			if n := len(f.rec.sent()); n != 0 {
				t.Errorf("a refused call sent %d signals, want none", n)
			}
		})
	}
}

func TestCallToolRefusesArgumentsTheToolRejects(t *testing.T) {
	// The schema only says "string"; current_time itself finds the zone
	// unknown and answers ErrInvalidArguments, which retrying cannot fix.
	f := newFixture(t, nil, nil)
	env := f.activityEnv()
	_, err := callTool(t, env, f.acts, activities.ToolRequest{
		Call:  longhaul.ToolCall{ID: "c1", Name: "current_time", Arguments: `{"timezone":"Mars/Olympus_Mons"}`},
		Scope: []string{"current_time"},
	})
	wantAppError(t, err, activities.ErrTypeToolRefused, true, "Mars/Olympus_Mons")
}

func TestCallToolFailureIsRetryable(t *testing.T) {
	p := &probe{err: errors.New("upstream answered 502")}
	f := newFixture(t, p, nil)
	env := f.activityEnv()
	_, err := callTool(t, env, f.acts, activities.ToolRequest{
		Call: longhaul.ToolCall{ID: "c1", Name: "probe", Arguments: `{"q":"x"}`}, Scope: []string{"probe"},
	})
	wantAppError(t, err, activities.ErrTypeToolFailed, false, "upstream answered 502")
	if n := p.count(); n != 1 {
		t.Errorf("the tool ran %d times, want 1", n)
	}
}

func TestCallToolReturnsTheToolsContent(t *testing.T) {
	direct := func(t *testing.T, args string) string {
		t.Helper()
		res, err := (&tools.CurrentTime{Now: fixedClock}).Call(context.Background(), tools.Call{Arguments: json.RawMessage(args)})
		if err != nil {
			t.Fatalf("current_time(%s): %v", args, err)
		}
		return res.Content
	}
	tests := []struct {
		name string
		call longhaul.ToolCall
		want activities.ToolResponse
	}{
		{name: "current_time in a zone",
			call: longhaul.ToolCall{ID: "c1", Name: "current_time", Arguments: `{"timezone":"Europe/Berlin"}`},
			want: activities.ToolResponse{Content: direct(t, `{"timezone":"Europe/Berlin"}`)}},
		{name: "empty arguments are the empty object",
			call: longhaul.ToolCall{ID: "c1", Name: "current_time"},
			want: activities.ToolResponse{Content: direct(t, `{}`)}},
		{name: "probe",
			call: longhaul.ToolCall{ID: "c1", Name: "probe", Arguments: `{"q":"x"}`},
			want: activities.ToolResponse{Content: "probed"}},
	}
	if !strings.Contains(tests[0].want.Content, "2025-03-14T16:09:26+01:00") {
		t.Fatalf("current_time does not use the fixed clock: %q", tests[0].want.Content)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil, nil)
			env := f.activityEnv()
			got, err := callTool(t, env, f.acts, activities.ToolRequest{Call: tt.call, Scope: []string{"current_time", "probe"}})
			if err != nil {
				t.Fatalf("CallTool: %v", err)
			}
			diff(t, "tool response", tt.want, got)
		})
	}
}

func TestCallToolTruncatesLongOutput(t *testing.T) {
	tests := []struct {
		name          string
		max           int
		result        tools.Result
		wantPrefix    string
		wantTruncated bool
		wantNote      bool
	}{
		{name: "longer than the limit", max: 10, result: tools.Result{Content: strings.Repeat("é", 25)},
			wantPrefix: strings.Repeat("é", 10), wantTruncated: true, wantNote: true},
		{name: "exactly the limit", max: 10, result: tools.Result{Content: strings.Repeat("é", 10)},
			wantPrefix: strings.Repeat("é", 10)},
		{name: "no limit", max: 0, result: tools.Result{Content: strings.Repeat("é", 25)},
			wantPrefix: strings.Repeat("é", 25)},
		{name: "the tool truncated it already", max: 10, result: tools.Result{Content: "short", Truncated: true},
			wantPrefix: "short", wantTruncated: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &probe{result: tt.result}
			f := newFixture(t, p, nil)
			f.acts.MaxToolOutput = tt.max
			env := f.activityEnv()
			got, err := callTool(t, env, f.acts, activities.ToolRequest{
				Call: longhaul.ToolCall{ID: "c1", Name: "probe", Arguments: `{"q":"x"}`}, Scope: []string{"probe"},
			})
			if err != nil {
				t.Fatalf("CallTool: %v", err)
			}
			if got.Truncated != tt.wantTruncated {
				t.Errorf("Truncated = %v, want %v", got.Truncated, tt.wantTruncated)
			}
			note, ok := strings.CutPrefix(got.Content, tt.wantPrefix)
			if !ok {
				t.Fatalf("content %q does not start with %q", got.Content, tt.wantPrefix)
			}
			switch {
			case !tt.wantNote && note != "":
				t.Errorf("content has %q after the output, want nothing", note)
			case tt.wantNote && (strings.Contains(note, "é") || !strings.Contains(note, "truncated") || !strings.Contains(note, "25")):
				t.Errorf("after the kept output comes %q, want a note that the 25 characters were truncated", note)
			}
		})
	}
}

func TestCallToolPublishesProgress(t *testing.T) {
	p := &probe{content: "done", progress: []string{"connecting", "reading", "parsing", "finishing"}}
	f := newFixture(t, p, nil)
	env := f.activityEnv()
	wfID, runID := envWorkflow(t, env)
	if _, err := callTool(t, env, f.acts, activities.ToolRequest{
		Call: longhaul.ToolCall{ID: "call_p", Name: "probe", Arguments: `{"q":"x"}`}, Scope: []string{"probe"},
	}); err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	for _, s := range f.rec.sent() {
		if s.Name != longhaul.PublishSignal || s.WorkflowID != wfID || s.RunID != runID {
			t.Errorf("signal %q to %s/%s, want %q to %s/%s", s.Name, s.WorkflowID, s.RunID, longhaul.PublishSignal, wfID, runID)
		}
	}
	batches := f.rec.batches()
	checkSeqs(t, batches)
	var got []longhaul.ToolStatusData
	for _, e := range eventsOf(batches) {
		if e.Type != longhaul.EventToolStatus {
			t.Errorf("published a %s event, want tool_status", e.Type)
			continue
		}
		var d longhaul.ToolStatusData
		if err := e.Decode(&d); err != nil {
			t.Fatalf("decode %s: %v", e.Data, err)
		}
		got = append(got, d)
	}
	diff(t, "tool status events", []longhaul.ToolStatusData{
		{ToolCallID: "call_p", Name: "probe", Message: "connecting", Progress: 0.25},
		{ToolCallID: "call_p", Name: "probe", Message: "reading", Progress: 0.5},
		{ToolCallID: "call_p", Name: "probe", Message: "parsing", Progress: 0.75},
		{ToolCallID: "call_p", Name: "probe", Message: "finishing", Progress: 1},
	}, got)
}

func TestCallToolWithoutProgressSendsNothing(t *testing.T) {
	f := newFixture(t, nil, nil)
	env := f.activityEnv()
	if _, err := callTool(t, env, f.acts, activities.ToolRequest{
		Call: longhaul.ToolCall{ID: "c1", Name: "probe", Arguments: `{"q":"x"}`}, Scope: []string{"probe"},
	}); err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	if n := len(f.rec.sent()); n != 0 {
		t.Errorf("sent %d signals, want none", n)
	}
}

func TestCallToolPassesTheCall(t *testing.T) {
	f := newFixture(t, nil, nil)
	env := f.activityEnv()
	wfID, _ := envWorkflow(t, env)
	if _, err := callTool(t, env, f.acts, activities.ToolRequest{
		Call: longhaul.ToolCall{ID: "call_k", Name: "probe", Arguments: `{"q":"needle"}`}, Scope: []string{"current_time", "probe"},
	}); err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	calls := f.probe.received()
	if len(calls) != 1 {
		t.Fatalf("the tool ran %d times, want 1", len(calls))
	}
	type seen struct{ ID, IdempotencyKey, Arguments string }
	diff(t, "call the tool got", seen{"call_k", wfID + "/call_k", `{"q":"needle"}`},
		seen{calls[0].ID, calls[0].IdempotencyKey, string(calls[0].Arguments)})
}
