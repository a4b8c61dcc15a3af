package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/longhaul-dev/longhaul/internal/sqldb"
)

// The conversation store keeps each finished chat turn's real timeline —
// the assistant messages with their tool calls, the tool results, the final
// answer — so a later turn of the same chat can give the model back what it
// actually did, and the owner can read and delete the chat. A turn is one
// run; it stores only its own messages, never a copy of the conversation.
// Everything is keyed by the user and the chat, so one user's chats never
// meet another's.

// ErrNoConversation is returned when the user has no stored chat with the
// id.
var ErrNoConversation = errors.New("conversation not found")

// Conversation is one stored chat of a user.
type Conversation struct {
	User string
	Chat string
	// Title is the start of the chat's first stored user message.
	Title string
	// Turns is how many turns are stored.
	Turns     int
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ConversationCursor is where a page of ListConversations starts: after
// the conversation updated at UpdatedAt with id Chat, newest first.
type ConversationCursor struct {
	UpdatedAt time.Time
	Chat      string
}

// Turn is one stored turn of a chat: the run that answered it.
type Turn struct {
	User string
	Chat string
	// Run is the run's workflow id; a turn is stored once per run.
	Run string
	// Turn is the turn's number in the chat as the client counted it.
	Turn   int
	Agent  string
	Status string
	// AnswerKey and VisibleKey identify, whitespace normalised and hashed,
	// the run's final answer and the whole text the client was shown (every
	// assistant message's text, in order): what a later request's history
	// is matched against.
	AnswerKey  string
	VisibleKey string
	// Title is the start of the turn's user message.
	Title            string
	PromptTokens     int64
	CompletionTokens int64
	TotalTokens      int64
	StartedAt        time.Time
	FinishedAt       time.Time
	// Messages are the turn's timeline; Turns fills them in only when
	// asked to.
	Messages []TurnMessage
}

// TurnMessage is one message of a turn's timeline, as the caller encoded
// it (JSON); Seq orders the turn's messages from 0.
type TurnMessage struct {
	Seq  int
	Data []byte
}

// TurnQuery says which of a chat's turns Turns returns and whether with
// their messages.
type TurnQuery struct {
	// Runs, when not empty, keeps only these runs' turns.
	Runs []string
	// Messages asks for each turn's messages.
	Messages bool
}

// Conversations keeps chats' turns.
type Conversations interface {
	// PutTurn stores a turn and its messages. Putting the same turn again
	// (a retried activity) updates the turn's row and adds only the
	// messages whose Seq it did not have, so a turn may also be stored in
	// parts. With WithMaxConversations, the user's least recently updated
	// chats beyond the cap are removed (see there).
	PutTurn(ctx context.Context, t Turn) error
	// Turns returns the chat's turns, oldest first.
	Turns(ctx context.Context, user, chat string, q TurnQuery) ([]Turn, error)
	// Conversation returns one chat of the user, or ErrNoConversation.
	Conversation(ctx context.Context, user, chat string) (Conversation, error)
	// ListConversations returns up to limit chats of the user, most
	// recently updated first, after the cursor when it is not nil.
	ListConversations(ctx context.Context, user string, limit int, after *ConversationCursor) ([]Conversation, error)
	// DeleteConversation removes the chat's turns, their messages, the
	// blobs of their runs and the backlog items the chat added, and returns the runs it removed; a chat the user
	// does not have is ErrNoConversation.
	DeleteConversation(ctx context.Context, user, chat string) ([]string, error)
	// DeleteRunTurns removes the stored turns of the run (a workflow id),
	// whoever's chats they are in, with their messages, and every chat
	// left without a turn; it returns how many turns it removed. The
	// retention job calls it for a run Temporal no longer keeps, so a
	// chat's stored timeline lasts as long as its runs' histories.
	DeleteRunTurns(ctx context.Context, run string) (int64, error)
}

// evictChat are the statements that remove one of a user's stored chats
// with its turns and messages, in the order they must run; each takes the
// user and the chat id.
var evictChat = func() []string {
	var out []string
	for _, table := range []string{"conversation_messages", "conversation_turns", "conversations"} {
		out = append(out, `DELETE FROM `+table+` WHERE user_key = ? AND chat_id = ?`)
	}
	return out
}()

// checkTurn refuses a turn that the backends could not store alike.
func checkTurn(t Turn) error {
	if t.User == "" || t.Chat == "" || t.Run == "" {
		return errors.New("put turn: user, chat and run are required")
	}
	for _, f := range []struct{ field, value string }{
		{"user", t.User}, {"chat", t.Chat}, {"run", t.Run}, {"agent", t.Agent}, {"status", t.Status}, {"title", t.Title},
	} {
		if !sqldb.ValidText(f.value) {
			return fmt.Errorf("put turn: %s %q is not UTF-8 text without NUL", f.field, f.value)
		}
	}
	for _, m := range t.Messages {
		if !sqldb.ValidText(string(m.Data)) {
			return fmt.Errorf("put turn %s: message %d is not UTF-8 text without NUL", t.Run, m.Seq)
		}
	}
	return nil
}

// attachMessages reads rows of (run_id, seq, data), in seq order per run,
// into the messages of the turns they belong to.
func attachMessages(rs *sql.Rows, turns []Turn) error {
	index := make(map[string]int, len(turns))
	for i, t := range turns {
		index[t.Run] = i
	}
	for rs.Next() {
		var run, data string
		var seq int
		if err := rs.Scan(&run, &seq, &data); err != nil {
			return err
		}
		if i, ok := index[run]; ok {
			turns[i].Messages = append(turns[i].Messages, TurnMessage{Seq: seq, Data: []byte(data)})
		}
	}
	return rs.Err()
}
