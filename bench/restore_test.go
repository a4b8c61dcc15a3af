package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"text/tabwriter"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/storetest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/internal/tools"
	openai "github.com/sashabaranov/go-openai"
)

// restoreTurns is the length of the chat BenchmarkRestore restores.
const restoreTurns = 50

// BenchmarkRestore measures what restoring a 50-turn chat adds to a turn:
// the RestoreConversation activity's own work (reading the chat's turns
// and matching the history) on SQLite and PostgreSQL, and, end to end
// through the API on SQLite, the 51st turn of a chat whose every turn
// called a tool, against the same request without a chat id (which neither
// restores nor records).
func BenchmarkRestore(b *testing.B) {
	samples := 50
	out := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(out, "restore of a %d-turn chat\tp50\tp99\t\n", restoreTurns)
	for _, be := range storetest.Backends {
		be.Ready(b)
		d := restoreActivity(b, be.Fresh(b), samples*4)
		fmt.Fprintf(out, "activity alone, %s\t%v\t%v\t\n", be.Name, pct(d, 50), pct(d, 99))
	}
	with, without := restoreEndToEnd(b, samples)
	fmt.Fprintf(out, "turn 51 through the API, no chat id\t%v\t%v\t\n", pct(without, 50), pct(without, 99))
	fmt.Fprintf(out, "turn 51 through the API, restored and recorded\t%v\t%v\t\n", pct(with, 50), pct(with, 99))
	fmt.Fprintf(out, "added per turn\t%v\t\t\n", pct(with, 50)-pct(without, 50))
	out.Flush()
}

// pct is the p-th percentile of d, to the 10 µs.
func pct(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)].Round(10 * time.Microsecond)
}

// restoreActivity stores a chat of restoreTurns turns, each with a tool
// call and a 2,000-character result, and times RestoreConversation on the
// history a client sends for the next turn.
func restoreActivity(b *testing.B, url string, n int) []time.Duration {
	ctx := context.Background()
	s, err := store.Open(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var history []longhaul.Message
	start := time.Now()
	for i := range restoreTurns {
		answer := fmt.Sprintf("Turn %d: the answer, with a few sentences about what the tool found. %s", i, strings.Repeat("More words. ", 20))
		timeline := []contract.TimelineMessage{
			{Role: longhaul.RoleAssistant, ToolCalls: []longhaul.ToolCall{{ID: fmt.Sprintf("c%d", i), Name: "notes", Arguments: `{"page":1}`}}},
			{Role: longhaul.RoleTool, ToolCallID: fmt.Sprintf("c%d", i), Name: "notes", Content: strings.Repeat("x", 2000)},
			{Role: longhaul.RoleAssistant, Content: answer},
		}
		t := store.Turn{
			User: "bench", Chat: "bench/chat", Run: fmt.Sprintf("run-%d", i), Turn: i + 1, Agent: "a", Status: "completed",
			AnswerKey: longhaul.MatchKey(answer), VisibleKey: longhaul.MatchKey(answer),
			StartedAt: start.Add(time.Duration(i) * time.Second), FinishedAt: start.Add(time.Duration(i) * time.Second),
		}
		for j, m := range timeline {
			data, _ := json.Marshal(m)
			t.Messages = append(t.Messages, store.TurnMessage{Seq: j, Data: data})
		}
		if err := s.PutTurn(ctx, t); err != nil {
			b.Fatal(err)
		}
		history = append(history, longhaul.Message{Role: longhaul.RoleUser, Content: fmt.Sprintf("question %d", i)},
			longhaul.Message{Role: longhaul.RoleAssistant, Content: answer})
	}
	history = append(history, longhaul.Message{Role: longhaul.RoleUser, Content: "and now?"})
	acts := activities.New(activities.LLMConfig{BaseURL: "http://127.0.0.1:1/v1"}, nil, nil, slog.New(slog.DiscardHandler))
	acts.Blobs = s
	var d []time.Duration
	for range n {
		t0 := time.Now()
		res, err := acts.RestoreConversation(ctx, contract.RestoreRequest{User: "bench", ChatID: "bench/chat", Messages: history})
		d = append(d, time.Since(t0))
		if err != nil || res.Turns != restoreTurns {
			b.Fatalf("restore: %d turns, %v", res.Turns, err)
		}
	}
	return d
}

// restoreEndToEnd plays a 50-turn chat through the API, each turn calling
// a tool, then times the 51st turn n times with the chat id (each a new
// answer, as Regenerate asks) and n times without.
func restoreEndToEnd(b *testing.B, n int) (with, without []time.Duration) {
	layer := fstest.MapFS{
		"reading.md": {Data: []byte("---\nskill: reading\ndescription: Reads notes\ntools: [notes]\n---\nRead the notes.\n")},
		"reader.md":  {Data: []byte("---\nagent: reader\ndescription: Reads\nmode: chat\nskills: [reading]\n---\nYou read.\n")},
	}
	env := testenv.Start(b, testenv.Options{Layers: []fs.FS{layer}, Tools: []tools.Tool{notes{}}})
	// The model calls the tool when the last message is a user's, and
	// answers once it has the result.
	env.Model.SetDefault(llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		last := r.Chat.Messages[len(r.Chat.Messages)-1]
		if last.Role == openai.ChatMessageRoleUser {
			return llmtest.ToolCalls(llmtest.ToolCall{Name: "notes", Arguments: `{"page":1}`})
		}
		return llmtest.Text(fmt.Sprintf("I read page 1 for message %d.", len(r.Chat.Messages)))
	}))
	type msg = map[string]string
	var history []msg
	ask := func(headers map[string]string, msgs []msg) (string, time.Duration) {
		body, _ := json.Marshal(map[string]any{"model": "reader", "messages": msgs})
		req, _ := http.NewRequest("POST", env.URL+"/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		t0 := time.Now()
		resp, err := httpClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		var c openai.ChatCompletionResponse
		if err := json.NewDecoder(resp.Body).Decode(&c); err != nil || resp.StatusCode != 200 {
			b.Fatalf("chat: %d %v", resp.StatusCode, err)
		}
		return c.Choices[0].Message.Content, time.Since(t0)
	}
	chat := map[string]string{"X-OpenWebUI-User-Id": "bench", "X-OpenWebUI-Chat-Id": "bench-chat"}
	for i := range restoreTurns {
		history = append(history, msg{"role": "user", "content": fmt.Sprintf("read page 1, turn %d", i)})
		answer, _ := ask(chat, history)
		history = append(history, msg{"role": "assistant", "content": answer})
	}
	history = append(history, msg{"role": "user", "content": "and now?"})
	for i := range n {
		h := map[string]string{"X-OpenWebUI-Message-Id": fmt.Sprintf("m%d", i)}
		for k, v := range chat {
			h[k] = v
		}
		_, d := ask(h, history)
		with = append(with, d)
		_, d = ask(map[string]string{"X-OpenWebUI-User-Id": "bench"}, history)
		without = append(without, d)
	}
	return with, without
}
