package activities_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/tools"
)

func TestCallToolRefusesWithoutRunning(t *testing.T) {
	tests := []struct {
		name         string
		call         longhaul.ToolCall
		agent, skill string
		seq          int64 // 0 means 1; -1 means none
		msg          string
	}{
		{name: "outside the agent's tools", call: longhaul.ToolCall{ID: "c1", Name: "probe", Arguments: `{"q":"x"}`},
			agent: "timekeeper", msg: "not allowed"},
		{name: "outside the skill's tools", call: longhaul.ToolCall{ID: "c1", Name: "probe", Arguments: `{"q":"x"}`},
			agent: "assistant", skill: "clock", msg: "not allowed"},
		{name: "a skill the agent does not have", call: longhaul.ToolCall{ID: "c1", Name: "probe", Arguments: `{"q":"x"}`},
			agent: "timekeeper", skill: "probing", msg: `agent "timekeeper" has no skill "probing"`},
		{name: "an agent without tools", call: longhaul.ToolCall{ID: "c1", Name: "current_time", Arguments: `{}`},
			agent: "naked", msg: "not allowed"},
		{name: "an unknown agent", call: longhaul.ToolCall{ID: "c1", Name: "probe", Arguments: `{"q":"x"}`},
			agent: "root", msg: `unknown agent "root"`},
		{name: "no agent", call: longhaul.ToolCall{ID: "c1", Name: "probe", Arguments: `{"q":"x"}`},
			msg: `unknown agent ""`},
		{name: "a tool the worker does not have", call: longhaul.ToolCall{ID: "c1", Name: "web_fetch", Arguments: `{"url":"https://example.com"}`},
			agent: "assistant", msg: "unknown tool"},
		{name: "no sequence number", call: longhaul.ToolCall{ID: "c1", Name: "probe", Arguments: `{"q":"x"}`},
			agent: "prober", seq: -1, msg: "no sequence number"},
		{name: "missing required argument", call: longhaul.ToolCall{ID: "c1", Name: "probe", Arguments: `{}`},
			agent: "prober", msg: `"q"`},
		{name: "no arguments at all", call: longhaul.ToolCall{ID: "c1", Name: "probe"},
			agent: "prober", msg: `"q"`},
		{name: "wrong type", call: longhaul.ToolCall{ID: "c1", Name: "probe", Arguments: `{"q":42}`},
			agent: "prober", skill: "probing", msg: `"q"`},
		{name: "too short", call: longhaul.ToolCall{ID: "c1", Name: "probe", Arguments: `{"q":""}`},
			agent: "prober", msg: `"q"`},
		{name: "unexpected argument", call: longhaul.ToolCall{ID: "c1", Name: "probe", Arguments: `{"q":"x","force":true}`},
			agent: "prober", msg: "force"},
		{name: "not JSON", call: longhaul.ToolCall{ID: "c1", Name: "probe", Arguments: `{"q":`},
			agent: "prober", msg: "not valid JSON"},
		{name: "not JSON, told what was sent", call: longhaul.ToolCall{ID: "c1", Name: "probe", Arguments: `{"q": "x`},
			agent: "prober", msg: "You sent: `{\"q\": \"x`"},
		{name: "an array", call: longhaul.ToolCall{ID: "c1", Name: "probe", Arguments: `["x"]`},
			agent: "prober", msg: "a JSON array, not an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil, nil)
			// A refused call reports no progress, even if the tool would.
			f.probe.progress = []string{"must not be seen"}
			env, fl := f.followedEnv(t)
			seq := tt.seq
			switch seq {
			case 0:
				seq = 1
			case -1:
				seq = 0
			}
			_, err := callTool(t, env, f.acts, contract.ToolRequest{Call: tt.call, Agent: tt.agent, Skill: tt.skill, Seq: seq, After: 4})
			wantAppError(t, err, longhaul.ErrTypeToolRefused, true, tt.msg)
			if n := f.probe.count(); n != 0 {
				t.Errorf("the tool ran %d times, want never", n)
			}
			if ds := fl.drain(t); len(ds) != 0 {
				t.Errorf("a refused call published %d deltas, want none: %+v", len(ds), ds)
			}
		})
	}
}

func TestCallToolRefusesArgumentsTheToolRejects(t *testing.T) {
	// The schema only says "string"; current_time itself finds the zone
	// unknown and answers ErrInvalidArguments, which retrying cannot fix.
	f := newFixture(t, nil, nil)
	env := f.activityEnv()
	_, err := callTool(t, env, f.acts, contract.ToolRequest{
		Call:  longhaul.ToolCall{ID: "c1", Name: "current_time", Arguments: `{"timezone":"Mars/Olympus_Mons"}`},
		Agent: "timekeeper", Seq: 9,
	})
	wantAppError(t, err, longhaul.ErrTypeToolRefused, true, "Mars/Olympus_Mons")
}

