//go:build unix

package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/longhaul-dev/longhaul/internal/wire"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/proctest"
	"github.com/longhaul-dev/longhaul/internal/testing/ssetest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	openai "github.com/sashabaranov/go-openai"
)

// TestKilledRightAfterAnAnswer: a chat turn whose answer came after a tool
// call streams to its client to the end ([DONE]); at once every process
// is killed with SIGKILL, then started again on the same data directory.
// The turn is there: GET /v1/runs/{id} reads it completed with the answer
// the client got, and the chat's next turn, which sends the answer back as
// Open WebUI does (plain text), reaches the model with the turn's tool
// call and result restored from the conversation store. Twice: the
// scaled-out topology (server, worker, API and NATS, each its own
// process), and `longhaul dev`, all of it in one process.
func TestKilledRightAfterAnAnswer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary as processes and kills them")
	}
	for _, tc := range []struct {
		name      string
		start     func(st *stack, ctx context.Context, workerEnv func(int) []string) error
		processes func(st *stack) []*proc
	}{
		{"server, worker and API", (*stack).startAll, func(st *stack) []*proc {
			return []*proc{st.server, st.worker(0), st.api(0), st.nats}
		}},
		{"dev", func(st *stack, ctx context.Context, workerEnv func(int) []string) error {
			return st.startDev(ctx, workerEnv(0))
		}, func(st *stack) []*proc { return []*proc{st.server} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			model := llmtest.New(t)
			script(model)
			sh := newShop(1)
			shopSrv := httptest.NewServer(sh)
			t.Cleanup(shopSrv.Close)
			st := newStack(t, stackConfig{workers: 1, apis: 1, model: model, files: map[string]string{"clerk.md": clerkAgent, "orders.md": ordersSkill}})
			workerEnv := func(int) []string { return []string{"CHAOS_SHOP_URL=" + shopSrv.URL + "/w0"} }
			if err := tc.start(st, ctx, workerEnv); err != nil {
				t.Fatal(err)
			}
			const chat = "kill-after-answer"
			first := []openai.ChatCompletionMessage{{Role: "user", Content: inputPrefix + "anvil"}}
			shown, run, err := streamTurn(ctx, st.apiURL(0), chat, first)
			if err != nil {
				t.Fatal(err)
			}
			// The stream shows the call's tool card before the answer, as
			// Open WebUI renders it; the answer is the text after it.
			answer := wire.AnswerText(shown)
			// The client has its whole answer: kill everything now.
			for _, p := range tc.processes(st) {
				p.Kill()
			}
			rep := sh.report()
			if len(rep.keys["anvil"]) != 1 {
				t.Fatalf("the shop placed %v for the first turn, want one order of anvil", rep.keys)
			}
			if want := finalAnswer(rep.answers[rep.keys["anvil"][0]]); answer != want {
				t.Fatalf("the client got %q, want %q", answer, want)
			}
			if err := tc.start(st, ctx, workerEnv); err != nil {
				t.Fatal(err)
			}

			// The run reads completed, with the answer the client got.
			got, err := getRun(ctx, st.apiURL(0), run)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != "completed" || got.Result != answer {
				t.Errorf("after the restart the run %s reads %q, result %q, error %q; want completed with the answer the client got", run, got.Status, got.Result, got.Error)
			}

			// The next turn restores the first's tool call.
			before := len(model.Requests())
			second := append(first,
				openai.ChatCompletionMessage{Role: "assistant", Content: shown},
				openai.ChatCompletionMessage{Role: "user", Content: inputPrefix + "bucket"})
			answer2, _, err := streamTurn(ctx, st.apiURL(0), chat, second)
			if err != nil {
				t.Fatal(err)
			}
			rep = sh.report()
			if len(rep.keys["bucket"]) != 1 || wire.AnswerText(answer2) != finalAnswer(rep.answers[rep.keys["bucket"][0]]) {
				t.Fatalf("the second turn answered %q; the shop has %v", answer2, rep.keys)
			}
			reqs := model.Requests()[before:]
			if len(reqs) == 0 {
				t.Fatal("the second turn made no model call")
			}
			msgs := reqs[0].Chat.Messages
			asked := slices.ContainsFunc(msgs, func(m openai.ChatCompletionMessage) bool {
				return m.Role == "assistant" && slices.ContainsFunc(m.ToolCalls, func(c openai.ToolCall) bool {
					return c.ID == callID("anvil") && c.Function.Name == "place_order"
				})
			})
			answered := slices.ContainsFunc(msgs, func(m openai.ChatCompletionMessage) bool {
				return m.Role == "tool" && m.ToolCallID == callID("anvil") && m.Content == rep.answers[rep.keys["anvil"][0]]
			})
			if !asked || !answered {
				var b strings.Builder
				for _, m := range msgs {
					fmt.Fprintf(&b, "\n  %s %q tool_calls %v tool_call_id %q", m.Role, m.Content, m.ToolCalls, m.ToolCallID)
				}
				t.Errorf("the second turn's model call lacks the first turn's tool call (%v) or its result (%v):%s", asked, answered, b.String())
			}
		})
	}
}

