package chatapi

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

func TestApprovalChatInput(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		text string
		want contract.InputRequest
	}{
		{"approve", contract.InputRequest{Approve: &yes}},
		{"  Approve! ", contract.InputRequest{Approve: &yes}},
		{"YES.", contract.InputRequest{Approve: &yes}},
		{"ok", contract.InputRequest{Approve: &yes}},
		{"y", contract.InputRequest{Approve: &yes}},
		{"Go ahead!", contract.InputRequest{Approve: &yes}},
		{"deny", contract.InputRequest{Approve: &no}},
		{"No!!", contract.InputRequest{Approve: &no}},
		{"n", contract.InputRequest{Approve: &no}},
		{"Reject.", contract.InputRequest{Approve: &no}},
		{"*deny*", contract.InputRequest{Approve: &no}},
		{"yes, but a paperback", contract.InputRequest{Text: "yes, but a paperback"}},
		{" Make it a paperback. ", contract.InputRequest{Text: "Make it a paperback."}},
		{"?!", contract.InputRequest{Text: "?!"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, chatInput(tt.text)); diff != "" {
			t.Errorf("chatInput(%q) (-want +got):\n%s", tt.text, diff)
		}
	}
}

// TestApprovalUnpromptedIsText: a chat message that
// replies to no approval prompt (the response was cut off before it showed
// one) reaches the waiting run as text that decides nothing, "ok" too; one
// that replies to a shown prompt decides.
func TestApprovalUnpromptedIsText(t *testing.T) {
	for _, text := range []string{"ok", "Yes!", "approve", "go ahead", "no", "make it a paperback"} {
		in := answerInput(text, false)
		if got := contract.Decide(in); got != contract.DecisionReplied || in.Approve != nil {
			t.Errorf("%q, shown no prompt: %+v decides %q, want a reply", text, in, got)
		}
	}
	if got := contract.Decide(answerInput(" ok ", true)); got != contract.DecisionApproved {
		t.Errorf(`"ok" answering a shown prompt decides %q, want approved`, got)
	}
	if got := contract.Decide(answerInput("no", true)); got != contract.DecisionDenied {
		t.Errorf(`"no" answering a shown prompt decides %q, want denied`, got)
	}
}

func TestApprovalPrompt(t *testing.T) {
	got := approvalPrompt(longhaul.ApprovalRequiredData{ToolCallID: "c1", Name: "place_order", Arguments: `{"item":"book"}`, Target: "POST shop.test/orders"}, "run-1")
	want := "**Approval needed:** the agent wants to call `place_order` (`POST shop.test/orders`) with these arguments:\n\n" +
		"```json\n{\"item\":\"book\"}\n```\n\n" +
		"Reply `approve` to let it run or `deny` to refuse it, or write a reply to tell it what to do instead."
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("prompt (-want +got):\n%s", diff)
	}
	bare := approvalPrompt(longhaul.ApprovalRequiredData{Name: "ping", Arguments: "{}"}, "run-1")
	if !strings.HasPrefix(bare, "**Approval needed:** the agent wants to call `ping`.\n\nReply") {
		t.Errorf("prompt without arguments: %q", bare)
	}
	fenced := approvalPrompt(longhaul.ApprovalRequiredData{Name: "note", Arguments: "{\"text\":\"```go\"}", Target: "POST a`b"}, "run-1")
	if !strings.Contains(fenced, "````json\n") || !strings.Contains(fenced, "(`` POST a`b ``)") {
		t.Errorf("backticks in arguments and target: %q", fenced)
	}
	// Arguments past maxPromptArgs are cut, and the prompt says so: how
	// much is not shown, that the approval covers it, and where to read it
	// whole.
	for _, tc := range []struct {
		name, args string
		left       int
	}{
		{"ascii", `{"a":"` + strings.Repeat("z", 5000) + `"}`, 5008 - (maxPromptArgs - 1)},
		{"multi-byte", `{"a":"` + strings.Repeat("ü", 2000) + `"}`, 2008 - (maxPromptArgs - 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			long := approvalPrompt(longhaul.ApprovalRequiredData{Name: "x", Arguments: tc.args}, "chat-9-turn-1")
			if len(long) > 2*maxPromptArgs+600 || !strings.Contains(long, "…\n```") {
				t.Errorf("long arguments are not cut: %d bytes", len(long))
			}
			note := fmt.Sprintf("%d more characters are not shown, and approving lets the call run with all of them; `GET /v1/runs/chat-9-turn-1` (`waiting.arguments`) shows them whole.", tc.left)
			if !strings.Contains(long, note) || !strings.HasSuffix(long, approvalReplyHint+", or write a reply to tell it what to do instead.") {
				t.Errorf("the prompt does not say the arguments are cut:\n%s", long[len(long)-400:])
			}
		})
	}
	if whole := approvalPrompt(longhaul.ApprovalRequiredData{Name: "x", Arguments: `{"a":"` + strings.Repeat("z", maxPromptArgs-8) + `"}`}, "run-1"); strings.Contains(whole, "cut") {
		t.Errorf("arguments of exactly %d characters are said to be cut", maxPromptArgs)
	}
}

