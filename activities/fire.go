package activities

import (
	"context"
	"errors"
	"fmt"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/access"
	"github.com/longhaul-dev/longhaul/internal/budget"
	"github.com/longhaul-dev/longhaul/internal/identity"
)

// FireGate is what AdmitFire needs of the engine (runs.Fires is one): it
// counts a principal's running runs and pauses a refused schedule.
type FireGate interface {
	// RunningRuns counts the agent runs principal has running.
	RunningRuns(ctx context.Context, principal string) (int64, error)
	// PauseSchedule pauses schedule id; note says why.
	PauseSchedule(ctx context.Context, id, note string) error
}

// budgetChecker is the part of budget.Ledger that says whether a budget
// has room, without reserving.
type budgetChecker interface {
	Check(ctx context.Context, c budget.Call) error
}

// AdmitFire is the gate of a run a schedule started, at its start: the
// schedule's owner is re-resolved as the keys configured now say
// (Activities.Owners; see identity.Resolver.Current) and must still be
// allowed the run's agent; otherwise the fire is refused and the schedule
// paused with the reason, so a removed key's or a demoted admin's
// schedule stops. Then the owner is held to the run limit
// (Activities.MaxRuns, this run counted) and their budgets, as every
// start of the API is (runs.Gate); over them this fire is refused and the
// schedule goes on. Refusals are non-retryable ErrTypeScheduleRefused
// errors.
func (a *Activities) AdmitFire(ctx context.Context, req contract.FireCheck) (contract.FireAdmitted, error) {
	user := req.User
	if a.Owners != nil {
		var err error
		if user, err = a.Owners.Current(req.User); errors.Is(err, identity.ErrOwnerGone) {
			return contract.FireAdmitted{}, a.refuseFire(ctx, req.Schedule, err.Error(), true)
		}
	}
	if _, ok := a.catalog.AgentFor(req.Agent, user); !ok {
		return contract.FireAdmitted{}, a.refuseFire(ctx, req.Schedule,
			fmt.Sprintf("its owner %q may no longer run the agent %q (allow: rules, %s)", user.Key(), req.Agent, access.Describe(user)), true)
	}
	owner := user.Key()
	if a.MaxRuns > 0 && a.Fires != nil {
		n, err := a.Fires.RunningRuns(ctx, owner)
		if err != nil {
			return contract.FireAdmitted{}, fmt.Errorf("count the owner's runs: %w", err)
		}
		// This run is running, and counted.
		if n--; n >= int64(a.MaxRuns) {
			return contract.FireAdmitted{}, a.refuseFire(ctx, req.Schedule,
				fmt.Sprintf("too many runs: its owner has %d running, at most %d at once (LONGHAUL_MAX_RUNS)", n, a.MaxRuns), false)
		}
	}
	if b, ok := a.Spend.(budgetChecker); ok {
		err := b.Check(ctx, budget.Call{Principal: owner, Key: budget.KeyOf(owner), Agent: req.Agent})
		var ex *budget.ExceededError
		switch {
		case errors.As(err, &ex):
			return contract.FireAdmitted{}, a.refuseFire(ctx, req.Schedule, ex.Error(), false)
		case err != nil:
			// The first model call's reservation checks again.
			a.log.WarnContext(ctx, "check the budgets of a scheduled run", "schedule", req.Schedule, "error", err)
		}
	}
	return contract.FireAdmitted{User: user}, nil
}

// refuseFire is the refusal of a fire of schedule id for reason; pause
// pauses the schedule too, with the reason as its note (best effort: the
// next fire pauses it again).
func (a *Activities) refuseFire(ctx context.Context, id, reason string, pause bool) error {
	if pause && a.Fires != nil {
		note := "paused by Longhaul: " + reason
		if err := a.Fires.PauseSchedule(ctx, id, note); err != nil {
			a.log.ErrorContext(ctx, "pause a refused schedule", "schedule", id, "error", err)
		}
	}
	a.log.WarnContext(ctx, "a schedule's run was refused", "schedule", id, "reason", reason, "paused", pause)
	return nonRetryable(longhaul.ErrTypeScheduleRefused, errors.New("the schedule's run was refused: "+reason))
}