// streamTurn sends one streamed chat completion of chat to clerk, as Open
// WebUI does, and reads it to [DONE]. It returns the answer and the run's
// id.
func streamTurn(ctx context.Context, api, chat string, msgs []openai.ChatCompletionMessage) (answer, run string, err error) {
	body, _ := json.Marshal(map[string]any{"model": "clerk", "stream": true, "messages": msgs})
	req, _ := http.NewRequestWithContext(ctx, "POST", api+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-OpenWebUI-User-Id", user)
	req.Header.Set("X-OpenWebUI-Chat-Id", chat)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return "", "", fmt.Errorf("POST /v1/chat/completions = %d %s", resp.StatusCode, b)
	}
	run = resp.Header.Get("X-Longhaul-Run-Id")
	var text strings.Builder
	rd := ssetest.NewReader(resp.Body)
	for {
		e, err := rd.Next()
		if err != nil {
			return "", run, fmt.Errorf("the stream ended before [DONE] (%q so far): %w", text.String(), err)
		}
		if e.Data == "[DONE]" {
			return text.String(), run, nil
		}
		var chunk openai.ChatCompletionStreamResponse
		if json.Unmarshal([]byte(e.Data), &chunk) != nil {
			continue
		}
		for _, c := range chunk.Choices {
			text.WriteString(c.Delta.Content)
		}
	}
}

// startDev starts `longhaul dev` — Temporal, NATS, a worker and the API in
// one process — in the stack's data directory, its API on API slot 0's
// address (picked at the first start), as the stack's server, and waits
// until its API is ready. env is more environment.
func (s *stack) startDev(ctx context.Context, env []string) error {
	s.mu.Lock()
	if s.apiAddrs[0] == "" {
		s.apiAddrs[0] = testenv.FreeAddr(s.t)
	}
	addr := s.apiAddrs[0]
	s.mu.Unlock()
	// dev runs its own NATS, on the address the stack's servers' embedded
	// one takes, and its own Temporal.
	common := slices.DeleteFunc(slices.Clone(s.common), func(v string) bool {
		return strings.HasPrefix(v, "LONGHAUL_NATS_URL=") || strings.HasPrefix(v, "LONGHAUL_TEMPORAL_ADDRESS=")
	})
	p := proctest.Start(s.t, "dev", s.bin, s.logPath("dev"), environ(append(append(common, env...), "LONGHAUL_HTTP_ADDR="+addr)), "dev")
	s.mu.Lock()
	s.server = p
	s.mu.Unlock()
	return p.WaitFor(ctx, "the API to be ready", func() bool { return ready("http://" + addr + "/readyz") })
}
