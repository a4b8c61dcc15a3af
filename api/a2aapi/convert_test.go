package a2aapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/contract"
)

func TestStateOf(t *testing.T) {
	for status, want := range map[string]string{
		contract.StatusRunning: StateWorking, "": StateWorking, contract.StatusWaiting: StateInputRequired,
		contract.StatusCompleted: StateCompleted, contract.StatusFailed: StateFailed, contract.StatusCancelled: StateCanceled,
	} {
		if got := StateOf(status); got != want {
			t.Errorf("StateOf(%q) = %s, want %s", status, got, want)
		}
	}
	if !terminal(StateCanceled) || !terminal(StateCompleted) || terminal(StateWorking) || terminal(StateInputRequired) {
		t.Error("terminal states: COMPLETED, FAILED, CANCELED, REJECTED; not WORKING or INPUT_REQUIRED")
	}
}

// log is a run's log: a text before a tool call, the call, the answer.
func log(t *testing.T) []longhaul.Event {
	t.Helper()
	at := time.Unix(1700000000, 0).UTC()
	events := []longhaul.Event{
		longhaul.NewEvent(longhaul.EventContent, at, longhaul.ContentData{Text: "Looking."}),
		longhaul.NewEvent(longhaul.EventToolStart, at, longhaul.ToolStartData{ToolCallID: "c1", Name: "place_order"}),
		longhaul.NewEvent(longhaul.EventContent, at, longhaul.ContentData{Text: "cut off", Cancelled: true}),
		longhaul.NewEvent(longhaul.EventContent, at, longhaul.ContentData{Text: "Done."}),
	}
	for i := range events {
		events[i].Offset = int64(i + 1)
	}
	return events
}

func TestTaskOf(t *testing.T) {
	at := time.Unix(1700000000, 0).UTC()
	st := contract.RunState{Status: contract.StatusCompleted, Result: "Done."}
	user := userMessage("run-1", "ctx", []longhaul.Message{{Role: longhaul.RoleUser, Content: "Order"}})
	zero, one := int32(0), int32(1)
	for _, tc := range []struct {
		name    string
		history *int32
		want    []string
	}{
		{"all", nil, []string{"Order", "Looking.", "Done."}},
		{"none", &zero, nil},
		{"last", &one, []string{"Done."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			task := TaskOf("run-1", "ctx", st, log(t), user, tc.history, at)
			var got []string
			for _, m := range task.History {
				got = append(got, *m.Parts[0].Text)
			}
			if !cmp.Equal(got, tc.want) {
				t.Errorf("history %q, want %q", got, tc.want)
			}
			if len(task.Artifacts) != 2 || task.Artifacts[1].ArtifactID != "text-4" || *task.Artifacts[1].Parts[0].Text != "Done." {
				t.Errorf("artifacts %+v: want the two whole texts, the cancelled one left out", task.Artifacts)
			}
			if task.Status.State != StateCompleted || *task.Status.Message.Parts[0].Text != "Done." || task.Status.Message.Role != RoleAgent {
				t.Errorf("status %+v: want COMPLETED with the answer", task.Status)
			}
		})
	}
	waiting := StatusOf("run-1", "ctx", contract.RunState{Status: contract.StatusWaiting, Waiting: &contract.Waiting{Kind: contract.WaitApproval, Tool: "place_order", Arguments: `{"item":"book"}`}}, at)
	if waiting.State != StateInputRequired || waiting.Message == nil || !contains(*waiting.Message.Parts[0].Text, "place_order", `{"item":"book"}`, "yes or no") {
		t.Errorf("waiting status %+v: want INPUT_REQUIRED asking about the call", waiting)
	}
	failed := StatusOf("run-1", "ctx", contract.RunState{Status: contract.StatusFailed, Error: "model down"}, at)
	if failed.State != StateFailed || *failed.Message.Parts[0].Text != "model down" {
		t.Errorf("failed status %+v: want FAILED with the error", failed)
	}
}

func contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

func TestConverterEvent(t *testing.T) {
	c := Converter{TaskID: "run-1", ContextID: "ctx"}
	at := time.Unix(1700000000, 0).UTC()
	approval := longhaul.NewEvent(longhaul.EventApprovalRequired, at, longhaul.ApprovalRequiredData{ToolCallID: "c1", Name: "place_order", Arguments: "{}"})
	approval.Offset = 5
	var got []string
	for _, e := range append(log(t), approval, longhaul.NewEvent(longhaul.EventApproval, at, longhaul.ApprovalData{}), longhaul.NewEvent(longhaul.EventUsage, at, nil)) {
		for _, r := range c.Event(e) {
			switch {
			case r.ArtifactUpdate != nil:
				a := r.ArtifactUpdate
				if a.TaskID != "run-1" || a.ContextID != "ctx" || !a.LastChunk {
					t.Errorf("artifact update %+v", a)
				}
				got = append(got, "artifact "+*a.Artifact.Parts[0].Text)
			case r.StatusUpdate != nil:
				got = append(got, "status "+r.StatusUpdate.Status.State)
			}
		}
	}
	want := []string{"artifact Looking.", "status " + StateWorking, "artifact Done.", "status " + StateInputRequired, "status " + StateWorking}
	if !cmp.Equal(got, want) {
		t.Errorf("stream %q, want %q", got, want)
	}
	final := c.Final(contract.RunState{Status: contract.StatusCancelled}, at)
	if final.StatusUpdate == nil || final.StatusUpdate.Status.State != StateCanceled {
		t.Errorf("final %+v: want CANCELED", final)
	}
}

