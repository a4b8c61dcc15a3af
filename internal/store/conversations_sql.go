package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/longhaul-dev/longhaul/internal/sqldb"
)

var _ Conversations = (*sqlStore)(nil)

func (s *sqlStore) PutTurn(ctx context.Context, t Turn) error {
	if err := checkTurn(t); err != nil {
		return err
	}
	now := s.db.Time(s.opts.now())
	err := s.db.Write(ctx, func(tx sqldb.Tx) error {
		if _, err := tx.ExecContext(ctx,
			`INSERT INTO conversations (user_key, chat_id, title, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
			 ON CONFLICT (user_key, chat_id) DO UPDATE SET
				updated_at = `+tx.Greatest()+`(conversations.updated_at, excluded.updated_at)`,
			t.User, t.Chat, t.Title, now, now); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx,
			`INSERT INTO conversation_turns (user_key, chat_id, run_id, turn, agent, status, answer_key, visible_key, title,
				prompt_tokens, completion_tokens, total_tokens, started_at, finished_at)
			 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			 ON CONFLICT (user_key, chat_id, run_id) DO UPDATE SET
				turn = excluded.turn, agent = excluded.agent, status = excluded.status,
				answer_key = excluded.answer_key, visible_key = excluded.visible_key,
				prompt_tokens = excluded.prompt_tokens, completion_tokens = excluded.completion_tokens,
				total_tokens = excluded.total_tokens, finished_at = excluded.finished_at`,
			t.User, t.Chat, t.Run, t.Turn, t.Agent, t.Status, t.AnswerKey, t.VisibleKey, t.Title,
			t.PromptTokens, t.CompletionTokens, t.TotalTokens, tx.Time(t.StartedAt), tx.Time(t.FinishedAt)); err != nil {
			return err
		}
		for _, m := range t.Messages {
			if _, err := tx.ExecContext(ctx,
				`INSERT INTO conversation_messages (user_key, chat_id, run_id, seq, data) VALUES (?, ?, ?, ?, ?)
				 ON CONFLICT DO NOTHING`, t.User, t.Chat, t.Run, m.Seq, string(m.Data)); err != nil {
				return fmt.Errorf("message %d: %w", m.Seq, err)
			}
		}
		return s.evict(ctx, tx, t.User)
	})
	if err != nil {
		return fmt.Errorf("put turn %s: %w", t.Run, err)
	}
	return nil
}

// evict removes the user's stored chats beyond the cap, if there is one.
func (s *sqlStore) evict(ctx context.Context, tx sqldb.Tx, user string) error {
	n := s.opts.maxChats
	if n <= 0 {
		return nil
	}
	// Counting first keeps the common case (under the cap) to one index
	// scan; the deletes run only when a new chat went over it.
	var have int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM conversations WHERE user_key = ?`, user).Scan(&have); err != nil {
		return fmt.Errorf("count chats: %w", err)
	}
	if have <= n {
		return nil
	}
	// The chats beyond the cap are the least recently updated: read them
	// off the (user_key, updated_at, chat_id) index from the old end and
	// delete each by its key, so a new chat at the cap costs a few index
	// lookups, not a scan of every message the user keeps.
	var old []string
	rows, err := tx.QueryContext(ctx, `SELECT chat_id FROM conversations WHERE user_key = ? ORDER BY updated_at, chat_id LIMIT ?`, user, have-n)
	if err != nil {
		return fmt.Errorf("evict chats beyond %d: %w", n, err)
	}
	for rows.Next() {
		var chat string
		if err := rows.Scan(&chat); err != nil {
			rows.Close()
			return fmt.Errorf("evict chats beyond %d: %w", n, err)
		}
		old = append(old, chat)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return fmt.Errorf("evict chats beyond %d: %w", n, err)
	}
	for _, chat := range old {
		for _, q := range evictChat {
			if _, err := tx.ExecContext(ctx, q, user, chat); err != nil {
				return fmt.Errorf("evict chat %s: %w", chat, err)
			}
		}
	}
	return nil
}

const turnColumns = `run_id, turn, agent, status, answer_key, visible_key, title, prompt_tokens, completion_tokens,
	total_tokens, started_at, finished_at`

func (s *sqlStore) Turns(ctx context.Context, user, chat string, q TurnQuery) ([]Turn, error) {
	out := []Turn{}
	if !sqldb.ValidText(user) || !sqldb.ValidText(chat) {
		return out, nil
	}
	where := ` WHERE user_key = ? AND chat_id = ?`
	args := []any{user, chat}
	if len(q.Runs) > 0 {
		where += ` AND run_id IN (` + sqldb.Placeholders(len(q.Runs)) + `)`
		args = append(args, sqldb.Args(q.Runs)...)
	}
	err := s.db.Read(ctx, func(tx sqldb.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT `+turnColumns+` FROM conversation_turns`+where+` ORDER BY started_at, run_id`, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			t := Turn{User: user, Chat: chat}
			if err := rows.Scan(&t.Run, &t.Turn, &t.Agent, &t.Status, &t.AnswerKey, &t.VisibleKey, &t.Title,
				&t.PromptTokens, &t.CompletionTokens, &t.TotalTokens,
				sqldb.TimeDest(&t.StartedAt), sqldb.TimeDest(&t.FinishedAt)); err != nil {
				return err
			}
			out = append(out, t)
		}
		if err := rows.Err(); err != nil || !q.Messages || len(out) == 0 {
			return err
		}
		mrows, err := tx.QueryContext(ctx, `SELECT run_id, seq, data FROM conversation_messages`+where+` ORDER BY run_id, seq`, args...)
		if err != nil {
			return err
		}
		defer mrows.Close()
		return attachMessages(mrows, out)
	})
	if err != nil {
		return nil, fmt.Errorf("read turns of %q: %w", chat, err)
	}
	return out, nil
}

