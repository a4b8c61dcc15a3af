package api_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/budget"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
)

// errorBody is an OpenAI error envelope.
type errorBody struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    string `json:"code"`
	} `json:"error"`
}

// spentBy is what the ledger has settled for principal, all time.
func spentBy(t *testing.T, env *testenv.Env, principal string) budget.Row {
	t.Helper()
	rows, err := env.Ledger.Usage(context.Background(), budget.Filter{To: time.Now().Add(time.Hour), Principal: principal})
	if err != nil || len(rows) != 1 {
		t.Fatalf("usage of %s: %v, %v", principal, rows, err)
	}
	return rows[0]
}

// TestBudgetConcurrentRuns: 20 chats of one principal at once against a
// token budget. Each model call reserves its estimate before it is sent,
// atomically against what the others spent and reserved, so together
// they never spend past the limit; the runs that find it used up fail
// with insufficient_quota, and so does the next request, with the limit
// and when it resets.
func TestBudgetConcurrentRuns(t *testing.T) {
	const limit = 600
	env := testenv.Start(t, testenv.Options{Budgets: fmt.Sprintf("principal:*=%dtokens/month", limit)})
	// Every call spends 50 tokens, under the 20 of output plus the
	// estimated input it reserves.
	env.Model.SetDefault(llmtest.Text("fine", llmtest.Usage(40, 10)))
	var wg sync.WaitGroup
	statuses := make([]int, 20)
	bodies := make([]errorBody, 20)
	for i := range 20 {
		wg.Go(func() {
			resp := do(t, env, "POST", "/v1/chat/completions", chatBody{"model": "naked", "max_tokens": 20, "messages": userMsg("hello")},
				withChat(owui, fmt.Sprint("chat-", i)))
			statuses[i] = resp.StatusCode
			if resp.StatusCode != http.StatusOK {
				bodies[i] = decode[errorBody](t, resp)
			}
		})
	}
	wg.Wait()
	ok, refused := 0, 0
	for i, s := range statuses {
		switch {
		case s == http.StatusOK:
			ok++
		case s == http.StatusTooManyRequests && bodies[i].Error.Code == "insufficient_quota" && bodies[i].Error.Type == "insufficient_quota":
			refused++
		default:
			t.Errorf("request %d: %d %+v", i, s, bodies[i])
		}
	}
	spent := spentBy(t, env, "u1")
	if tokens := spent.TokensIn + spent.TokensOut; tokens > limit || tokens != int64(50*ok) {
		t.Errorf("settled %d tokens for %d answered runs (limit %d)", tokens, ok, limit)
	}
	if ok == 0 || refused == 0 {
		t.Fatalf("%d answered, %d refused: want both", ok, refused)
	}
	resp := do(t, env, "POST", "/v1/chat/completions", chatBody{"model": "naked", "max_tokens": 20, "messages": userMsg("more")}, withChat(owui, "chat-next"))
	e := decode[errorBody](t, resp)
	reset := time.Now().UTC().AddDate(0, 1, 0)
	month := time.Date(reset.Year(), reset.Month(), 1, 0, 0, 0, 0, time.UTC).Format(time.RFC3339)
	if resp.StatusCode != http.StatusTooManyRequests || e.Error.Code != "insufficient_quota" ||
		!strings.Contains(e.Error.Message, "principal:*=600tokens/month") || !strings.Contains(e.Error.Message, "resets at "+month) {
		t.Fatalf("next request: %d %+v; want 429 insufficient_quota naming the limit and %s", resp.StatusCode, e, month)
	}
}

// TestBudgetWorkerKilledMidCall: the worker dies while the model answers;
// each attempt is charged on its own: the stopped one its estimated
// prompt (it streamed nothing), the retry what its answer spent.
func TestBudgetWorkerKilledMidCall(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Budgets: "principal:*=100000tokens/month"})
	env.Model.Enqueue(llmtest.Hang())
	env.Model.SetDefault(llmtest.Text("back again", llmtest.Usage(70, 30)))
	done := make(chan *http.Response, 1)
	go func() {
		done <- do(t, env, "POST", "/v1/chat/completions", chatBody{"model": "naked", "max_tokens": 50, "messages": userMsg("hello")}, withChat(owui, "kill"))
	}()
	if err := env.Model.WaitRequests(within(t, time.Minute), 1); err != nil {
		t.Fatal(err)
	}
	// The hanging call has reserved and not settled.
	open, err := env.Ledger.Usage(context.Background(), budget.Filter{To: time.Now().Add(time.Hour), Principal: "u1"})
	if err != nil || open[0].Calls != 0 {
		t.Fatalf("settled before the call ended: %v %v", open, err)
	}
	if err := env.Ledger.Check(context.Background(), budget.Call{Principal: "u1"}); err != nil {
		t.Fatal(err)
	}
	env.StopWorker()
	env.StartWorker()
	resp := <-done
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if n := len(env.Model.Requests()); n != 2 {
		t.Fatalf("model called %d times, want 2 (the killed attempt and its retry)", n)
	}
	got := spentBy(t, env, "u1")
	if got.Calls != 2 || got.TokensIn <= 70 || got.TokensOut != 30 {
		t.Fatalf("ledger = %+v; want two calls: the stopped one's prompt, and 70 in, 30 out", got)
	}
}