func TestInputOf(t *testing.T) {
	text := func(s string) Part { return Part{Text: &s} }
	for _, tc := range []struct {
		name    string
		parts   []Part
		approve *bool
		text    string
		code    int
	}{
		{name: "yes", parts: []Part{text(" yes ")}, text: "yes"},
		{name: "data approve", parts: []Part{{Data: json.RawMessage(`{"approve": false}`)}}, approve: new(bool)},
		{name: "data without approve", parts: []Part{{Data: json.RawMessage(`{"ok": 1}`)}}, code: -32602},
		{name: "both", parts: []Part{text("yes"), {Data: json.RawMessage(`{"approve": true}`)}}, code: -32602},
		{name: "empty", parts: []Part{text("  ")}, code: -32602},
		{name: "file", parts: []Part{{URL: new(string)}}, code: -32005},
	} {
		t.Run(tc.name, func(t *testing.T) {
			approve, got, err := InputOf(&Message{Parts: tc.parts})
			if tc.code != 0 {
				var e *Error
				if !errors.As(err, &e) || e.Code != tc.code {
					t.Fatalf("err %v, want code %d", err, tc.code)
				}
				return
			}
			if err != nil || !cmp.Equal(approve, tc.approve) || (got == nil) != (tc.text == "") || got != nil && *got != tc.text {
				t.Errorf("InputOf = %v, %v, %v; want %v, %q", approve, got, err, tc.approve, tc.text)
			}
		})
	}
	if _, err := TextOf(&Message{Parts: []Part{{Raw: new(string)}}}); AsA2A(err, OpOther).Code != -32005 {
		t.Errorf("TextOf of a raw part: %v, want ContentTypeNotSupported", err)
	}
}

func TestAsA2A(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		op     Op
		code   int
		reason string
		status int
	}{
		{"not found", web.NotFound("no run x"), OpOther, -32001, "TASK_NOT_FOUND", 404},
		{"conflict to a cancel", web.Conflict("finished"), OpCancel, -32002, "TASK_NOT_CANCELABLE", 409},
		{"conflict to a message", web.Conflict("finished"), OpOther, -32004, "UNSUPPORTED_OPERATION", 400},
		{"too many", web.TooMany("limit", 1), OpOther, -32602, "INVALID_PARAMS", 429},
		{"unavailable", web.Unavailable("no Temporal"), OpOther, -32603, "", 503},
		{"plain", errors.New("boom"), OpOther, -32603, "", 500},
		{"A2A's own", errVersionUnsupported.with("0.3"), OpOther, -32009, "VERSION_NOT_SUPPORTED", 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := AsA2A(tc.err, tc.op)
			if e.Code != tc.code || e.Reason != tc.reason || e.Status != tc.status {
				t.Errorf("AsA2A = %+v, want code %d reason %q status %d", e, tc.code, tc.reason, tc.status)
			}
		})
	}
}

// TestErrorBodies: a JSON-RPC error carries the ErrorInfo in data (spec
// §9.5), an HTTP+JSON one in AIP-193's details (§11.6).
func TestErrorBodies(t *testing.T) {
	e := errTaskNotFound.with("no task x")
	rpc, _ := json.Marshal(e.rpc())
	want := `{"code":-32001,"message":"no task x","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org"}]}`
	if string(rpc) != want {
		t.Errorf("JSON-RPC error %s, want %s", rpc, want)
	}
	rest, _ := json.Marshal(e.rest())
	want = `{"error":{"code":404,"status":"NOT_FOUND","message":"no task x","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org"}]}}`
	if string(rest) != want {
		t.Errorf("HTTP+JSON error %s, want %s", rest, want)
	}
	if parse, _ := json.Marshal(errParse.with("x").rpc()); string(parse) != `{"code":-32700,"message":"x"}` {
		t.Errorf("parse error %s: JSON-RPC's own errors carry no ErrorInfo", parse)
	}
	if grpcStatus(http.StatusTeapot) != "INTERNAL" {
		t.Error("an unmapped status is INTERNAL")
	}
}

// TestAuthRequired: a run waiting for an account connection is
// AUTH_REQUIRED with the connect link in its status message, read whole
// and streamed; the end of the wait is WORKING again.
func TestAuthRequired(t *testing.T) {
	at := time.Unix(1700000000, 0).UTC()
	const link = "https://lh.example/oauth/connect/L1"
	st := contract.RunState{Status: contract.StatusWaiting, Waiting: &contract.Waiting{Kind: contract.WaitAuth, Tool: "mail__search", Server: "mail", URL: link}}
	s := StatusOf("run-1", "ctx", st, at)
	if s.State != StateAuthRequired || s.Message == nil || !strings.Contains(*s.Message.Parts[0].Text, link) {
		t.Errorf("status %+v: want AUTH_REQUIRED with the link", s)
	}
	st.Waiting.Kind = contract.WaitApproval
	if s := StatusOf("run-1", "ctx", st, at); s.State != StateInputRequired {
		t.Errorf("an approval's state %s, want INPUT_REQUIRED", s.State)
	}
	c := Converter{TaskID: "run-1", ContextID: "ctx"}
	var got []string
	for _, e := range []longhaul.Event{
		longhaul.NewEvent(longhaul.EventAuthRequired, at, longhaul.AuthRequiredData{ToolCallID: "c1", Name: "mail__search", Server: "mail", URL: link}),
		longhaul.NewEvent(longhaul.EventAuth, at, longhaul.AuthData{ToolCallID: "c1", Server: "mail", Connected: true}),
	} {
		for _, r := range c.Event(e) {
			u := r.StatusUpdate
			text := ""
			if u.Status.Message != nil {
				text = *u.Status.Message.Parts[0].Text
			}
			got = append(got, u.Status.State+" "+text)
		}
	}
	want := []string{StateAuthRequired + " " + AuthText("mail", link), StateWorking + " "}
	if !cmp.Equal(got, want) {
		t.Errorf("stream %q, want %q", got, want)
	}
}
