package workflows

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/textcut"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// A chat turn's real timeline is kept in the conversation store: the turn
// restores the earlier turns' tool calls and results before its first model
// call (RestoreConversation) and records its own when it ends (RecordTurn),
// before its done event, so the chat's next request finds it.

// versionConversationStore marks runs that restore and record chat turns;
// runs started before it do neither.
const versionConversationStore = "conversation-store"

// recordLimit bounds the message text a RecordTurn request carries, well
// under Temporal's payload limit; past it tool results are shortened (a
// claim-checked one keeps its reference).
const recordLimit = 512 << 10

// keepsConversation reports whether the run restores and records its chat's
// turns: a chat turn (not a client's background request) of a run started
// with this code.
func (r *run) keepsConversation(ctx workflow.Context) bool {
	if r.in.ChatID == "" || r.in.Background {
		return false
	}
	return workflow.GetVersion(ctx, versionConversationStore, workflow.DefaultVersion, 1) >= 1
}

// restoreConversation gives the model back what earlier turns of the chat
// did. The activity's summary counts the earlier answers it looks at; the
// thinking event says how many it restored. A failure leaves the history as
// the client sent it.
func (r *run) restoreConversation(ctx workflow.Context) error {
	if !r.keepsConversation(ctx) {
		return nil
	}
	answers := 0
	for _, m := range r.in.Messages {
		if m.Role == longhaul.RoleAssistant && len(m.ToolCalls) == 0 {
			answers++
		}
	}
	if answers == 0 {
		return nil
	}
	var res contract.RestoreResult
	err := workflow.ExecuteLocalActivity(conversationOptions(ctx, fmt.Sprintf("conversation restore %d turns", answers)),
		a.RestoreConversation, contract.RestoreRequest{
			User: r.in.User.Key(), ChatID: r.in.ChatID, Messages: r.in.Messages,
		}).Get(ctx, &res)
	switch {
	case temporal.IsCanceledError(err):
		return err
	case err != nil:
		workflow.GetLogger(ctx).Warn("restoring the chat's earlier turns failed; the history stays as sent", "error", err)
		return nil
	case res.Turns == 0:
		r.reuseSummary(ctx, res.Summary)
		return nil
	}
	r.in.Messages = res.Apply(r.in.Messages)
	r.reuseSummary(ctx, res.Summary)
	msg := fmt.Sprintf("Restored the tool calls of %d earlier turn(s)", res.Turns)
	if res.Cut > 0 {
		msg += fmt.Sprintf(" (%d older result(s) shortened)", res.Cut)
	}
	r.think(ctx, msg)
	return nil
}

// reuseSummary keeps the summary an earlier turn of the chat made of its
// first messages, when the history still starts with them (see
// longhaul.SummaryKey), so the turn does not compact them again.
func (r *run) reuseSummary(ctx workflow.Context, s *longhaul.Summary) {
	if s == nil || s.Covers <= 0 || s.Covers > len(r.in.Messages) || longhaul.SummaryKeyBy(r.in.Messages[:s.Covers], turnKey) != s.Key {
		return
	}
	r.summary = s
	r.think(ctx, fmt.Sprintf("Reused the summary of the chat's first %d messages", s.Covers))
}

// recordTurn stores the turn's messages from the first not yet stored:
// all of them when the turn ends, those so far when it continues as new.
// A failure is logged: the answer stands, only its restoration is lost.
func (r *run) recordTurn(ctx workflow.Context, msgs []longhaul.Message, status string, final bool) {
	req := contract.RecordTurnRequest{
		User: r.in.User.Key(), ChatID: r.in.ChatID, Turn: r.in.Turn, Agent: r.in.Agent, Status: status,
		Title: turnTitle(longhaul.LastUserText(r.in.Messages)), Messages: boundRecord(msgs), FirstSeq: r.recorded,
		Usage: r.usage, StartedAt: r.state.StartedAt, FinishedAt: workflow.Now(ctx),
	}
	if req.StartedAt.IsZero() {
		req.StartedAt = workflow.GetInfo(ctx).WorkflowStartTime
	}
	calls := map[string]bool{}
	var visible []string
	var events []longhaul.Event
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			calls[c.ID] = true
		}
		if m.Role == longhaul.RoleAssistant && m.Content != "" {
			visible = append(visible, m.Content)
		}
	}
	for _, e := range r.log.events {
		switch e.Type {
		case longhaul.EventToolStart, longhaul.EventToolOutput, longhaul.EventApprovalRequired, longhaul.EventApproval:
			var d struct {
				ToolCallID string `json:"tool_call_id"`
			}
			if e.Decode(&d) == nil && calls[d.ToolCallID] {
				events = append(events, e)
			}
		}
	}
	// What the store keeps of the events and texts, not the events and
	// texts themselves: the messages already carry the calls' arguments
	// and results and the answers.
	req.Calls = callRecords(events)
	if final {
		req.Summary = r.summary
	}
	if final && len(msgs) > 0 {
		req.VisibleKey = turnKey(strings.Join(visible, "\n"))
		req.AnswerKey = turnKey(msgs[len(msgs)-1].Content)
	}
	summary := fmt.Sprintf("conversation store turn %d", r.in.Turn)
	if !final {
		summary += " (part)"
	}
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	if err := workflow.ExecuteLocalActivity(conversationOptions(dctx, summary), a.RecordTurn, req).Get(dctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn("storing the chat turn failed; later turns will not restore its tool calls", "error", err)
	}
}