func TestCallToolFailureIsRetryable(t *testing.T) {
	p := &probe{err: errors.New("upstream answered 502")}
	f := newFixture(t, p, nil)
	env := f.activityEnv()
	_, err := callTool(t, env, f.acts, contract.ToolRequest{
		Call: longhaul.ToolCall{ID: "c1", Name: "probe", Arguments: `{"q":"x"}`}, Agent: "prober", Seq: 9,
	})
	wantAppError(t, err, longhaul.ErrTypeToolFailed, false, "upstream answered 502")
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
		want contract.ToolResponse
	}{
		{name: "current_time in a zone",
			call: longhaul.ToolCall{ID: "c1", Name: "current_time", Arguments: `{"timezone":"Europe/Berlin"}`},
			want: contract.ToolResponse{Content: direct(t, `{"timezone":"Europe/Berlin"}`)}},
		{name: "an object encoded twice is decoded",
			call: longhaul.ToolCall{ID: "c1", Name: "current_time", Arguments: `"{\"timezone\":\"Europe/Berlin\"}"`},
			want: contract.ToolResponse{Content: direct(t, `{"timezone":"Europe/Berlin"}`)}},
		{name: "empty arguments are the empty object",
			call: longhaul.ToolCall{ID: "c1", Name: "current_time"},
			want: contract.ToolResponse{Content: direct(t, `{}`)}},
		{name: "probe",
			call: longhaul.ToolCall{ID: "c1", Name: "probe", Arguments: `{"q":"x"}`},
			want: contract.ToolResponse{Content: "probed"}},
	}
	if !strings.Contains(tests[0].want.Content, "2025-03-14T16:09:26+01:00") {
		t.Fatalf("current_time does not use the fixed clock: %q", tests[0].want.Content)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil, nil)
			env := f.activityEnv()
			got, err := callTool(t, env, f.acts, contract.ToolRequest{Call: tt.call, Agent: "prober", Seq: 9})
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
			got, err := callTool(t, env, f.acts, contract.ToolRequest{
				Call: longhaul.ToolCall{ID: "c1", Name: "probe", Arguments: `{"q":"x"}`}, Agent: "prober", Seq: 9,
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
	env, fl := f.followedEnv(t)
	// A subscriber of the exact subject checks the deltas go where the
	// subjects say.
	raw, err := f.watcher.Conn().SubscribeSync(f.subj.Tool(fl.run))
	if err != nil {
		t.Fatalf("SubscribeSync: %v", err)
	}
	if err := f.watcher.Conn().Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	if _, err := callTool(t, env, f.acts, contract.ToolRequest{
		Call: longhaul.ToolCall{ID: "call_p", Name: "probe", Arguments: `{"q":"x"}`}, Agent: "prober", Seq: 9, After: 12,
	}); err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	ds := fl.drain(t)
	var got []longhaul.ToolStatusData
	for i, d := range ds {
		if d.Kind != longhaul.DeltaToolStatus || d.After != 12 || d.Status == nil {
			t.Errorf("delta %d = %+v, want a tool_status delta after 12", i, d)
			continue
		}
		if d.Call != "" || d.Attempt != 0 || d.From != 0 || d.Text != "" {
			t.Errorf("tool_status delta %d carries model call fields: %+v", i, d)
		}
		got = append(got, *d.Status)
	}
	diff(t, "tool status deltas", []longhaul.ToolStatusData{
		{ToolCallID: "call_p", Name: "probe", Message: "connecting", Progress: 0.25},
		{ToolCallID: "call_p", Name: "probe", Message: "reading", Progress: 0.5},
		{ToolCallID: "call_p", Name: "probe", Message: "parsing", Progress: 0.75},
		{ToolCallID: "call_p", Name: "probe", Message: "finishing", Progress: 1},
	}, got)
	// The deltas went to the tool subject, and then drain's barrier.
	for i := range len(ds) + 1 {
		m, err := raw.NextMsg(promptly)
		if err != nil {
			t.Fatalf("message %d on %s: %v", i, f.subj.Tool(fl.run), err)
		}
		var d longhaul.Delta
		if err := json.Unmarshal(m.Data, &d); err != nil {
			t.Fatalf("decode message %d on %s: %v", i, m.Subject, err)
		}
		want := longhaul.DeltaToolStatus
		if i == len(ds) {
			want = barrierKind
		}
		if d.Kind != want {
			t.Errorf("message %d on %s is a %s delta, want %s", i, m.Subject, d.Kind, want)
		}
	}
}

func TestCallToolWithoutProgressPublishesNothing(t *testing.T) {
	f := newFixture(t, nil, nil)
	env, fl := f.followedEnv(t)
	if _, err := callTool(t, env, f.acts, contract.ToolRequest{
		Call: longhaul.ToolCall{ID: "c1", Name: "probe", Arguments: `{"q":"x"}`}, Agent: "prober", Seq: 9,
	}); err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	if ds := fl.drain(t); len(ds) != 0 {
		t.Errorf("published %d deltas, want none: %+v", len(ds), ds)
	}
}

func TestCallToolProgressWithoutBus(t *testing.T) {
	p := &probe{content: "done", progress: []string{"working"}}
	f := newFixture(t, p, nil)
	f.acts.Bus = nil
	env := f.activityEnv()
	got, err := callTool(t, env, f.acts, contract.ToolRequest{
		Call: longhaul.ToolCall{ID: "c1", Name: "probe", Arguments: `{"q":"x"}`}, Agent: "prober", Seq: 9,
	})
	if err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	diff(t, "tool response", contract.ToolResponse{Content: "done"}, got)
}

func TestCallToolPassesTheCall(t *testing.T) {
	f := newFixture(t, nil, nil)
	env := f.activityEnv()
	wfID, _ := envWorkflow(t, env)
	if _, err := callTool(t, env, f.acts, contract.ToolRequest{
		Call: longhaul.ToolCall{ID: "call_k", Name: "probe", Arguments: `{"q":"needle"}`}, Agent: "prober", Seq: 9,
	}); err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	calls := f.probe.received()
	if len(calls) != 1 {
		t.Fatalf("the tool ran %d times, want 1", len(calls))
	}
	type seen struct{ ID, IdempotencyKey, Arguments string }
	diff(t, "call the tool got", seen{"call_k", wfID + "/call-9", `{"q":"needle"}`},
		seen{calls[0].ID, calls[0].IdempotencyKey, string(calls[0].Arguments)})
}