// TestBudgetCancelAndResend: a call cancelled before its stream's last
// chunk (where usage comes) settled 0/0, so a principal who kept sending a
// new message to a chat (the default multitask strategy, interrupt,
// cancels the answer under way) never filled a budget. 20 clients of one
// principal send to one chat at once, each cancelling the answer before
// it, until the budget refuses them: every attempt is charged what it
// consumed (its prompt and the text it streamed), so the budget fills,
// and the ledger passes the limit by at most the one call in flight.
func TestBudgetCancelAndResend(t *testing.T) {
	const limit, maxTokens = 4000, 300
	env := testenv.Start(t, testenv.Options{Budgets: fmt.Sprintf("principal:*=%dtokens/month", limit)})
	// A long answer, slow enough to be interrupted; its usage would come
	// in its last chunk.
	env.Model.SetDefault(llmtest.Text(strings.Repeat("word ", 300), llmtest.ChunkDelay(5*time.Millisecond), llmtest.Usage(100, 300)))
	var wg sync.WaitGroup
	var mu sync.Mutex
	sent, refused, turn, answered := 0, 0, 0, 0
	for range 20 {
		wg.Go(func() {
			for range 15 {
				// Each message is the chat's next turn (the same turn
				// again would join the run under way, not cancel it).
				mu.Lock()
				turn++
				var msgs []map[string]string
				for k := range turn {
					if k > 0 {
						msgs = append(msgs, map[string]string{"role": "assistant", "content": "ok"})
					}
					msgs = append(msgs, map[string]string{"role": "user", "content": fmt.Sprint("more ", k)})
				}
				mu.Unlock()
				resp := do(t, env, "POST", "/v1/chat/completions", chatBody{"model": "naked", "max_tokens": maxTokens, "messages": msgs},
					withChat(owui, "shared"))
				status := resp.StatusCode
				var e errorBody
				whole := false
				if status != http.StatusOK {
					e = decode[errorBody](t, resp)
				} else {
					raw, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					whole = strings.Count(string(raw), "word") == 300
				}
				mu.Lock()
				sent++
				if whole {
					answered++
				}
				if status == http.StatusTooManyRequests && e.Error.Code == "insufficient_quota" {
					refused++
				}
				mu.Unlock()
				if status == http.StatusTooManyRequests && e.Error.Code == "insufficient_quota" {
					return
				}
			}
		})
	}
	wg.Wait()
	spent := spentBy(t, env, "u1")
	tokens := spent.TokensIn + spent.TokensOut
	// One call in flight may pass the limit by what it reserves: its
	// prompt and max_tokens (the longest prompt, of 300 short turns, is
	// under 3,000 tokens).
	overshoot := tokens - limit
	t.Logf("%d requests, %d answered whole, %d refused; %d calls settled %d tokens against a limit of %d: overshoot %d", sent, answered, refused, spent.Calls, tokens, limit, max(overshoot, 0))
	// A whole answer is charged its reported 400; each other call, cut
	// short by the next message, at least its prompt (over 10 tokens).
	if cut := spent.Calls - int64(answered); cut > 0 && tokens-400*int64(answered) < 10*cut {
		t.Errorf("%d cancelled calls were charged %d tokens in all: the cancelled answers cost nothing", cut, tokens-400*int64(answered))
	}
	if refused == 0 {
		t.Fatalf("%d requests cancelling each other were never refused: the ledger settled %d tokens in %d calls against a limit of %d", sent, tokens, spent.Calls, limit)
	}
	if overshoot > 3000+maxTokens {
		t.Errorf("the ledger passed the limit by %d tokens, more than one call", overshoot)
	}
}

// TestBudgetEveryAttemptCharged: a call retried after its stream was cut
// shared its ledger key with the retry, which kept only the last attempt;
// each attempt is charged now, the cut one what it streamed.
func TestBudgetEveryAttemptCharged(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Budgets: "principal:*=100000tokens/month"})
	env.Model.Enqueue(llmtest.Text(strings.Repeat("word ", 200), llmtest.Usage(70, 200)).With(llmtest.CutAfter(100)))
	env.Model.SetDefault(llmtest.Text("back again", llmtest.Usage(70, 30)))
	resp := do(t, env, "POST", "/v1/chat/completions", chatBody{"model": "naked", "max_tokens": 500, "messages": userMsg("hello")}, withChat(owui, "retry"))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	resp.Body.Close()
	got := spentBy(t, env, "u1")
	if got.Calls != 2 || got.TokensOut <= 30 {
		t.Fatalf("ledger = %+v; want two calls, the cut one charged what it streamed", got)
	}
}
