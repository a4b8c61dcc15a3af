package api

import (
	"context"
	"errors"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul/api/usageapi"
	"github.com/longhaul-dev/longhaul/internal/budget"
	"github.com/longhaul-dev/longhaul/internal/runs"
)

// UsageLedger is the usage ledger (budget.Ledger): what GET /v1/usage
// reads, and what admission asks whether a principal's budgets have room.
type UsageLedger interface {
	usageapi.Store
	// Check returns a *budget.ExceededError when a limit that applies
	// to the call is used up.
	Check(ctx context.Context, c budget.Call) error
	// Limits are the budgets the ledger holds calls to.
	Limits() []budget.Limit
}

var _ UsageLedger = (*budget.Ledger)(nil)

// usageRoutes registers GET /v1/usage. Budgets refuse starts at the runs
// gate (budgetCheck), the one author of runs, whatever route or schedule
// asks for the start.
func (s *Server) usageRoutes(v1 fiber.Router) {
	h := &usageapi.Handlers{Operators: s.cfg.UsageOperators}
	if s.cfg.Usage != nil {
		h.Store = s.cfg.Usage
	}
	v1.Get("/usage", h.Get)
}

// budgetCheck is the gate's budget check (runs.GateConfig.Budget): a
// start of a run of agent for principal while a budget of the principal,
// its API key or the agent is used up is refused with OpenAI's 429
// insufficient_quota, naming the limit and when it resets. A run already
// going stops at its next model call instead (the worker's reservation,
// activities/budget.go).
func (s *Server) budgetCheck(ctx context.Context, principal, agent string) error {
	if s.cfg.Usage == nil || len(s.cfg.Usage.Limits()) == 0 {
		return nil
	}
	err := s.cfg.Usage.Check(ctx, budget.Call{Principal: principal, Key: budget.KeyOf(principal), Agent: agent})
	var ex *budget.ExceededError
	if errors.As(err, &ex) {
		return runs.OverBudget(ex.Error())
	}
	return err
}
