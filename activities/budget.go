package activities

import (
	"context"
	"errors"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/budget"
	"github.com/longhaul-dev/longhaul/internal/window"
	"github.com/sashabaranov/go-openai"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
)

// SpendLedger records what model calls spend and holds it to the budgets
// (internal/budget's Ledger).
type SpendLedger interface {
	// Reserve records what a call may spend, or refuses it with a
	// *budget.ExceededError; a retried call replaces its own reservation.
	Reserve(ctx context.Context, c budget.Call, in, out int64) error
	// Settle records what the call spent, replacing its reservation.
	Settle(ctx context.Context, c budget.Call, in, out int64) error
	// Cost is what the tokens of model cost, in micro-dollars.
	Cost(model string, in, out int64) int64
}

var _ SpendLedger = (*budget.Ledger)(nil)

// DefaultBudgetOutputTokens is Activities.BudgetOutputTokens when none is
// set.
const DefaultBudgetOutputTokens = 4096

// spendCall is the ledger's view of the running ChatCompletion: keyed by
// its workflow, run and activity, which stay the same on every attempt,
// so a retry (after a worker died mid-call or before it settled) replaces
// the reservation instead of adding one.
func spendCall(ctx context.Context, req contract.ModelRequest, model string) budget.Call {
	info := activity.GetInfo(ctx)
	who := "anonymous"
	if req.Principal != nil {
		who = req.Principal.Key()
	}
	return budget.Call{
		ID:        info.WorkflowExecution.ID + "/" + info.WorkflowExecution.RunID + "/" + info.ActivityID,
		Principal: who,
		Key:       budget.KeyOf(who),
		Agent:     req.Agent,
		Model:     model,
	}
}

// reserve reserves what oreq may spend against the budgets: its estimated
// input and its max_tokens (else BudgetOutputTokens). Over a budget, the
// call fails with insufficient_quota and is not retried.
func (a *Activities) reserve(ctx context.Context, c budget.Call, oreq openai.ChatCompletionRequest) error {
	if a.Spend == nil {
		return nil
	}
	out := max(oreq.MaxCompletionTokens, oreq.MaxTokens)
	if out <= 0 {
		out = a.BudgetOutputTokens
	}
	if out <= 0 {
		out = DefaultBudgetOutputTokens
	}
	err := a.Spend.Reserve(ctx, c, int64(window.Request(oreq)), int64(out))
	var ex *budget.ExceededError
	if errors.As(err, &ex) {
		return temporal.NewNonRetryableApplicationError(ex.Error(), longhaul.ErrTypeInsufficientQuota, err)
	}
	return err
}

// settle records what the call spent (nothing, when it failed before the
// endpoint reported usage) and counts it in the spend metrics. A ledger
// that fails is logged, not the call's failure: the answer is there, and
// the reservation stays counted until a retry or the next call settles.
func (a *Activities) settle(ctx context.Context, c budget.Call, usage longhaul.Usage) {
	if a.Spend == nil {
		return
	}
	in, out := int64(usage.PromptTokens), int64(usage.CompletionTokens)
	// The activity's own context may be cancelled already: settling must
	// still be recorded.
	if err := a.Spend.Settle(context.WithoutCancel(ctx), c, in, out); err != nil {
		a.log.Warn("settle a model call's spend", "call", c.ID, "error", err)
	}
	countSpend(ctx, c, in, out, a.Spend.Cost(c.Model, in, out), a.MetricsPrincipal)
}
