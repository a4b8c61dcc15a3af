package activities

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/internal/textcut"
	"go.temporal.io/sdk/activity"
)

// Open WebUI sends a chat's earlier answers back as plain text: the model
// of the next turn would no longer know which tools it called, with which
// arguments, or what came back. So every finished chat turn stores its real
// timeline (RecordTurn), and the next turn of the chat, before its first
// model call, puts it back where the client's history has the answer's text
// (RestoreConversation).

// DefaultRestoreChars bounds the characters of restored tool results when
// Activities.RestoreChars is zero.
const DefaultRestoreChars = 32000

// summaryKind is the blob kind of a turn's conversation summary.
const summaryKind = "summary"

// RecordTurn stores a chat turn's timeline, keyed by the run (the workflow
// id) and each message's number, so a retry stores nothing twice. A worker
// without a store records nothing.
func (a *Activities) RecordTurn(ctx context.Context, req contract.RecordTurnRequest) error {
	if a.Blobs == nil || req.ChatID == "" {
		return nil
	}
	return a.recordTurn(ctx, activity.GetInfo(ctx).WorkflowExecution.ID, req)
}

func (a *Activities) recordTurn(ctx context.Context, run string, req contract.RecordTurnRequest) error {
	t := store.Turn{
		User: req.User, Chat: req.ChatID, Run: run, Turn: req.Turn, Agent: req.Agent, Status: req.Status,
		AnswerKey: req.AnswerKey, VisibleKey: req.VisibleKey,
		Title:        req.Title,
		PromptTokens: int64(req.Usage.PromptTokens), CompletionTokens: int64(req.Usage.CompletionTokens),
		TotalTokens: int64(req.Usage.TotalTokens),
		StartedAt:   req.StartedAt, FinishedAt: req.FinishedAt,
	}
	for i, m := range req.Messages {
		tm := contract.TimelineMessage{Role: m.Role, Content: m.Content, Name: m.Name, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID}
		if c, ok := req.Calls[m.ToolCallID]; ok && m.Role == longhaul.RoleTool {
			tm.Ref, tm.Truncated, tm.Error, tm.Status = c.Ref, c.Truncated, c.Error, c.Status
		}
		b, err := json.Marshal(tm)
		if err != nil {
			return nonRetryable(longhaul.ErrTypeModelRejected, fmt.Errorf("encode message %d: %w", i, err))
		}
		t.Messages = append(t.Messages, store.TurnMessage{Seq: req.FirstSeq + i, Data: b})
	}
	if req.Summary != nil {
		b, err := json.Marshal(req.Summary)
		if err != nil {
			return nonRetryable(longhaul.ErrTypeBadInput, fmt.Errorf("encode the summary: %w", err))
		}
		if _, err := a.Blobs.Put(ctx, store.Blob{Run: run, Kind: summaryKind, Name: "conversation", Data: b}); err != nil {
			return fmt.Errorf("store the chat's summary: %w", err)
		}
	}
	if err := a.Blobs.PutTurn(ctx, t); err != nil {
		return fmt.Errorf("record turn %d of the chat: %w", req.Turn, err)
	}
	return nil
}

// summaryLookback bounds how many of the chat's latest turns are asked for
// a summary.
const summaryLookback = 3

// latestSummary is the summary the chat's latest turns kept, newest first,
// or nil.
func (a *Activities) latestSummary(ctx context.Context, turns []store.Turn) (*longhaul.Summary, error) {
	turns = slices.Clone(turns)
	slices.SortFunc(turns, func(x, y store.Turn) int { return cmp.Compare(y.Turn, x.Turn) })
	for _, t := range turns[:min(len(turns), summaryLookback)] {
		blobs, err := a.Blobs.List(ctx, t.Run)
		if err != nil {
			return nil, fmt.Errorf("list the turn's blobs: %w", err)
		}
		for i := len(blobs) - 1; i >= 0; i-- {
			if blobs[i].Kind != summaryKind {
				continue
			}
			b, err := a.Blobs.Get(ctx, blobs[i].Ref)
			if err != nil {
				return nil, fmt.Errorf("read the chat's summary: %w", err)
			}
			var s longhaul.Summary
			if err := json.Unmarshal(b.Data, &s); err != nil {
				a.log.Warn("a stored chat summary is damaged; the next compaction writes another", "run", t.Run, "error", err)
				return nil, nil
			}
			return &s, nil
		}
	}
	return nil, nil
}

