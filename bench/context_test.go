package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/internal/window"
	openai "github.com/sashabaranov/go-openai"
)

// BenchmarkContext measures what fitting every model call into its
// model's window costs (internal/window, activities/fit.go):
//
//   - counting: the estimate of the exact request the assistant agent
//     sends (its prompt and every built-in tool's schema) with a fetched
//     page of 16,000 characters, against the overhead of a sequential
//     non-streaming turn through the API over a direct call to the same
//     scripted model, both measured here, in process;
//   - a compaction: the same 41-message chat asked through the API with a
//     window of 4,096 tokens, where its older turns must be summarized by
//     the compact role (one Compact activity and its model call, which the
//     scripted model answers at once) before the model call, against the
//     same chat with a window that holds it.
func BenchmarkContext(b *testing.B) {
	samples := 50
	out := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', tabwriter.AlignRight)
	defer out.Flush()

	env := testenv.Start(b, testenv.Options{})
	page := strings.Repeat("The committee met on Tuesday and agreed the budget for the bridge. ", 240)[:16000]
	env.Model.SetDefault(llmtest.Text("It is noon."))
	ask(b, env.URL, "assistant", []openai.ChatCompletionMessage{{Role: "user", Content: "Summarize the page."}, {Role: "user", Content: page}})
	reqs := env.Model.Requests()
	sent := reqs[len(reqs)-1].Chat
	// The tools' parameters as the engine holds them: JSON (the scripted
	// model decoded them into maps).
	for i, t := range sent.Tools {
		raw, err := json.Marshal(t.Function.Parameters)
		if err != nil {
			b.Fatal(err)
		}
		sent.Tools[i].Function.Parameters = json.RawMessage(raw)
	}
	// A turn counts what it sends: the agent's prompt and tools, counted
	// at its first call, and a page new to it.
	n := 0
	count := timeIt(500, func() {
		n++
		req := sent
		req.Messages = append(slices.Clone(sent.Messages[:len(sent.Messages)-1]), openai.ChatCompletionMessage{Role: "user", Content: fmt.Sprint(n) + page})
		window.Request(req)
	})
	var turn, direct []time.Duration
	for range samples {
		turn = append(turn, ask(b, env.URL, "naked", []openai.ChatCompletionMessage{{Role: "user", Content: "What time is it?"}}))
		t0 := time.Now()
		if _, err := openai.NewClientWithConfig(env.Model.ClientConfig()).CreateChatCompletion(b.Context(), openai.ChatCompletionRequest{
			Model: "llmtest", Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "What time is it?"}}}); err != nil {
			b.Fatal(err)
		}
		direct = append(direct, time.Since(t0))
	}
	overhead := pct(turn, 50) - pct(direct, 50)
	fmt.Fprintf(out, "counting a request\ttokens (estimate)\ttime\tof a turn's overhead\t\n")
	fmt.Fprintf(out, "assistant: prompt, %d tools, a new 16,000-character page\t%d\t%v\t%.2f %% of %v\t\n",
		len(sent.Tools), window.Request(sent), count, 100*float64(count)/float64(overhead), overhead)

	with, without := compaction(b, samples/5)
	fmt.Fprintf(out, "a 41-message chat\tp50\tp99\t\t\n")
	fmt.Fprintf(out, "window holds it (no compaction)\t%v\t%v\t\t\n", pct(without, 50), pct(without, 99))
	fmt.Fprintf(out, "window of 4,096 (compacted first)\t%v\t%v\t\t\n", pct(with, 50), pct(with, 99))
	fmt.Fprintf(out, "a compaction adds\t%v\t\t\t\n", pct(with, 50)-pct(without, 50))
}

// timeIt is the mean time of n runs of f.
func timeIt(n int, f func()) time.Duration {
	t0 := time.Now()
	for range n {
		f()
	}
	return (time.Since(t0) / time.Duration(n)).Round(100 * time.Nanosecond)
}

// compaction times n turns of a 41-message chat with a window of 4,096
// tokens (each compacts: no chat id, so no summary is kept) and n with a
// window that holds it.
func compaction(b *testing.B, n int) (with, without []time.Duration) {
	var msgs []openai.ChatCompletionMessage
	for i := range 20 {
		msgs = append(msgs,
			openai.ChatCompletionMessage{Role: "user", Content: fmt.Sprintf("Tell me more about part %d of the river's history.", i)},
			openai.ChatCompletionMessage{Role: "assistant", Content: strings.Repeat(fmt.Sprintf("Part %d: the river ran past the mill and the bakery. ", i), 14)})
	}
	msgs = append(msgs, openai.ChatCompletionMessage{Role: "user", Content: "Which part was about the mill?"})
	for _, c := range []struct {
		tokens int
		into   *[]time.Duration
	}{{4096, &with}, {testenv.NoWindow, &without}} {
		env := testenv.Start(b, testenv.Options{Context: window.Settings{"llmtest": c.tokens}})
		env.Model.On(llmtest.AnyMessageContains("You compact a conversation"), llmtest.Text("The user asked about the river's parts; part 3 was about the mill."))
		env.Model.SetDefault(llmtest.Text("Part 3."))
		for range n {
			*c.into = append(*c.into, ask(b, env.URL, "naked", msgs))
		}
		compacts := 0
		for _, r := range env.Model.Requests() {
			if strings.Contains(r.SystemPrompt(), "You compact a conversation") {
				compacts++
			}
		}
		if (c.tokens == 4096) != (compacts >= n) {
			b.Fatalf("window %d: %d compact requests for %d turns", c.tokens, compacts, n)
		}
	}
	return with, without
}

// ask sends one non-streaming chat completion and returns how long it took.
func ask(b *testing.B, url, model string, msgs []openai.ChatCompletionMessage) time.Duration {
	body, _ := json.Marshal(map[string]any{"model": model, "messages": msgs})
	t0 := time.Now()
	resp, err := httpClient.Post(url+"/v1/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("chat: %d %s", resp.StatusCode, data)
	}
	return time.Since(t0)
}
