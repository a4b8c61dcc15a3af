package runsfake

import (
	"context"
	"fmt"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/runs"
)

// Steer implements runs.Service: a running run takes the message (see
// Run.Steers) unless the test made it refuse them (Run.RefuseSteer).
func (s *Service) Steer(_ context.Context, id, _ string, req contract.SteerRequest) (contract.SteerResult, error) {
	r, err := s.get(id)
	if err != nil {
		return contract.SteerResult{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed != nil {
		return contract.SteerResult{}, fmt.Errorf("run %s: %w", id, runs.ErrNotFound)
	}
	if r.refuseSteer || r.state.Waiting != nil {
		return contract.SteerResult{}, runs.NewFailure("", contract.ErrNotSteerable)
	}
	r.steers = append(r.steers, req.Text)
	r.emitLocked(longhaul.EventThinking, longhaul.ThinkingData{Message: "New message from the user: " + req.Text})
	return contract.SteerResult{At: int64(len(r.events))}, nil
}

// Steers are the messages the run took through Steer, in order.
func (r *Run) Steers() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.steers...)
}

// RefuseSteer makes the run refuse the messages Steer hands it, as a run
// that waits for a person or runs a plan does.
func (r *Run) RefuseSteer() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refuseSteer = true
}
