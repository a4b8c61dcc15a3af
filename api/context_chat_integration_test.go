// Long chats in a small window: Open WebUI's forty turns, a client's
// thirty rounds of tool calls, and a worker killed while it compacts.

package api_test

import (
	"fmt"
	"io/fs"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/identity"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/owuitest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/internal/window"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// TestContextWindowLongOpenWebUIChat: a 40-turn Open WebUI chat whose
// first answer lists the films with their TMDB references and whose later
// turns are a few hundred tokens each, far more than the window holds.
// At turn 40, "the 2026 one" still resolves to tmdb 931285 (the summary
// kept it), the summary was reused from turn to turn instead of being
// written again each turn, and the model never cut or refused a request.
func TestContextWindowLongOpenWebUIChat(t *testing.T) {
	const turns = 40
	eachWindow(t, func(t *testing.T, wc windowCase) {
		env := windowEnv(t, wc, testenv.Options{API: api.Config{
			Keys:      []identity.Key{{Name: "owui", Secret: owuiKey, Proxy: true}},
			JWTSecret: []byte(owuiSecret),
		}})
		chat := owuiConn(env).NewChat(ann, "assistant")
		compact := llmtest.Func(compactKeeping("tmdb:"))
		env.Model.On(isCompact, compact)
		env.Model.SetDefault(llmtest.Func(func(r llmtest.Request) llmtest.Reply {
			q := r.LastUserMessage()
			switch {
			case strings.Contains(q, "Find me films"):
				return llmtest.Text(filmList)
			case strings.Contains(q, "the 2026 one"):
				if strings.Contains(requestText(r), "931285") {
					return llmtest.Text("The 2026 one is Project Hail Mary [tmdb:931285]; I will request it.")
				}
				return llmtest.Text("I no longer know which films we talked about.")
			}
			var turn int
			var topic string
			if _, err := fmt.Sscanf(q, "Turn %d: tell me about %s", &turn, &topic); err != nil {
				return llmtest.Text("I did not follow.")
			}
			return llmtest.Text(fillerAnswer(topic, turn), whole)
		}))

		var runs []string
		for turn := 1; turn <= turns; turn++ {
			q := fmt.Sprintf("Turn %d: tell me about %s, in a paragraph or two; I am curious how it works and why it matters to people.", turn, fillerTopics[turn%len(fillerTopics)])
			switch turn {
			case 1:
				q = "Find me films about astronauts stranded in space."
			case turns:
				q = "Please request the 2026 one."
			}
			a := owuitest.OK(t, chat.Ask(q))
			chat.Answer(a.Content)
			runs = append(runs, a.RunID)
			if turn == turns && !strings.Contains(a.Content, "[tmdb:931285]") {
				t.Errorf("turn %d: %q does not resolve the 2026 film", turn, a.Content)
			}
		}
		checkNoCuts(t, env)
		// A compaction covers the turns so far and is kept with the
		// chat: the next turns reuse it until what follows it outgrows
		// the window again, so no two turns in a row compact (in 4,096
		// tokens the assistant's prompt and tools leave room for about
		// two turns beside the summary). Each is one context event and
		// one request of the compact role.
		var all []longhaul.ContextData
		var compacted []int
		for i, id := range runs {
			events := contextEvents(t, env, id)
			all = append(all, events...)
			for _, d := range events {
				if d.Compacted {
					compacted = append(compacted, i+1)
				}
			}
		}
		s, err := tallyOf(all, wc.tokens)
		if err != nil {
			t.Error(err)
		}
		if len(compacted) == 0 || len(compacted) != compact.Calls() {
			t.Errorf("compactions at turns %v, %d compact requests; want some, one request each", compacted, compact.Calls())
		}
		for i := 1; i < len(compacted); i++ {
			if compacted[i]-compacted[i-1] < 2 {
				t.Errorf("compactions at turns %v: turn %d compacted again instead of reusing the summary", compacted, compacted[i])
				break
			}
		}
		if wc.tokens >= 8192 && len(compacted) > turns/8 {
			t.Errorf("compactions at turns %v: too many for %d turns in %d tokens", compacted, turns, wc.tokens)
		}
		first := env.Model.Requests()[0]
		t.Logf("model requests %d (the first %d tokens, estimated %d), compactions at turns %v, context %+v",
			len(env.Model.Requests()), first.PromptTokens, window.Request(first.Chat), compacted, s)
	})
}

// orderResult is round n's result of the client's lookup_order: a fact on
// its first line, then about 3,000 characters of detail (some 600 tokens).
func orderResult(n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "RESULT-%d: order R-%d left depot D-%d.\n", n, n, 40+n)
	for i := 0; b.Len() < 3000; i++ {
		fmt.Fprintf(&b, "scan %d: %s\n", i, fillerSentences[(i+n)%len(fillerSentences)])
	}
	return b.String()
}

