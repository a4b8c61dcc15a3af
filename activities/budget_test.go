package activities_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/budget"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
)

// spendLedger opens a ledger on SQLite holding limits, for f's activities.
func (f *fixture) spendLedger(t *testing.T, limits string) *budget.Ledger {
	t.Helper()
	lims, err := budget.ParseBudgets(limits)
	if err != nil {
		t.Fatal(err)
	}
	l, err := budget.Open(t.Context(), "sqlite://"+filepath.Join(t.TempDir(), "ledger.db"), lims, budget.Prices{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	f.acts.Spend = l
	return l
}

// spentBy is what the ledger settled for who, in tokens in and out.
func spentBy(t *testing.T, l *budget.Ledger, who string) (calls, in, out int64) {
	t.Helper()
	rows, err := l.Usage(context.Background(), budget.Filter{From: time.Unix(0, 0), To: time.Now().Add(time.Hour), Principal: who})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		calls, in, out = calls+r.Calls, in+r.TokensIn, out+r.TokensOut
	}
	return calls, in, out
}

// TestStructuredCallsCountInBudgets: the calls of a run's structured roles
// (here the dispatcher's) are reserved and settled in the principal's
// budget like its chat calls, a correction being a call of its own; over
// the budget, the call is refused before the model is asked and is not
// retried.
func TestStructuredCallsCountInBudgets(t *testing.T) {
	f := newFixture(t, nil, nil)
	// A call reserves its input and 4096 tokens for its output: alice's
	// budget has no room for one.
	l := f.spendLedger(t, "principal:alice=1000tokens/day")
	f.srv.Enqueue(
		llmtest.Text("not JSON", llmtest.Usage(100, 3)),
		llmtest.JSON(map[string]any{"mode": "chat", "reason": "a greeting"}, llmtest.Usage(120, 9)),
	)
	hi := []longhaul.Message{{Role: longhaul.RoleUser, Content: "hi"}}
	bob := &longhaul.User{ID: "bob"}
	v, err := f.activityEnv().ExecuteActivity(f.acts.Classify, contract.ClassifyRequest{Caller: contract.Caller{Agent: "assistant", Principal: bob}, Messages: hi})
	if err != nil {
		t.Fatal(err)
	}
	var d contract.Dispatch
	if err := v.Get(&d); err != nil {
		t.Fatal(err)
	}
	if d.Mode != "chat" {
		t.Fatalf("dispatch %+v", d)
	}
	if calls, in, out := spentBy(t, l, bob.Key()); calls != 2 || in != 220 || out != 12 {
		t.Errorf("bob's ledger: %d calls, %d in, %d out; want 2 calls (the answer and its correction), 220 in, 12 out", calls, in, out)
	}

	asked := len(f.srv.Requests())
	_, err = f.activityEnv().ExecuteActivity(f.acts.Classify, contract.ClassifyRequest{Caller: contract.Caller{Agent: "assistant", Principal: &longhaul.User{ID: "alice"}}, Messages: hi})
	wantAppError(t, err, longhaul.ErrTypeInsufficientQuota, true, "alice")
	if n := len(f.srv.Requests()) - asked; n != 0 {
		t.Errorf("the model was asked %d times for alice, want never", n)
	}
}

// costBy is what the ledger settled for who, in micro-dollars.
func costBy(t *testing.T, l *budget.Ledger, who string) int64 {
	t.Helper()
	rows, err := l.Usage(context.Background(), budget.Filter{From: time.Unix(0, 0), To: time.Now().Add(time.Hour), Principal: who})
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, r := range rows {
		n += r.Cost
	}
	return n
}

// TestCutStreamCostsSomething: a call whose stream is cut off (or
// cancelled) before its last chunk never gets the usage the endpoint puts
// there; it is charged an estimate of its prompt and of the text it
// streamed, not 0/0. (The probe: cut after 1,500 chunks, endpoint usage
// 500/2,000, ledger 0/0.) A call the endpoint refused with a status is
// charged nothing.
func TestCutStreamCostsSomething(t *testing.T) {
	f := newFixture(t, nil, nil)
	l := f.spendLedger(t, "principal:*=100000000tokens/day")
	long := strings.Repeat("word ", 2000)
	f.srv.Enqueue(llmtest.Text(long, llmtest.Usage(500, 2000)).With(llmtest.CutAfter(1500)), llmtest.Status(503, "overloaded"))
	bob := &longhaul.User{ID: "bob"}
	req := contract.ModelRequest{Call: "turn-1", Agent: "assistant", Principal: bob, Messages: userMessage("tell me a long story")}
	_, err := chat(t, f.activityEnv(), f.acts, req)
	wantAppError(t, err, longhaul.ErrTypeModelUnavailable, false, "")
	calls, in, out := spentBy(t, l, bob.Key())
	if calls != 1 || in <= 0 || out < 1000 {
		t.Fatalf("the cut call is charged %d calls, %d in, %d out; want one call of its prompt and about 1,500 words out", calls, in, out)
	}
	carol := &longhaul.User{ID: "carol"}
	req.Principal = carol
	_, err = chat(t, f.activityEnv(), f.acts, req)
	wantAppError(t, err, longhaul.ErrTypeModelUnavailable, false, "")
	if _, in, out := spentBy(t, l, carol.Key()); in != 0 || out != 0 {
		t.Errorf("a 503 is charged %d in, %d out; want nothing", in, out)
	}
}

// TestTypedModelStringIsPricedAsResolved: a call priced by the model as a
// request typed it went free: ":gpt-4o" is the default endpoint's gpt-4o,
// priced; a fallback list's structured call is priced as the model that
// answers, not as the list's string.
func TestTypedModelStringIsPricedAsResolved(t *testing.T) {
	f := newFixture(t, nil, nil)
	prices, err := budget.ParsePrices("gpt-4o=1000/1000")
	if err != nil {
		t.Fatal(err)
	}
	l, err := budget.Open(t.Context(), "sqlite://"+filepath.Join(t.TempDir(), "ledger.db"), nil, prices)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	f.acts.Spend = l
	f.srv.Enqueue(llmtest.Text("hello", llmtest.Usage(10, 10)))
	bob := &longhaul.User{ID: "bob"}
	if _, err := chat(t, f.activityEnv(), f.acts, contract.ModelRequest{Call: "turn-1", Agent: "assistant", Model: ":gpt-4o", Principal: bob, Messages: userMessage("hi")}); err != nil {
		t.Fatal(err)
	}
	if got := costBy(t, l, bob.Key()); got != 20000 {
		t.Errorf(`":gpt-4o" cost %d micro-dollars, want 20000 (gpt-4o's price)`, got)
	}
	f.srv.Enqueue(llmtest.JSON(map[string]any{"mode": "chat", "reason": "a greeting"}, llmtest.Usage(10, 10)))
	ann := &longhaul.User{ID: "ann"}
	if _, err := f.activityEnv().ExecuteActivity(f.acts.Classify, contract.ClassifyRequest{
		Caller: contract.Caller{Agent: "assistant", Principal: ann, Model: "gpt-4o,llama3.1:8b"}, Messages: userMessage("hi")}); err != nil {
		t.Fatal(err)
	}
	if got := costBy(t, l, ann.Key()); got != 20000 {
		t.Errorf("a structured call on the list gpt-4o,llama3.1:8b cost %d micro-dollars, want 20000 (gpt-4o's price)", got)
	}
}