const conversationColumns = `title, created_at, updated_at,
	(SELECT count(*) FROM conversation_turns t WHERE t.user_key = c.user_key AND t.chat_id = c.chat_id)`

func (s *sqlStore) Conversation(ctx context.Context, user, chat string) (Conversation, error) {
	if !sqldb.ValidText(user) || !sqldb.ValidText(chat) {
		return Conversation{}, fmt.Errorf("conversation %q: %w", chat, ErrNoConversation)
	}
	c := Conversation{User: user, Chat: chat}
	err := s.db.Reader().QueryRowContext(ctx,
		`SELECT `+conversationColumns+` FROM conversations c WHERE user_key = ? AND chat_id = ?`, user, chat).
		Scan(&c.Title, sqldb.TimeDest(&c.CreatedAt), sqldb.TimeDest(&c.UpdatedAt), &c.Turns)
	if errors.Is(err, sql.ErrNoRows) {
		return Conversation{}, fmt.Errorf("conversation %q: %w", chat, ErrNoConversation)
	}
	if err != nil {
		return Conversation{}, fmt.Errorf("conversation %q: %w", chat, err)
	}
	return c, nil
}

func (s *sqlStore) ListConversations(ctx context.Context, user string, limit int, after *ConversationCursor) ([]Conversation, error) {
	out := []Conversation{}
	if !sqldb.ValidText(user) || limit <= 0 {
		return out, nil
	}
	query := `SELECT chat_id, ` + conversationColumns + ` FROM conversations c WHERE user_key = ?`
	args := []any{user}
	if after != nil {
		u := s.db.Time(after.UpdatedAt)
		query += ` AND (updated_at < ? OR updated_at = ? AND chat_id < ?)`
		args = append(args, u, u, after.Chat)
	}
	rows, err := s.db.Reader().QueryContext(ctx, query+` ORDER BY updated_at DESC, chat_id DESC LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("list conversations: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		c := Conversation{User: user}
		if err := rows.Scan(&c.Chat, &c.Title, sqldb.TimeDest(&c.CreatedAt), sqldb.TimeDest(&c.UpdatedAt), &c.Turns); err != nil {
			return nil, fmt.Errorf("list conversations: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list conversations: %w", err)
	}
	return out, nil
}

func (s *sqlStore) DeleteConversation(ctx context.Context, user, chat string) ([]string, error) {
	if !sqldb.ValidText(user) || !sqldb.ValidText(chat) {
		return nil, fmt.Errorf("delete conversation %q: %w", chat, ErrNoConversation)
	}
	var runs []string
	err := s.db.Write(ctx, func(tx sqldb.Tx) error {
		// Deleting the chat's row first locks it: a PutTurn of the chat
		// waits for this transaction, so no turn arrives between the
		// select and the deletes below.
		n, err := sqldb.Affected(tx.ExecContext(ctx, `DELETE FROM conversations WHERE user_key = ? AND chat_id = ?`, user, chat))
		if err != nil {
			return err
		}
		if n == 0 {
			return ErrNoConversation
		}
		runs, err = sqldb.Strings(ctx, tx,
			`SELECT run_id FROM conversation_turns WHERE user_key = ? AND chat_id = ? ORDER BY started_at, run_id`, user, chat)
		if err != nil {
			return err
		}
		for _, q := range []string{
			`DELETE FROM blobs WHERE run IN (SELECT run_id FROM conversation_turns WHERE user_key = ? AND chat_id = ?)`,
			`DELETE FROM conversation_messages WHERE user_key = ? AND chat_id = ?`,
			// The backlog items the chat added go with it, as the
			// memories it taught do.
			`DELETE FROM backlog_items WHERE user_key = ? AND chat_id = ?`,
			`DELETE FROM conversation_turns WHERE user_key = ? AND chat_id = ?`,
		} {
			if _, err := tx.ExecContext(ctx, q, user, chat); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("delete conversation %q: %w", chat, err)
	}
	return runs, nil
}

func (s *sqlStore) DeleteRunTurns(ctx context.Context, run string) (int64, error) {
	if !sqldb.ValidText(run) {
		return 0, nil // PutTurn never stored such a run
	}
	var n int64
	err := s.db.Write(ctx, func(tx sqldb.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM conversation_messages WHERE run_id = ?`, run); err != nil {
			return err
		}
		// The chats the run's turns were in, emptied by their removal: the
		// chats of the run's turns that have no turn of another run.
		if _, err := tx.ExecContext(ctx,
			`DELETE FROM conversations WHERE (user_key, chat_id) IN (
				SELECT user_key, chat_id FROM conversation_turns t WHERE run_id = ?
				AND NOT EXISTS (SELECT 1 FROM conversation_turns o
					WHERE o.user_key = t.user_key AND o.chat_id = t.chat_id AND o.run_id <> t.run_id))`, run); err != nil {
			return err
		}
		var err error
		n, err = sqldb.Affected(tx.ExecContext(ctx, `DELETE FROM conversation_turns WHERE run_id = ?`, run))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("delete the turns of %q: %w", run, err)
	}
	return n, nil
}