var resultRE = regexp.MustCompile(`RESULT-\d+: order R-\d+ left depot D-\d+`)

// TestContextWindowClientToolLoop: a client offers its own tool and runs
// it 30 times in one run, each result some 600 tokens, about 18,000 in
// all, sending the whole conversation back each round as a Chat
// Completions client does. Older results are excerpted and older rounds
// compacted; the answer still sees the first round's result (in the
// summary) and the last (whole), and the model never cut or refused a
// request.
func TestContextWindowClientToolLoop(t *testing.T) {
	const rounds = 30
	const question = "Look up orders R-1 to R-30 one at a time and tell me where the first and the last left from."
	// The assistant's prompt and skills, with room for the 30 rounds (its
	// own max_turns would end the loop at 8).
	layer := fstest.MapFS{"courier.md": {Data: []byte("---\nagent: courier\ndescription: Tracks orders\nmode: chat\nskills: [clock, web_reading, web_research, backlog_manager, documents]\nmax_turns: 40\n---\n" +
		"You track orders with the tools you are given. Look each order up before you answer, and quote what the lookup said.\n")}}
	eachWindow(t, func(t *testing.T, wc windowCase) {
		env := windowEnv(t, wc, testenv.Options{Layers: []fs.FS{layer}})
		var done atomic.Int32 // rounds whose result the client sent
		var lastSeen atomic.Value
		env.Model.On(isCompact, llmtest.Func(compactKeeping("RESULT-")))
		env.Model.SetDefault(llmtest.Func(func(r llmtest.Request) llmtest.Reply {
			if !strings.Contains(r.LastUserMessage(), question) {
				return llmtest.Text("The question is gone.")
			}
			if n := int(done.Load()); n < rounds {
				return llmtest.ToolCalls(llmtest.ToolCall{Name: "lookup_order", Arguments: fmt.Sprintf(`{"id":"R-%d"}`, n+1)})
			}
			seen := resultRE.FindAllString(requestText(r), -1)
			lastSeen.Store(len(seen))
			return llmtest.Text("I saw: " + strings.Join(seen, "; ") + ".")
		}))

		msgs := []any{map[string]any{"role": "user", "content": question}}
		var run, answer string
		for round := 0; ; round++ {
			resp := do(t, env, "POST", "/v1/chat/completions", chatBody{"model": "courier", "messages": msgs, "tools": []any{lookupTool}}, nil)
			if resp.StatusCode != 200 {
				t.Fatalf("round %d: status %d", round+1, resp.StatusCode)
			}
			if run == "" {
				run = resp.Header.Get(api.HeaderRunID)
			} else if got := resp.Header.Get(api.HeaderRunID); got != run {
				t.Fatalf("round %d went to run %s, not %s", round+1, got, run)
			}
			c := decode[wire.ChatCompletion](t, resp)
			msg := c.Choices[0].Message
			if c.Choices[0].FinishReason == "stop" {
				answer = msg.Content
				break
			}
			if round == rounds || len(msg.ToolCalls) != 1 {
				t.Fatalf("round %d: finish %q, message %+v", round+1, c.Choices[0].FinishReason, msg)
			}
			call := msg.ToolCalls[0]
			msgs = append(msgs,
				map[string]any{"role": "assistant", "content": msg.Content, "tool_calls": []any{map[string]any{
					"id": call.ID, "type": "function", "function": map[string]any{"name": call.Function.Name, "arguments": call.Function.Arguments}}}},
				map[string]any{"role": "tool", "tool_call_id": call.ID, "content": orderResult(round + 1)})
			done.Store(int32(round + 1))
		}
		checkNoCuts(t, env)
		for _, n := range []int{1, rounds} {
			if want := fmt.Sprintf("RESULT-%d: order R-%d left depot D-%d", n, n, 40+n); !strings.Contains(answer, want) {
				t.Errorf("the answer lacks round %d's result %q: %q", n, want, answer)
			}
		}
		s, err := tallyOf(contextEvents(t, env, run), wc.tokens)
		if err != nil {
			t.Error(err)
		}
		if s.excerpted == 0 || s.compacted == 0 {
			t.Errorf("context events %+v: want older results excerpted and older rounds compacted", s)
		}
		t.Logf("model requests %d, results seen at the end %v, context %+v", len(env.Model.Requests()), lastSeen.Load(), s)
	})
}

