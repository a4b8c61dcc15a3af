package wire

import (
	"errors"
	"slices"
	"strings"

	"github.com/longhaul-dev/longhaul/contract"
)

// checkMultitask checks a run request's multitask_strategy: one of the
// strategies, and only with a metadata.chat_id, which names the chat.
func (r *RunRequest) checkMultitask() error {
	if r.MultitaskStrategy == "" {
		return nil
	}
	if !slices.Contains(contract.MultitaskStrategies, r.MultitaskStrategy) {
		return errors.New("multitask_strategy: must be one of " + strings.Join(contract.MultitaskStrategies, ", "))
	}
	if strings.TrimSpace(r.Metadata["chat_id"]) == "" {
		return errors.New("multitask_strategy: needs metadata.chat_id, the chat whose running run it applies to")
	}
	return nil
}

// RunMultitask says what a run request's multitask strategy did with the
// chat's running run.
type RunMultitask struct {
	// Strategy is the strategy applied: the one asked for, or enqueue when
	// the running run took no message for a steer.
	Strategy string `json:"strategy"`
	// Run is the chat's running run it acted on.
	Run string `json:"run"`
	// Steered says the running run took the message: the answer's id is
	// that run's, and no run started.
	Steered bool `json:"steered,omitempty"`
}

// RunStarted answers POST /v1/runs when a multitask strategy applied:
// RunCreated with what the strategy did.
type RunStarted struct {
	RunCreated
	Multitask *RunMultitask `json:"multitask,omitempty"`
}