func TestApprovalPendingAndCut(t *testing.T) {
	at := func(off int64, typ longhaul.EventType, payload any) longhaul.Event {
		e := ev(typ, payload)
		e.Offset = off
		return e
	}
	asked := longhaul.ApprovalRequiredData{ToolCallID: "c1", Name: "place_order"}
	log := []longhaul.Event{
		at(1, longhaul.EventContent, longhaul.ContentData{Text: "ok"}),
		at(2, longhaul.EventApprovalRequired, asked),
		at(3, longhaul.EventApproval, longhaul.ApprovalData{ToolCallID: "c1", Decision: "approved"}),
		at(4, longhaul.EventToolOutput, longhaul.ToolOutputData{ToolCallID: "c1"}),
		// The same call id again, in a later turn of the loop.
		at(5, longhaul.EventApprovalRequired, asked),
		at(6, longhaul.EventToolStatus, longhaul.ToolStatusData{ToolCallID: "c0", Message: "busy"}),
	}
	var pending []int
	for i := range log {
		if d, ok := pendingApproval(log, i); ok {
			if d != asked {
				t.Errorf("pending %+v", d)
			}
			pending = append(pending, i)
		}
	}
	if diff := cmp.Diff([]int{4}, pending); diff != "" {
		t.Errorf("pending approvals (-want +got):\n%s", diff)
	}
	for _, tt := range []struct {
		inputAt int64
		want    int
	}{{6, 5}, {5, 5}, {4, 2}, {1, 0}} {
		if got := resumeCut(log, tt.inputAt); got != tt.want {
			t.Errorf("resumeCut(inputAt %d) = %d, want %d", tt.inputAt, got, tt.want)
		}
	}
}