// RestoreConversation replaces each assistant message of the history that
// matches a stored turn of the chat (its final answer, or all it showed,
// cards stripped and whitespace normalised) by that turn's timeline: the
// assistant messages with their tool calls, the tool results, the final
// answer. A message that matches nothing (the user edited it) stays as
// sent. Restored tool results share the budget of RestoreChars: the newest
// turn's are kept whole, older ones are cut, oldest first, and the cut says
// so. A worker without a store restores nothing.
func (a *Activities) RestoreConversation(ctx context.Context, req contract.RestoreRequest) (contract.RestoreResult, error) {
	if a.Blobs == nil || req.ChatID == "" {
		return contract.RestoreResult{}, nil
	}
	turns, err := a.Blobs.Turns(ctx, req.User, req.ChatID, store.TurnQuery{})
	if err != nil {
		return contract.RestoreResult{}, fmt.Errorf("read the chat's turns: %w", err)
	}
	summary, err := a.latestSummary(ctx, turns)
	if err != nil {
		return contract.RestoreResult{}, err
	}
	matched := matchTurns(req.Messages, turns)
	if len(matched) == 0 {
		return contract.RestoreResult{Summary: summary}, nil
	}
	runs := make([]string, 0, len(matched))
	for _, run := range matched {
		runs = append(runs, run)
	}
	stored, err := a.Blobs.Turns(ctx, req.User, req.ChatID, store.TurnQuery{Runs: runs, Messages: true})
	if err != nil {
		return contract.RestoreResult{}, fmt.Errorf("read the chat's turns: %w", err)
	}
	timelines := map[string][]contract.TimelineMessage{}
	for _, t := range stored {
		tl, err := decodeTimeline(t.Messages)
		if err != nil {
			a.log.Warn("a stored chat turn is damaged; its answer stays as the client sent it", "run", t.Run, "error", err)
			continue
		}
		if hasToolCalls(tl) {
			timelines[t.Run] = tl
		}
	}
	budget := a.RestoreChars
	if budget <= 0 {
		budget = DefaultRestoreChars
	}
	res := restore(req.Messages, matched, timelines, budget)
	res.Summary = summary
	return res, nil
}

// matchTurns finds, for each assistant message of the history, the stored
// turn whose answer it is: by index in msgs, the run. Each turn answers one
// message at most; among turns with the same text the oldest unused one is
// taken.
func matchTurns(msgs []longhaul.Message, turns []store.Turn) map[int]string {
	byKey := map[string][]string{}
	for _, t := range turns {
		for _, k := range []string{t.VisibleKey, t.AnswerKey} {
			if k != "" {
				byKey[k] = append(byKey[k], t.Run)
			}
		}
	}
	used := map[string]bool{}
	out := map[int]string{}
	for i, m := range msgs {
		// A message that already carries tool calls is a client's own tool
		// exchange.
		if m.Role != longhaul.RoleAssistant || len(m.ToolCalls) > 0 {
			continue
		}
		for _, run := range byKey[longhaul.MatchKey(m.Content)] {
			if !used[run] {
				used[run] = true
				out[i] = run
				break
			}
		}
	}
	return out
}

func decodeTimeline(msgs []store.TurnMessage) ([]contract.TimelineMessage, error) {
	out := make([]contract.TimelineMessage, 0, len(msgs))
	for i, m := range msgs {
		if m.Seq != i {
			return nil, fmt.Errorf("message %d is missing", i)
		}
		var tm contract.TimelineMessage
		if err := json.Unmarshal(m.Data, &tm); err != nil {
			return nil, fmt.Errorf("message %d: %w", m.Seq, err)
		}
		out = append(out, tm)
	}
	if len(out) == 0 || out[len(out)-1].Role != longhaul.RoleAssistant {
		return nil, errors.New("the turn has no final answer")
	}
	return out, nil
}

func hasToolCalls(tl []contract.TimelineMessage) bool {
	for _, m := range tl {
		if len(m.ToolCalls) > 0 {
			return true
		}
	}
	return false
}

// restore builds the history with the matched answers replaced by their
// timelines, and bounds the restored tool results.
func restore(msgs []longhaul.Message, matched map[int]string, timelines map[string][]contract.TimelineMessage, budget int) contract.RestoreResult {
	type result struct {
		rep, msg int // the replacement, the message in it
		ref      string
	}
	var res contract.RestoreResult
	var results []result
	for i := range msgs {
		tl, ok := timelines[matched[i]]
		if !ok {
			continue
		}
		rep := contract.Replacement{Index: i}
		for _, tm := range tl {
			if tm.Role == longhaul.RoleTool {
				results = append(results, result{rep: len(res.Replaced), msg: len(rep.Messages), ref: tm.Ref})
			}
			rep.Messages = append(rep.Messages, longhaul.Message{Role: tm.Role, Content: tm.Content, Name: tm.Name, ToolCalls: tm.ToolCalls, ToolCallID: tm.ToolCallID})
		}
		res.Replaced = append(res.Replaced, rep)
	}
	res.Turns = len(res.Replaced)
	if res.Turns == 0 {
		return contract.RestoreResult{}
	}
	left := budget
	for j := len(results) - 1; j >= 0; j-- {
		r := results[j]
		m := &res.Replaced[r.rep].Messages[r.msg]
		size := utf8.RuneCountInString(m.Content)
		if r.rep == res.Turns-1 || size <= left {
			// The newest turn's results are kept whole.
			left = max(left-size, 0)
			continue
		}
		m.Content = cutResult(m.Content, left, size, r.ref)
		left = 0
		res.Cut++
	}
	return res
}

// cutResult keeps the first keep runes of an older tool result and says
// what happened to the rest.
func cutResult(content string, keep, size int, ref string) string {
	note := fmt.Sprintf("[Longhaul left out %d of the %d characters of this earlier tool result to keep the restored conversation within its budget (LONGHAUL_RESTORE_CHARS)", size-keep, size)
	if ref != "" {
		note += "; the whole result is stored as " + ref
	}
	note += ".]"
	if keep <= 0 {
		return note
	}
	return textcut.Runes(content, keep) + "\n" + note
}
