package runs

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/identity"
)

// A message while a run is going. A chat's new user message that finds a
// run of an earlier message of the same chat still running is handled by
// its multitask strategy (contract.Multitask*). The chat's running runs
// are found through Temporal's visibility (the chat and user search
// attributes), never the API's memory, so a strategy works the same
// whichever API process took the first message, and after a restart.

// ErrRunInProgress: the reject strategy refused a message because a run of
// its chat is still running; the *Refusal names the run.
var ErrRunInProgress = errors.New("a run of the chat is in progress")

// MemoChatTurn holds, on a run that answers a chat's message (not a
// client's background request), the message's turn: a chat route's count
// of user messages, 0 for a runs API run. Only runs that carry it are
// found as a chat's running runs.
const MemoChatTurn = "chat_turn"

// DefaultRunsMultitask is the runs API's strategy when a request with a
// metadata.chat_id names none: LangGraph's Agent Server's default too.
const DefaultRunsMultitask = contract.MultitaskEnqueue

// DefaultChatMultitask is the chat routes' strategy when the operator sets
// none: Open WebUI lets a user send again only once the answer stopped
// (its Stop button closes the connection; the run goes on), and a user who
// stopped and typed again wants the new message answered now.
const DefaultChatMultitask = contract.MultitaskInterrupt

// maxChatRuns bounds the running runs of one chat looked at.
const maxChatRuns = 20

// Multitask is a chat's new message, to be checked against the chat's
// running runs.
type Multitask struct {
	// Strategy is one of contract.MultitaskStrategies.
	Strategy string
	// Chat is the chat's key (scoped to its principal), Owner the
	// principal's.
	Chat, Owner string
	// Turn is the message's turn on a chat route, 0 on the runs API. On a
	// chat route only the runs of earlier turns are the chat's previous
	// messages: a run of the same turn is a retry's or a Regenerate's.
	Turn int
	// Text is the message, what steer hands the running run.
	Text string
	// Prepend makes a run that follows another continue its conversation
	// (the runs API's requests carry no history; a chat route's do).
	Prepend bool
	// UpdateID, when set, makes a repeated steer of the same message take
	// effect once.
	UpdateID string
}

// MultitaskOutcome is what a strategy did.
type MultitaskOutcome struct {
	// Strategy is the strategy applied: the one asked for, or enqueue
	// when a run refused a steer. Empty when no run of the chat was
	// running: the message starts its run as any other.
	Strategy string
	// Run is the chat's running run the strategy acted on (the newest).
	Run string
	// Steered says the message went to Run, which answers it: no run
	// starts. At is the offset of the event that says Run took it.
	Steered bool
	At      int64
	// Follows is what the new run's input carries (contract.AgentInput's
	// Follows), nil for nothing.
	Follows *contract.Follow
}

// Multitask applies m's strategy to the chat's running runs of earlier
// messages (see MultitaskOutcome): reject refuses (ErrRunInProgress);
// enqueue has the new run follow the newest of them; interrupt cancels
// them all and has the new run follow the newest; steer hands the message
// to the newest (enqueue when it takes none now); rollback deletes them
// all and has the new run forget them. Its errors are *Refusal.
func (g *Gate) Multitask(ctx context.Context, m Multitask) (MultitaskOutcome, error) {
	if !slices.Contains(contract.MultitaskStrategies, m.Strategy) {
		return MultitaskOutcome{}, refuse(ErrInvalid, "multitask_strategy: must be one of "+strings.Join(contract.MultitaskStrategies, ", "))
	}
	if m.Turn == 1 || !LiteralOK(m.Chat) || !LiteralOK(m.Owner) {
		// A chat's first message on a chat route has no earlier message
		// whose run could still go: not asking visibility keeps a new
		// chat's answer as quick as it was. Visibility cannot match the
		// other values exactly (see LiteralOK).
		return MultitaskOutcome{}, nil
	}
	running, err := g.chatRunning(ctx, m)
	if err != nil || len(running) == 0 {
		return MultitaskOutcome{}, err
	}
	newest := running[len(running)-1]
	out := MultitaskOutcome{Strategy: m.Strategy, Run: newest}
	switch m.Strategy {
	case contract.MultitaskReject:
		return out, &Refusal{Kind: ErrRunInProgress, Message: "run " + newest + " of this chat is still running; " +
			"wait for it to end, cancel it, or send the message with another multitask_strategy (" +
			strings.Join(contract.MultitaskStrategies[1:], ", ") + ")"}
	case contract.MultitaskSteer:
		res, err := g.svc.Steer(ctx, newest, m.UpdateID, contract.SteerRequest{Text: m.Text})
		if err == nil {
			out.Steered, out.At = true, res.At
			return out, nil
		}
		var f *Failure
		if !errors.As(err, &f) && !errors.Is(err, ErrNotFound) {
			return out, refuse(ErrUnreachable, "could not hand run "+newest+" the message: "+err.Error())
		}
		g.log.Info("the running run took no message; it is queued instead", "run", newest, "reason", err.Error())
		out.Strategy = contract.MultitaskEnqueue
	case contract.MultitaskInterrupt:
		for _, id := range running {
			if err := g.svc.Cancel(ctx, id); err != nil && !errors.Is(err, ErrNotFound) {
				return out, refuse(ErrUnreachable, "could not cancel run "+id+": "+err.Error())
			}
		}
	case contract.MultitaskRollback:
		return g.rollback(ctx, m, running, out)
	}
	out.Follows = &contract.Follow{Run: newest, Prepend: m.Prepend}
	return out, nil
}

