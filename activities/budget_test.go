package activities_test

import (
	"context"
	"path/filepath"
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
