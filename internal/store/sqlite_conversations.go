package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

var _ Conversations = (*sqliteStore)(nil)

func (s *sqliteStore) PutTurn(ctx context.Context, t Turn) error {
	if err := checkTurn(t); err != nil {
		return err
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("put turn %s: %w", t.Run, err)
	}
	defer tx.Rollback()
	now := timestamp(s.opts.now()).UnixMicro()
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO conversations (user_key, chat_id, title, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
		 ON CONFLICT (user_key, chat_id) DO UPDATE SET updated_at = max(updated_at, excluded.updated_at)`,
		t.User, t.Chat, t.Title, now, now); err != nil {
		return fmt.Errorf("put turn %s: %w", t.Run, err)
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
		t.PromptTokens, t.CompletionTokens, t.TotalTokens, timestamp(t.StartedAt).UnixMicro(), timestamp(t.FinishedAt).UnixMicro()); err != nil {
		return fmt.Errorf("put turn %s: %w", t.Run, err)
	}
	for _, m := range t.Messages {
		if _, err := tx.ExecContext(ctx,
			`INSERT INTO conversation_messages (user_key, chat_id, run_id, seq, data) VALUES (?, ?, ?, ?, ?)
			 ON CONFLICT DO NOTHING`, t.User, t.Chat, t.Run, m.Seq, string(m.Data)); err != nil {
			return fmt.Errorf("put turn %s message %d: %w", t.Run, m.Seq, err)
		}
	}
	if n := s.opts.maxChats; n > 0 {
		// Counting first keeps the common case (under the cap) to one
		// index scan; the deletes run only when a new chat went over it.
		var have int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM conversations WHERE user_key = ?`, t.User).Scan(&have); err != nil {
			return fmt.Errorf("put turn %s: count chats: %w", t.Run, err)
		}
		if have > n {
			for _, q := range sqlEvictChats {
				if _, err := tx.ExecContext(ctx, q, t.User, t.User, n); err != nil {
					return fmt.Errorf("put turn %s: evict chats beyond %d: %w", t.Run, n, err)
				}
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("put turn %s: %w", t.Run, err)
	}
	return nil
}

func (s *sqliteStore) Turns(ctx context.Context, user, chat string, q TurnQuery) ([]Turn, error) {
	out := []Turn{}
	if !validText(user) || !validText(chat) {
		return out, nil
	}
	query := `SELECT run_id, turn, agent, status, answer_key, visible_key, title, prompt_tokens, completion_tokens,
		total_tokens, started_at, finished_at FROM conversation_turns WHERE user_key = ? AND chat_id = ?`
	args := []any{user, chat}
	if len(q.Runs) > 0 {
		query += ` AND run_id IN (?` + strings.Repeat(`, ?`, len(q.Runs)-1) + `)`
		for _, r := range q.Runs {
			args = append(args, r)
		}
	}
	query += ` ORDER BY started_at, run_id`
	rows, err := s.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list turns of %q: %w", chat, err)
	}
	defer rows.Close()
	for rows.Next() {
		t := Turn{User: user, Chat: chat}
		var started, finished int64
		if err := rows.Scan(&t.Run, &t.Turn, &t.Agent, &t.Status, &t.AnswerKey, &t.VisibleKey, &t.Title,
			&t.PromptTokens, &t.CompletionTokens, &t.TotalTokens, &started, &finished); err != nil {
			return nil, fmt.Errorf("list turns of %q: %w", chat, err)
		}
		t.StartedAt, t.FinishedAt = time.UnixMicro(started).UTC(), time.UnixMicro(finished).UTC()
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list turns of %q: %w", chat, err)
	}
	if !q.Messages || len(out) == 0 {
		return out, nil
	}
	query = `SELECT run_id, seq, data FROM conversation_messages WHERE user_key = ? AND chat_id = ?`
	if len(q.Runs) > 0 {
		query += ` AND run_id IN (?` + strings.Repeat(`, ?`, len(q.Runs)-1) + `)`
	}
	mrows, err := s.r.QueryContext(ctx, query+` ORDER BY run_id, seq`, args...)
	if err != nil {
		return nil, fmt.Errorf("read turns of %q: %w", chat, err)
	}
	defer mrows.Close()
	if err := attachMessages(mrows, out); err != nil {
		return nil, fmt.Errorf("read turns of %q: %w", chat, err)
	}
	return out, nil
}

func (s *sqliteStore) Conversation(ctx context.Context, user, chat string) (Conversation, error) {
	if !validText(user) || !validText(chat) {
		return Conversation{}, fmt.Errorf("conversation %q: %w", chat, ErrNoConversation)
	}
	c := Conversation{User: user, Chat: chat}
	var created, updated int64
	err := s.r.QueryRowContext(ctx,
		`SELECT title, created_at, updated_at,
			(SELECT count(*) FROM conversation_turns t WHERE t.user_key = c.user_key AND t.chat_id = c.chat_id)
		 FROM conversations c WHERE user_key = ? AND chat_id = ?`, user, chat).
		Scan(&c.Title, &created, &updated, &c.Turns)
	if errors.Is(err, sql.ErrNoRows) {
		return Conversation{}, fmt.Errorf("conversation %q: %w", chat, ErrNoConversation)
	}
	if err != nil {
		return Conversation{}, fmt.Errorf("conversation %q: %w", chat, err)
	}
	c.CreatedAt, c.UpdatedAt = time.UnixMicro(created).UTC(), time.UnixMicro(updated).UTC()
	return c, nil
}