// rollback deletes the chat's running runs; the new run forgets their
// recorded turns and, on the runs API, continues the conversation of the
// run the oldest of them followed.
func (g *Gate) rollback(ctx context.Context, m Multitask, running []string, out MultitaskOutcome) (MultitaskOutcome, error) {
	out.Follows = &contract.Follow{Forget: running, Prepend: m.Prepend}
	if m.Prepend {
		in, _, err := g.svc.FirstInput(ctx, running[0])
		if err == nil && in.Follows != nil && !slices.Contains(running, in.Follows.Run) {
			out.Follows.Run = in.Follows.Run
		}
	}
	for _, id := range running {
		if err := g.svc.Delete(ctx, id); err != nil && !errors.Is(err, ErrNotFound) {
			return out, refuse(ErrUnreachable, "could not delete run "+id+": "+err.Error())
		}
	}
	return out, nil
}

// chatRunning lists the ids of the chat's running runs of earlier
// messages, oldest first.
func (g *Gate) chatRunning(ctx context.Context, m Multitask) ([]string, error) {
	page, err := g.svc.List(ctx, Filter{Owner: m.Owner, Chat: m.Chat, Running: true}, maxChatRuns, nil)
	if err != nil {
		return nil, refuse(ErrUnreachable, "could not list the chat's runs: "+err.Error())
	}
	var found []Info
	for _, info := range page.Runs {
		turn, err := strconv.Atoi(info.Memo[MemoChatTurn])
		if err != nil || info.Memo[MemoOwner] != m.Owner || info.Status != ExecRunning {
			continue // a background request's run, or one from before
		}
		if m.Turn > 0 && turn >= m.Turn {
			continue // a retry's or a Regenerate's run of this turn
		}
		found = append(found, info)
	}
	slices.SortStableFunc(found, func(a, b Info) int {
		switch {
		case a.Started == nil || b.Started == nil:
			return 0
		case a.Started.Before(*b.Started):
			return -1
		case b.Started.Before(*a.Started):
			return 1
		}
		return 0
	})
	ids := make([]string, len(found))
	for i, info := range found {
		ids[i] = info.ID
	}
	return ids, nil
}

// ChatOf is the chat whose message run input in answers: a chat route's
// chat (ChatID), or a runs API run's metadata.chat_id scoped to its
// principal as the chat routes scope theirs (so the same id names the same
// chat on both); empty for a client's background request or no chat.
func ChatOf(in contract.AgentInput) string {
	return chatKey(in.Background, in.ChatID, in.Metadata, in.User)
}

// chatKey is ChatOf of a run's parts: none for a background task, else
// its chat turn's chat, else its metadata's chat_id under its user.
func chatKey(background bool, chat string, metadata map[string]string, user longhaul.User) string {
	switch {
	case background:
		return ""
	case chat != "":
		return chat
	case metadata["chat_id"] != "":
		return identity.ChatKey(user.Key(), metadata["chat_id"])
	}
	return ""
}

// chatMemo marks a run that answers a chat's message: its chat search
// attribute and its turn (MemoChatTurn), by which the chat's next message
// finds it.
func chatMemo(st *Start) {
	if st.Chat = ChatOf(st.Input); st.Chat != "" {
		st.Memo[MemoChatTurn] = strconv.Itoa(st.Input.Turn)
	}
}
