package activities

import (
	"context"
	"errors"

	"github.com/longhaul-dev/longhaul"
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

// spender counts one activity's model calls against the budgets of a
// principal and an agent.
type spender struct {
	a     *Activities
	who   *longhaul.User
	agent string
}

// spender counts against who's and agent's budgets; with neither (an
// evaluation's grading), or as a zero spender, nothing is counted.
func (a *Activities) spender(who *longhaul.User, agent string) spender {
	return spender{a: a, who: who, agent: agent}
}

// call reserves what oreq, a call to model, may spend and returns what
// settles it with the usage the endpoint reported (none, when it failed).
// part names the call within the activity when it makes several (a
// structured answer's correction, a compaction's chunks); empty for one.
func (s spender) call(ctx context.Context, model, part string, oreq openai.ChatCompletionRequest) (settle func(longhaul.Usage), err error) {
	if s.a == nil || s.a.Spend == nil || s.who == nil && s.agent == "" {
		return func(longhaul.Usage) {}, nil
	}
	c := spendCall(ctx, s.who, s.agent, model, part)
	if err := s.a.reserve(ctx, c, oreq); err != nil {
		return nil, err
	}
	return func(u longhaul.Usage) { s.a.settle(ctx, c, u) }, nil
}

// spendCall is the ledger's view of a model call of the running activity:
// keyed by its workflow, run and activity (and part), which stay the same
// on every attempt, so a retry (after a worker died mid-call or before it
// settled) replaces the reservation instead of adding one. A request
// scheduled before it carried its principal counts as "anonymous".
func spendCall(ctx context.Context, principal *longhaul.User, agent, model, part string) budget.Call {
	info := activity.GetInfo(ctx)
	who := "anonymous"
	if principal != nil {
		who = principal.Key()
	}
	id := info.WorkflowExecution.ID + "/" + info.WorkflowExecution.RunID + "/" + info.ActivityID
	if part != "" {
		id += "/" + part
	}
	return budget.Call{ID: id, Principal: who, Key: budget.KeyOf(who), Agent: agent, Model: model}
}

// reserve reserves what oreq may spend against the budgets: its estimated
// input and its max_tokens (else BudgetOutputTokens). Over a budget, the
// call fails with insufficient_quota and is not retried.
func (a *Activities) reserve(ctx context.Context, c budget.Call, oreq openai.ChatCompletionRequest) error {
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
	in, out := int64(usage.PromptTokens), int64(usage.CompletionTokens)
	// The activity's own context may be cancelled already: settling must
	// still be recorded.
	if err := a.Spend.Settle(context.WithoutCancel(ctx), c, in, out); err != nil {
		a.log.Warn("settle a model call's spend", "call", c.ID, "error", err)
	}
	countSpend(ctx, c, in, out, a.Spend.Cost(c.Model, in, out), a.MetricsPrincipal)
}
