package api

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul/api/usageapi"
	"github.com/longhaul-dev/longhaul/api/web"
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

// budgetedRoutes are the routes that start runs, which admission refuses
// with 429 insufficient_quota while a budget of the caller is used up.
var budgetedRoutes = []string{"/chat/completions", "/responses", "/runs"}

// usageRoutes registers GET /v1/usage and the budgets' admission check,
// which runs before each of budgetedRoutes' own handlers (fiber goes on to
// the next route registered for the path when it calls Next): so it must
// be called before they are registered.
func (s *Server) usageRoutes(v1 fiber.Router) {
	h := &usageapi.Handlers{Operators: s.cfg.UsageOperators}
	if s.cfg.Usage != nil {
		h.Store = s.cfg.Usage
	}
	v1.Get("/usage", h.Get)
	for _, r := range budgetedRoutes {
		v1.Post(r, s.budgetGate)
	}
}

// budgetGate refuses a request that would start a run while a budget of
// its principal, API key or agent (the body's agent, else its model) is
// used up: OpenAI's 429 insufficient_quota, naming the limit and when it
// resets. A run already going stops at its next model call instead (the
// worker's reservation, activities/budget.go).
func (s *Server) budgetGate(c *fiber.Ctx) error {
	if s.cfg.Usage == nil || len(s.cfg.Usage.Limits()) == 0 {
		// Nothing to refuse: the body is not read twice for nothing.
		return c.Next()
	}
	var body struct {
		Model string `json:"model"`
		Agent string `json:"agent"`
	}
	_ = json.Unmarshal(c.Body(), &body) // a bad body is the handler's to refuse
	p := principal(c)
	call := budget.Call{Principal: p.Name, Key: budget.KeyOf(p.Name), Agent: body.Agent}
	if call.Agent == "" {
		call.Agent = body.Model
	}
	err := s.cfg.Usage.Check(c.UserContext(), call)
	var ex *budget.ExceededError
	switch {
	case errors.As(err, &ex):
		return web.InsufficientQuota(ex.Error())
	case err != nil:
		// The ledger's database did not answer: the run's own reservation
		// will check again, so the request is not refused for it.
		s.log.WarnContext(c.UserContext(), "check budgets", "error", err)
	}
	return c.Next()
}

// budgetCheck is the gate's budget check (runs.GateConfig.Budget): the
// check budgetGate makes, for the starts no route of budgetedRoutes makes
// (a schedule's trigger, a fork).
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
