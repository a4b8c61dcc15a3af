package runs

import (
	"context"
	"errors"
	"fmt"
)

// CheckBudget refuses, with an ErrOverBudget, a start of a run of agent
// for principal while one of their budgets is used up (GateConfig.Budget).
// Every start the gate makes passes it (StartOrAttach), and so does a
// start the engine makes for a schedule (CheckStart).
func (g *Gate) CheckBudget(ctx context.Context, principal, agent string) error {
	if g.budget == nil {
		return nil
	}
	err := g.budget(ctx, principal, agent)
	var r *Refusal
	if err != nil && !errors.As(err, &r) {
		// The ledger did not answer: the run's own reservation checks
		// again, so the start is not refused for it.
		g.log.WarnContext(ctx, "check budgets", "principal", principal, "error", err)
		return nil
	}
	return err
}

// CheckStart passes a start the engine makes on the caller's behalf (a
// schedule's trigger, POST /v1/schedules/{id}/trigger) through the gate
// every other start passes (StartOrAttach): it waits its turn in the
// admission queue, then refuses it when owner has as many runs as the
// limit allows or a budget of owner or agent is used up. The caller calls
// release once the engine took the start. Its errors are *Refusal.
func (g *Gate) CheckStart(ctx context.Context, owner, agent string) (release func(), err error) {
	if release, err = g.Admit(ctx); err != nil {
		return nil, err
	}
	if err := g.CheckRuns(ctx, owner); err != nil {
		release()
		return nil, err
	}
	if err := g.CheckBudget(ctx, owner, agent); err != nil {
		release()
		return nil, err
	}
	return release, nil
}

// Fires is what the worker's gate of a schedule's runs (the AdmitFire
// activity) needs of the engine: activities.FireGate.
type Fires struct {
	Runs      Service
	Schedules Schedules
}

// RunningRuns counts the agent runs principal has running, as
// Gate.CheckRuns counts them.
func (f Fires) RunningRuns(ctx context.Context, principal string) (int64, error) {
	if !LiteralOK(principal) {
		return 0, errors.New("the principal's name cannot be matched by a visibility query")
	}
	return f.Runs.Count(ctx, Filter{Owner: principal, Running: true})
}

// PauseSchedule pauses schedule id with note.
func (f Fires) PauseSchedule(ctx context.Context, id, note string) error {
	return f.Schedules.Pause(ctx, id, note)
}

// ScheduleKept reports whether the data stored under schedule id must
// stay: the schedule exists, or a run it started is still open (a deleted
// schedule's runs go on, and read its images). The retention job asks it
// (activities.ScheduleKeeper).
func (f Fires) ScheduleKept(ctx context.Context, id string) (bool, error) {
	_, err := f.Schedules.Get(ctx, id)
	switch {
	case err == nil:
		return true, nil
	case !errors.Is(err, ErrNotFound):
		return false, fmt.Errorf("describe schedule %s: %w", id, err)
	}
	n, err := f.Runs.Count(ctx, Filter{AllOwners: true, Schedule: id, Running: true})
	if err != nil {
		return false, fmt.Errorf("count the open runs of schedule %s: %w", id, err)
	}
	return n > 0, nil
}

// DeleteOwnerSchedules deletes every schedule of owner (DELETE /v1/me) and
// returns how many. It lists them through visibility, a moment behind: a
// schedule created in the last second may be missed, and a second call
// deletes it.
func DeleteOwnerSchedules(ctx context.Context, s Schedules, owner string) (int, error) {
	if !LiteralOK(owner) {
		return 0, errors.New("the principal's name cannot be matched by a visibility query")
	}
	n := 0
	var token []byte
	for {
		page, err := s.List(ctx, owner, 100, token)
		if err != nil {
			return n, err
		}
		for _, sc := range page.Schedules {
			if err := s.Delete(ctx, sc.ID); err != nil && !errors.Is(err, ErrNotFound) {
				return n, err
			}
			n++
		}
		if len(page.Next) == 0 {
			return n, nil
		}
		token = page.Next
	}
}