func (s *sqliteStore) ListConversations(ctx context.Context, user string, limit int, after *ConversationCursor) ([]Conversation, error) {
	out := []Conversation{}
	if !validText(user) || limit <= 0 {
		return out, nil
	}
	query := `SELECT chat_id, title, created_at, updated_at,
			(SELECT count(*) FROM conversation_turns t WHERE t.user_key = c.user_key AND t.chat_id = c.chat_id)
		FROM conversations c WHERE user_key = ?`
	args := []any{user}
	if after != nil {
		u := timestamp(after.UpdatedAt).UnixMicro()
		query += ` AND (updated_at < ? OR updated_at = ? AND chat_id < ?)`
		args = append(args, u, u, after.Chat)
	}
	query += ` ORDER BY updated_at DESC, chat_id DESC LIMIT ?`
	args = append(args, limit)
	rows, err := s.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list conversations: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		c := Conversation{User: user}
		var created, updated int64
		if err := rows.Scan(&c.Chat, &c.Title, &created, &updated, &c.Turns); err != nil {
			return nil, fmt.Errorf("list conversations: %w", err)
		}
		c.CreatedAt, c.UpdatedAt = time.UnixMicro(created).UTC(), time.UnixMicro(updated).UTC()
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list conversations: %w", err)
	}
	return out, nil
}

func (s *sqliteStore) DeleteConversation(ctx context.Context, user, chat string) ([]string, error) {
	if !validText(user) || !validText(chat) {
		return nil, fmt.Errorf("delete conversation %q: %w", chat, ErrNoConversation)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("delete conversation %q: %w", chat, err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `DELETE FROM conversations WHERE user_key = ? AND chat_id = ?`, user, chat)
	if err != nil {
		return nil, fmt.Errorf("delete conversation %q: %w", chat, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return nil, fmt.Errorf("delete conversation %q: %w", chat, errors.Join(ErrNoConversation, err))
	}
	rows, err := tx.QueryContext(ctx, `SELECT run_id FROM conversation_turns WHERE user_key = ? AND chat_id = ? ORDER BY started_at, run_id`, user, chat)
	if err != nil {
		return nil, fmt.Errorf("delete conversation %q: %w", chat, err)
	}
	runs := []string{}
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			rows.Close()
			return nil, fmt.Errorf("delete conversation %q: %w", chat, err)
		}
		runs = append(runs, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("delete conversation %q: %w", chat, err)
	}
	for _, q := range []string{
		`DELETE FROM blobs WHERE run IN (SELECT run_id FROM conversation_turns WHERE user_key = ? AND chat_id = ?)`,
		`DELETE FROM conversation_messages WHERE user_key = ? AND chat_id = ?`,
		// The backlog items the chat added go with it, as the memories it
		// taught do.
		`DELETE FROM backlog_items WHERE user_key = ? AND chat_id = ?`,
		`DELETE FROM conversation_turns WHERE user_key = ? AND chat_id = ?`,
	} {
		if _, err := tx.ExecContext(ctx, q, user, chat); err != nil {
			return nil, fmt.Errorf("delete conversation %q: %w", chat, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("delete conversation %q: %w", chat, err)
	}
	return runs, nil
}

func (s *sqliteStore) DeleteRunTurns(ctx context.Context, run string) (int64, error) {
	if !validText(run) {
		return 0, nil // PutTurn never stored such a run
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("delete the turns of %q: %w", run, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `DELETE FROM conversation_messages WHERE run_id = ?`, run); err != nil {
		return 0, fmt.Errorf("delete the turns of %q: %w", run, err)
	}
	// The chats the run's turns were in, emptied by their removal: the
	// chats of the run's turns that have no turn of another run.
	if _, err := tx.ExecContext(ctx,
		`DELETE FROM conversations WHERE (user_key, chat_id) IN (
			SELECT user_key, chat_id FROM conversation_turns t WHERE run_id = ?
			AND NOT EXISTS (SELECT 1 FROM conversation_turns o
				WHERE o.user_key = t.user_key AND o.chat_id = t.chat_id AND o.run_id <> t.run_id))`, run); err != nil {
		return 0, fmt.Errorf("delete the turns of %q: %w", run, err)
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM conversation_turns WHERE run_id = ?`, run)
	if err != nil {
		return 0, fmt.Errorf("delete the turns of %q: %w", run, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("delete the turns of %q: %w", run, err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("delete the turns of %q: %w", run, err)
	}
	return n, nil
}
