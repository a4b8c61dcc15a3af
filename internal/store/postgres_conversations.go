package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

var _ Conversations = (*postgresStore)(nil)

func (s *postgresStore) PutTurn(ctx context.Context, t Turn) error {
	if err := checkTurn(t); err != nil {
		return err
	}
	now := timestamp(s.opts.now())
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx,
			`INSERT INTO conversations (user_key, chat_id, title, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)
			 ON CONFLICT (user_key, chat_id) DO UPDATE SET updated_at = greatest(conversations.updated_at, excluded.updated_at)`,
			t.User, t.Chat, t.Title, now); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx,
			`INSERT INTO conversation_turns (user_key, chat_id, run_id, turn, agent, status, answer_key, visible_key, title,
				prompt_tokens, completion_tokens, total_tokens, started_at, finished_at)
			 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
			 ON CONFLICT (user_key, chat_id, run_id) DO UPDATE SET
				turn = excluded.turn, agent = excluded.agent, status = excluded.status,
				answer_key = excluded.answer_key, visible_key = excluded.visible_key,
				prompt_tokens = excluded.prompt_tokens, completion_tokens = excluded.completion_tokens,
				total_tokens = excluded.total_tokens, finished_at = excluded.finished_at`,
			t.User, t.Chat, t.Run, t.Turn, t.Agent, t.Status, t.AnswerKey, t.VisibleKey, t.Title,
			t.PromptTokens, t.CompletionTokens, t.TotalTokens, timestamp(t.StartedAt), timestamp(t.FinishedAt)); err != nil {
			return err
		}
		batch := &pgx.Batch{}
		for _, m := range t.Messages {
			batch.Queue(`INSERT INTO conversation_messages (user_key, chat_id, run_id, seq, data) VALUES ($1, $2, $3, $4, $5)
				ON CONFLICT DO NOTHING`, t.User, t.Chat, t.Run, m.Seq, string(m.Data))
		}
		if err := tx.SendBatch(ctx, batch).Close(); err != nil {
			return err
		}
		if n := s.opts.maxChats; n > 0 {
			// Counting first keeps the common case (under the cap) to
			// one index scan; the deletes run only when a new chat went
			// over it.
			var have int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM conversations WHERE user_key = $1`, t.User).Scan(&have); err != nil {
				return fmt.Errorf("count chats: %w", err)
			}
			if have > n {
				evict := &pgx.Batch{}
				for _, q := range pgEvictChats {
					evict.Queue(q, t.User, n)
				}
				if err := tx.SendBatch(ctx, evict).Close(); err != nil {
					return fmt.Errorf("evict chats beyond %d: %w", n, err)
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("put turn %s: %w", t.Run, err)
	}
	return nil
}

func (s *postgresStore) Turns(ctx context.Context, user, chat string, q TurnQuery) ([]Turn, error) {
	out := []Turn{}
	if !validText(user) || !validText(chat) {
		return out, nil
	}
	runs := q.Runs
	if runs == nil {
		runs = []string{}
	}
	rows, err := s.pool.Query(ctx,
		`SELECT run_id, turn, agent, status, answer_key, visible_key, title, prompt_tokens, completion_tokens,
			total_tokens, started_at, finished_at FROM conversation_turns
		 WHERE user_key = $1 AND chat_id = $2 AND (cardinality($3::text[]) = 0 OR run_id = ANY($3))
		 ORDER BY started_at, run_id`, user, chat, runs)
	if err != nil {
		return nil, fmt.Errorf("list turns of %q: %w", chat, err)
	}
	for rows.Next() {
		t := Turn{User: user, Chat: chat}
		if err := rows.Scan(&t.Run, &t.Turn, &t.Agent, &t.Status, &t.AnswerKey, &t.VisibleKey, &t.Title,
			&t.PromptTokens, &t.CompletionTokens, &t.TotalTokens, &t.StartedAt, &t.FinishedAt); err != nil {
			rows.Close()
			return nil, fmt.Errorf("list turns of %q: %w", chat, err)
		}
		t.StartedAt, t.FinishedAt = t.StartedAt.UTC(), t.FinishedAt.UTC()
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list turns of %q: %w", chat, err)
	}
	if !q.Messages || len(out) == 0 {
		return out, nil
	}
	mrows, err := s.pool.Query(ctx,
		`SELECT run_id, seq, data FROM conversation_messages
		 WHERE user_key = $1 AND chat_id = $2 AND (cardinality($3::text[]) = 0 OR run_id = ANY($3))
		 ORDER BY run_id, seq`, user, chat, runs)
	if err != nil {
		return nil, fmt.Errorf("read turns of %q: %w", chat, err)
	}
	defer mrows.Close()
	if err := attachMessages(mrows, out); err != nil {
		return nil, fmt.Errorf("read turns of %q: %w", chat, err)
	}
	return out, nil
}

func (s *postgresStore) Conversation(ctx context.Context, user, chat string) (Conversation, error) {
	if !validText(user) || !validText(chat) {
		return Conversation{}, fmt.Errorf("conversation %q: %w", chat, ErrNoConversation)
	}
	c := Conversation{User: user, Chat: chat}
	err := s.pool.QueryRow(ctx,
		`SELECT title, created_at, updated_at,
			(SELECT count(*) FROM conversation_turns t WHERE t.user_key = c.user_key AND t.chat_id = c.chat_id)
		 FROM conversations c WHERE user_key = $1 AND chat_id = $2`, user, chat).
		Scan(&c.Title, &c.CreatedAt, &c.UpdatedAt, &c.Turns)
	if errors.Is(err, pgx.ErrNoRows) {
		return Conversation{}, fmt.Errorf("conversation %q: %w", chat, ErrNoConversation)
	}
	if err != nil {
		return Conversation{}, fmt.Errorf("conversation %q: %w", chat, err)
	}
	c.CreatedAt, c.UpdatedAt = c.CreatedAt.UTC(), c.UpdatedAt.UTC()
	return c, nil
}

func (s *postgresStore) ListConversations(ctx context.Context, user string, limit int, after *ConversationCursor) ([]Conversation, error) {
	out := []Conversation{}
	if !validText(user) || limit <= 0 {
		return out, nil
	}
	query := `SELECT chat_id, title, created_at, updated_at,
			(SELECT count(*) FROM conversation_turns t WHERE t.user_key = c.user_key AND t.chat_id = c.chat_id)
		FROM conversations c WHERE user_key = $1`
	args := []any{user, limit}
	if after != nil {
		query += ` AND (updated_at, chat_id) < ($3, $4)`
		args = append(args, timestamp(after.UpdatedAt), after.Chat)
	}
	rows, err := s.pool.Query(ctx, query+` ORDER BY updated_at DESC, chat_id DESC LIMIT $2`, args...)
	if err != nil {
		return nil, fmt.Errorf("list conversations: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		c := Conversation{User: user}
		if err := rows.Scan(&c.Chat, &c.Title, &c.CreatedAt, &c.UpdatedAt, &c.Turns); err != nil {
			return nil, fmt.Errorf("list conversations: %w", err)
		}
		c.CreatedAt, c.UpdatedAt = c.CreatedAt.UTC(), c.UpdatedAt.UTC()
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list conversations: %w", err)
	}
	return out, nil
}

func (s *postgresStore) DeleteConversation(ctx context.Context, user, chat string) ([]string, error) {
	if !validText(user) || !validText(chat) {
		return nil, fmt.Errorf("delete conversation %q: %w", chat, ErrNoConversation)
	}
	var runs []string
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM conversations WHERE user_key = $1 AND chat_id = $2`, user, chat)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return ErrNoConversation
		}
		rows, err := tx.Query(ctx, `DELETE FROM conversation_turns WHERE user_key = $1 AND chat_id = $2 RETURNING run_id`, user, chat)
		if err != nil {
			return err
		}
		if runs, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM conversation_messages WHERE user_key = $1 AND chat_id = $2`, user, chat); err != nil {
			return err
		}
		// The backlog items the chat added go with it, as the memories it
		// taught do.
		if _, err := tx.Exec(ctx, `DELETE FROM backlog_items WHERE user_key = $1 AND chat_id = $2`, user, chat); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM blobs WHERE run = ANY($1)`, runs)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("delete conversation %q: %w", chat, err)
	}
	if runs == nil {
		runs = []string{}
	}
	return runs, nil
}

func (s *postgresStore) DeleteRunTurns(ctx context.Context, run string) (int64, error) {
	if !validText(run) {
		return 0, nil // PutTurn never stored such a run
	}
	var n int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM conversation_messages WHERE run_id = $1`, run); err != nil {
			return err
		}
		// The chats the run's turns were in, emptied by their removal.
		if _, err := tx.Exec(ctx,
			`DELETE FROM conversations WHERE (user_key, chat_id) IN (
				SELECT user_key, chat_id FROM conversation_turns t WHERE run_id = $1
				AND NOT EXISTS (SELECT 1 FROM conversation_turns o
					WHERE o.user_key = t.user_key AND o.chat_id = t.chat_id AND o.run_id <> t.run_id))`, run); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM conversation_turns WHERE run_id = $1`, run)
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("delete the turns of %q: %w", run, err)
	}
	return n, nil
}
