package contract

import (
	"strconv"
	"strings"

	"github.com/longhaul-dev/longhaul"
	"go.temporal.io/sdk/temporal"
)

// A fork is a new run that starts from an earlier run's state at a point
// of it (POST /v1/runs/{id}/fork): what the old run did before the point
// is reused, never done again; from the point on the new run works anew,
// with its own id (so its tool calls get idempotency keys of their own).

// SearchAttrForkedFrom is the run a fork was forked from, so that the old
// run (which is closed, and cannot be changed) finds its forks through
// visibility.
var SearchAttrForkedFrom = temporal.NewSearchAttributeKeyKeyword("LonghaulForkedFrom")

// Fork points, as Fork.At names them.
const (
	// ForkStart forks before anything the run did: nothing is reused.
	ForkStart = "start"
	// ForkStepPrefix prefixes a plan step's id ("step-3").
	ForkStepPrefix = "step-"
)

// Fork says which run a run was forked from, and where (AgentInput.Fork).
type Fork struct {
	// Run is the run forked.
	Run string `json:"run"`
	// At is the fork point: ForkStart, a plan step ("step-3") or a tool
	// call id of the run's own tool loop.
	At string `json:"at"`
	// Step is the plan step the fork runs anew from: the steps before it
	// keep their results. Empty unless At is a step.
	Step string `json:"step,omitempty"`
	// Call is the tool call of the old run's own loop after whose turn the
	// fork goes on: that turn's and the earlier turns' model answers and
	// tool results are reused. Empty unless At is a tool call.
	Call string `json:"call,omitempty"`
	// Model, when set, is the model every model call of the fork makes
	// (the agent's, its roles' and its skills' alike).
	Model string `json:"model,omitempty"`
}

// ForkRequest asks the ReadFork activity for the reusable state of run Run
// at Step or Call (one of them).
type ForkRequest struct {
	Run  string `json:"run"`
	Step string `json:"step,omitempty"`
	Call string `json:"call,omitempty"`
}

// ForkState is what a fork reuses of the old run, as ReadFork reads it.
type ForkState struct {
	// Mode and Skill are how the old run went (RunState.Mode, .Skill).
	Mode  string `json:"mode"`
	Skill string `json:"skill,omitempty"`
	// Plans and Reviews are, for a step point, the old run's plan
	// revisions up to the one holding the step, that one active again with
	// the step and every step after it pending; and the reviews of what is
	// kept. StepSeq is the highest step number they hold.
	Plans   []PlanRevision        `json:"plans,omitempty"`
	Reviews []longhaul.ReviewData `json:"reviews,omitempty"`
	StepSeq int                   `json:"step_seq,omitempty"`
	// Messages are, for a tool call point, what the old run's own tool loop
	// added to the conversation up to the call's turn: each turn's model
	// answer and its tool results, as recorded. Turn is the turn to run
	// next; ToolSeq the highest tool call number the old run had used by
	// then.
	Messages []longhaul.Message `json:"messages,omitempty"`
	Turn     int                `json:"turn,omitempty"`
	ToolSeq  int64              `json:"tool_seq,omitempty"`
}

// ForkPlans cuts plans (a run's revisions) at step: the revisions up to the
// latest one that holds step with every step before it finished, that one
// active again with step and every step after it pending and without
// results, and the reviews of what is kept. ok is false when no revision
// holds step so.
func ForkPlans(plans []PlanRevision, reviews []longhaul.ReviewData, step string) (kept []PlanRevision, keptReviews []longhaul.ReviewData, ok bool) {
	for r := len(plans) - 1; r >= 0; r-- {
		i := forkStepIndex(plans[r].Steps, step)
		if i < 0 {
			continue
		}
		kept = make([]PlanRevision, r+1)
		for j, p := range plans[:r+1] {
			kept[j] = p
			kept[j].Steps = append([]longhaul.PlanStep(nil), p.Steps...)
		}
		p := &kept[r]
		p.Status = PlanActive
		done := map[string]bool{}
		for j := range p.Steps {
			if j < i {
				done[p.Steps[j].ID] = true
				continue
			}
			s := &p.Steps[j]
			s.Status, s.Result, s.ResultRef = longhaul.StepPending, "", ""
		}
		for _, v := range reviews {
			if v.Revision < p.Revision || (v.Revision == p.Revision && (v.StepID == "" || done[v.StepID])) {
				keptReviews = append(keptReviews, v)
			}
		}
		return kept, keptReviews, true
	}
	return nil, nil, false
}

// forkStepIndex is the index of step in steps when every step before it
// finished (done or failed), else -1.
func forkStepIndex(steps []longhaul.PlanStep, step string) int {
	for i, s := range steps {
		if s.ID == step {
			return i
		}
		if s.Status != longhaul.StepDone && s.Status != longhaul.StepFailed {
			return -1
		}
	}
	return -1
}

// ForkStepSeq is the highest numeric step id of plans.
func ForkStepSeq(plans []PlanRevision) int {
	n := 0
	for _, p := range plans {
		for _, s := range p.Steps {
			if v, err := strconv.Atoi(s.ID); err == nil && v > n {
				n = v
			}
		}
	}
	return n
}

// ForkStepID is the step id a fork point names ("step-3" or "3"), or "".
func ForkStepID(at string) string {
	id := strings.TrimPrefix(at, ForkStepPrefix)
	if _, err := strconv.Atoi(id); err != nil {
		return ""
	}
	return id
}