// TestContextWindowWorkerKilledMidCompaction: a run's first model call
// does not fit, so the run compacts; the worker is stopped while the
// compact role's model is writing the summary, and a new worker takes
// over. The Compact activity is retried there and completes once, the
// summary is workflow state from then on (no second compaction), and the
// run completes with the model never having cut or refused a request.
func TestContextWindowWorkerKilledMidCompaction(t *testing.T) {
	eachWindow(t, func(t *testing.T, wc windowCase) {
		env := windowEnv(t, wc, testenv.Options{})
		ctx := within(t, 2*time.Minute)
		started := make(chan struct{})
		var compacts atomic.Int32
		keep := compactKeeping("MARK-")
		env.Model.On(isCompact, llmtest.Func(func(r llmtest.Request) llmtest.Reply {
			if compacts.Add(1) == 1 {
				close(started)
				return llmtest.Hang()
			}
			return keep(r)
		}))
		env.Model.SetDefault(llmtest.Func(func(r llmtest.Request) llmtest.Reply {
			if strings.Contains(requestText(r), "MARK-ORIGIN") {
				return llmtest.Text("We began with MARK-ORIGIN.")
			}
			return llmtest.Text("I do not remember how we began.")
		}))
		// A history of some 8,000 tokens: more than either window holds
		// beside the assistant's prompt.
		msgs := []map[string]string{{"role": "user", "content": "MARK-ORIGIN: remember this marker."}, {"role": "assistant", "content": "Noted."}}
		for i := range 14 {
			msgs = append(msgs,
				map[string]string{"role": "user", "content": fmt.Sprintf("Tell me about %s.", fillerTopics[i%len(fillerTopics)])},
				map[string]string{"role": "assistant", "content": fillerAnswer(fillerTopics[i%len(fillerTopics)], i+2) + " " + fillerAnswer("more", i+3)})
		}
		msgs = append(msgs, map[string]string{"role": "user", "content": "Which marker did we begin with?"})
		r := startRun(t, env, map[string]any{"agent": "assistant", "messages": msgs}, user("ann"))

		select {
		case <-started:
		case <-ctx.Done():
			t.Fatal("the run never compacted")
		}
		env.StopWorker()
		env.StartWorker()
		events := followToDone(t, ctx, env, r.ID, user("ann"))
		if got := contentText(t, events); !strings.Contains(got, "MARK-ORIGIN") {
			t.Errorf("answer %q: the summary lost the first message", got)
		}
		if d := doneData(t, events); d.Status != string(contract.StatusCompleted) {
			t.Errorf("done %+v", d)
		}
		checkNoCuts(t, env)

		// The history: one Compact scheduled, completed once.
		scheduled := map[int64]bool{}
		completed := 0
		it := env.Client.GetWorkflowHistory(ctx, r.ID, "", false, 0)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == "Compact" {
				scheduled[ev.GetEventId()] = true
			}
			if a := ev.GetActivityTaskCompletedEventAttributes(); a != nil && scheduled[a.GetScheduledEventId()] {
				completed++
			}
		}
		if len(scheduled) != 1 || completed != 1 {
			t.Errorf("Compact scheduled %d times, completed %d; want once each", len(scheduled), completed)
		}
		// The interrupted request, then the retry's: one per stretch of
		// the history that fits the window.
		if n := compacts.Load(); n < 2 {
			t.Errorf("the compact role was asked %d times; want the interrupted request and the retry's", n)
		}
		var events2 []longhaul.ContextData
		for _, e := range events {
			if e.Type == string(longhaul.EventContext) {
				var d longhaul.ContextData
				if err := e.Event.Decode(&d); err != nil {
					t.Fatal(err)
				}
				events2 = append(events2, d)
			}
		}
		if s, err := tallyOf(events2, wc.tokens); err != nil || s.compacted != 1 {
			t.Errorf("context events %+v (%v): want one compaction", s, err)
		}
	})
}
