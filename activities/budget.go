package activities

import (
	"context"
	"errors"
	"strconv"
	"strings"

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

// call reserves what oreq, a call to model (canonical), may spend and
// returns what settles it with what the call is charged (see charged).
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
// keyed by its workflow, run and activity (and part) and by the attempt,
// so every attempt is counted: a retry adds its own row and never replaces
// what an earlier attempt spent. An attempt that never settled (its worker
// died mid-call) stays counted at what it reserved. A request scheduled
// before it carried its principal counts as "anonymous".
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
	id += "#" + strconv.Itoa(int(info.Attempt))
	return budget.Call{ID: id, Principal: who, Key: budget.KeyOf(who), Agent: agent, Model: model}
}

// canonical is the reference a model call is priced and counted by: the
// endpoint and model ref resolves to (endpoints.Set's Canonical), never
// the string as a request typed it, so ":gpt-4o" is priced as "gpt-4o"
// and a fallback list as the model that answers.
func (a *Activities) canonical(ref string) string {
	if ref == "" {
		ref = a.defaultModel
	}
	if a.ends == nil {
		return longhaul.PrimaryModel(ref)
	}
	return a.ends.Canonical(ref)
}

// charged is what one model call attempt is charged: the usage its
// endpoint reported; else, when the endpoint worked on it (it answered,
// streamed some of an answer, or the call was cancelled while it did), an
// estimate of the prompt and of the text it produced, reasoning included;
// nothing for a call refused before any answer (a connection refused, an
// HTTP error status). A call cancelled or cut off reports no usage, as
// usage arrives in a stream's last chunk: without the estimate, cancelling
// a long answer and sending again would spend without end.
func charged(oreq openai.ChatCompletionRequest, reported longhaul.Usage, produced string, worked bool) longhaul.Usage {
	if reported.PromptTokens > 0 || reported.CompletionTokens > 0 {
		return reported
	}
	if !worked && produced == "" {
		return longhaul.Usage{}
	}
	in, out := window.Request(oreq), window.Text(produced)
	return longhaul.Usage{PromptTokens: in, CompletionTokens: out, TotalTokens: in + out}
}

// streamCharge is what a streamed chat call is charged (see charged): the
// response's usage, the text the call streamed (its deltas: content and
// reasoning) or answered, and whether the endpoint worked on it, which a
// call that ended in an error did when it streamed anything or was
// cancelled.
func streamCharge(oreq openai.ChatCompletionRequest, resp contract.ModelResponse, err error, streamed string) longhaul.Usage {
	produced := streamed
	if err == nil {
		produced = answerText(resp)
	}
	return charged(oreq, resp.Usage, produced, err == nil || cancelled(err))
}

// unaryCharge is what a call answered whole (not streamed) is charged:
// resp's usage, else an estimate of its prompt and answer when the call
// was answered or cancelled while the endpoint worked on it.
func unaryCharge(ctx context.Context, oreq openai.ChatCompletionRequest, resp openai.ChatCompletionResponse, err error) longhaul.Usage {
	reported := longhaul.Usage{PromptTokens: resp.Usage.PromptTokens, CompletionTokens: resp.Usage.CompletionTokens, TotalTokens: resp.Usage.TotalTokens}
	var produced strings.Builder
	for _, ch := range resp.Choices {
		produced.WriteString(ch.Message.ReasoningContent)
		produced.WriteString(ch.Message.Content)
		for _, tc := range ch.Message.ToolCalls {
			produced.WriteString(tc.Function.Name + tc.Function.Arguments)
		}
	}
	return charged(oreq, reported, produced.String(), err == nil || ctx.Err() != nil)
}

// answerText is the text of a model's answer: reasoning, content and the
// tool calls' names and arguments.
func answerText(resp contract.ModelResponse) string {
	var b strings.Builder
	b.WriteString(resp.Reasoning)
	b.WriteString(resp.Message.Content)
	for _, tc := range resp.Message.ToolCalls {
		b.WriteString(tc.Name + tc.Arguments)
	}
	return b.String()
}

// cancelled reports whether err ends a call that was cancelled: by
// Temporal, or by the run's cancellation over NATS.
func cancelled(err error) bool {
	var appErr *temporal.ApplicationError
	return temporal.IsCanceledError(err) || errors.Is(err, context.Canceled) ||
		errors.As(err, &appErr) && appErr.Type() == longhaul.ErrTypeRunCancelled
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

// settle records what the call spent (see charged) and counts it in the spend metrics. A ledger
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