func TestApprovalRenderPause(t *testing.T) {
	asked := longhaul.ApprovalRequiredData{ToolCallID: "c1", Name: "place_order", Arguments: `{}`, Target: "POST shop.test/orders"}
	prompt := `**Approval needed:** the agent wants to call ` + "`place_order` (`POST shop.test/orders`)" + `.\n\nReply ` + "`approve` to let it run or `deny`" + ` to refuse it, or write a reply to tell it what to do instead.`
	for _, owui := range []bool{false, true} {
		r := newRenderer("c1", "assistant", 7, owui)
		var out []string
		add := func(fs []any) {
			for _, f := range fs {
				b, _ := jsonMarshal(f)
				out = append(out, b)
			}
		}
		add(r.render(ev(longhaul.EventContent, longhaul.ContentData{Text: "Sure.", Call: "turn-1"})))
		add(r.pause(asked))
		add(r.finishFrames(false))
		want := []string{
			chunkHead + `"choices":[{"index":0,"delta":{"role":"assistant","content":"Sure."},"finish_reason":null}]}`,
			chunkHead + `"choices":[{"index":0,"delta":{"content":"\n\n` + prompt + `"},"finish_reason":null}]}`,
		}
		if owui {
			want = append(want, `{"event":{"type":"status","data":{"description":"Waiting for your approval: place_order · POST shop.test/orders","done":true}}}`)
		}
		want = append(want, chunkHead+`"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
		if diff := cmp.Diff(want, out); diff != "" {
			t.Errorf("open webui %v: frames (-want +got):\n%s", owui, diff)
		}
	}
	r := newRenderer("c1", "assistant", 7, true)
	got := r.render(ev(longhaul.EventApproval, longhaul.ApprovalData{ToolCallID: "c1", Name: "place_order", Decision: "denied"}))
	if diff := cmp.Diff([]any{wire.NewStatusFrame("Denied: place_order", false)}, got); diff != "" {
		t.Errorf("approval frames (-want +got):\n%s", diff)
	}
}

func TestApprovalAskedAndTurns(t *testing.T) {
	prompt := approvalPrompt(longhaul.ApprovalRequiredData{Name: "x"}, "run-1")
	msgs := func(ms ...longhaul.Message) []longhaul.Message { return ms }
	u := func(s string) longhaul.Message { return longhaul.Message{Role: longhaul.RoleUser, Content: s} }
	a := func(s string) longhaul.Message { return longhaul.Message{Role: longhaul.RoleAssistant, Content: s} }
	tests := []struct {
		name  string
		msgs  []longhaul.Message
		reply bool
		asked bool
	}{
		{"first message", msgs(u("hi")), false, false},
		{"answers a prompt", msgs(u("order"), a(prompt), u("yes")), true, true},
		{"answers an answer", msgs(u("order"), a("done"), u("thanks")), true, false},
		{"a later prompt", msgs(u("order"), a(prompt), u("yes"), a("done"), u("thanks")), true, false},
	}
	for _, tt := range tests {
		if got := replyTo(tt.msgs) != nil; got != tt.reply {
			t.Errorf("%s: replyTo = %v, want %v", tt.name, got, tt.reply)
		}
		if got := askedForApproval(tt.msgs); got != tt.asked {
			t.Errorf("%s: askedForApproval = %v, want %v", tt.name, got, tt.asked)
		}
	}
	id := contract.ChatRunID("c", 2, "m")
	if !ofTurn(id, "c", 2) || ofTurn(id, "c", 1) || ofTurn(contract.ChatRunID("c", 20, ""), "c", 2) || !ofTurn(contract.ChatRunID("c", 2, ""), "c", 2) {
		t.Errorf("ofTurn misreads %q", id)
	}
}

func TestApprovalWhichRunAnswers(t *testing.T) {
	waiting := func(user, tool string) contract.RunState {
		return contract.RunState{User: user, Status: contract.StatusWaiting, Waiting: &contract.Waiting{Kind: "approval", Tool: tool}}
	}
	orderPrompt := approvalPrompt(longhaul.ApprovalRequiredData{Name: "place_order", Arguments: `{"item":"book"}`}, "run-1")
	tests := []struct {
		name   string
		id     string
		st     contract.RunState
		turn   int
		prompt string
		want   bool
	}{
		{"answers the prompt of the turn before", contract.ChatRunID("c", 1, "m1"), waiting("u1", "place_order"), 2, orderPrompt, true},
		{"answers a later prompt of an older run", contract.ChatRunID("c", 1, "m1"), waiting("u1", "place_order"), 3, orderPrompt, true},
		{"the prompt names another tool", contract.ChatRunID("c", 1, "m1"), waiting("u1", "place"), 2, orderPrompt, false},
		{"another user's run", contract.ChatRunID("c", 1, "m1"), waiting("u2", "place_order"), 2, orderPrompt, false},
		{"a run that waits for nothing", contract.ChatRunID("c", 1, "m1"), contract.RunState{User: "u1"}, 2, orderPrompt, false},
		{"its own turn (retry, regenerate)", contract.ChatRunID("c", 2, "m2"), waiting("u1", "place_order"), 2, orderPrompt, false},
		{"a later turn (an edited branch)", contract.ChatRunID("c", 4, "m4"), waiting("u1", "place_order"), 2, orderPrompt, false},
		{"another chat", contract.ChatRunID("d", 1, "m1"), waiting("u1", "place_order"), 2, orderPrompt, false},
		{"no prompt: the turn before, cut off before its prompt", contract.ChatRunID("c", 2, "m2"), waiting("u1", "place_order"), 3, "", true},
		{"no prompt: a stale run of an older turn", contract.ChatRunID("c", 1, "m1"), waiting("u1", "place_order"), 3, "", false},
	}
	for _, tt := range tests {
		if got := answers(tt.id, tt.st, "c", "u1", tt.turn, tt.prompt); got != tt.want {
			t.Errorf("%s: answers = %v, want %v", tt.name, got, tt.want)
		}
	}
	waitingOf := runs.Filter{Owner: "u1", Chat: "o'chat", Status: contract.StatusWaiting}
	if got, want := waitingOf.Query(), `WorkflowType = 'AgentWorkflow' AND LonghaulUser = 'u1' AND LonghaulChat = 'o\'chat' AND LonghaulStatus = 'waiting' AND ExecutionStatus = 'Running'`; got != want {
		t.Errorf("the query of a chat's waiting runs = %s\nwant %s", got, want)
	}
}

func jsonMarshal(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}