// turnShown are what a run takes out of a text before it keys it, in that
// order: shown reasoning (Open WebUI's reasoning block, a <think> block at
// the start), then tool cards. The edge that reads a client's history
// takes them out already (internal/wire.AnswerText), so on what reaches a
// run turnKey is longhaul.MatchKey; the run keeps taking them out because
// the runs recorded before that edge keyed their texts so, and a version
// marker to stop would cost every chat turn two history events (the
// marker and the SDK's TemporalChangeVersion upsert). The patterns are
// wire.AnswerText's, kept here because workflows may not import the wire
// layer (layers_test.go).
var turnShown = []*regexp.Regexp{
	regexp.MustCompile(`(?s)<details type="reasoning"[^>]*>.*?</details>\n?|\A\s*<think>.*?</think>\s*`),
	regexp.MustCompile(`(?s)<details type="tool_calls"[^>]*>.*?</details>\n?`),
}

// turnKey is what a run keys a text with (a recorded answer, a user's
// words under a summary): the key of text with turnShown taken out.
func turnKey(text string) string {
	for _, re := range turnShown {
		text = re.ReplaceAllString(text, "")
	}
	return longhaul.MatchKey(text)
}

// boundRecord keeps the messages' text within recordLimit by shortening
// tool results, longest first.
func boundRecord(msgs []longhaul.Message) []longhaul.Message {
	if textSize(msgs) <= recordLimit {
		return msgs
	}
	out := append([]longhaul.Message(nil), msgs...)
	for keep := 16000; keep >= 500 && textSize(out) > recordLimit; keep /= 2 {
		for i, m := range out {
			if m.Role == longhaul.RoleTool && len(m.Content) > keep {
				out[i].Content = strings.ToValidUTF8(m.Content[:keep], "") + "\n[shortened for the conversation store]"
			}
		}
	}
	return out
}

// callRecords groups tool events (tool_start, approval_required, approval,
// tool_output) by call: what a RecordTurnRequest carries of them instead
// of the events, whose arguments and outputs the messages already hold.
func callRecords(events []longhaul.Event) map[string]contract.CallRecord {
	out := map[string]contract.CallRecord{}
	for _, e := range events {
		var d struct {
			ToolCallID string `json:"tool_call_id"`
			Decision   string `json:"decision"`
			Error      bool   `json:"error"`
			Truncated  bool   `json:"truncated"`
			Ref        string `json:"ref"`
		}
		if e.Decode(&d) != nil || d.ToolCallID == "" {
			continue
		}
		c := out[d.ToolCallID]
		s := contract.CallStatus{Type: string(e.Type), Time: e.Time, Detail: d.Decision}
		if e.Type == longhaul.EventToolOutput {
			c.Ref, c.Truncated, c.Error = d.Ref, d.Truncated, d.Error
			if d.Error {
				s.Detail = "error"
			}
		}
		c.Status = append(c.Status, s)
		out[d.ToolCallID] = c
	}
	return out
}

// titleRunes bounds a chat's title.
const titleRunes = 80

// turnTitle is the start of a user message, whitespace normalised, that titles
// its turn and chat.
func turnTitle(q string) string {
	s := strings.Join(strings.Fields(q), " ")
	s = textcut.Ellipsis(s, titleRunes+1)
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "")
}
