package contract

import (
	"slices"
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
	// State is what the fork reuses of the old run as the API read it
	// when it decided the point (from one read of the run, QueryFork): how
	// the run went and, at a step, its plans cut there (ForkPlans). At a
	// tool call the fork still fetches the recorded loop (ReadFork with
	// Decided). A fork recorded before carries none: ReadFork reads all
	// and decides again.
	State *ForkState `json:"state,omitempty"`
}

// QueryFork is the query of AgentWorkflow that answers a ForkSource: what
// the API decides a fork point of the run from, in one read.
const QueryFork = "fork"

// ForkSource is what a run answers QueryFork with.
type ForkSource struct {
	// State is the run's state, as QueryState answers it.
	State RunState `json:"state"`
	// Request is the input the run started with (the client's request),
	// nil once the run continued as new (the first execution's start
	// event holds it then).
	Request *AgentInput `json:"request,omitempty"`
	// Events are the events of the run's log that fork points are found
	// by (IsForkEvent) that the run still holds; Archives the stored
	// stretches of the log before them; Last the log's last offset.
	Events   []longhaul.Event `json:"events"`
	Archives []EventArchive   `json:"archives,omitempty"`
	Last     int64            `json:"last"`
}

// IsForkEvent reports whether fork points are found by events of type t:
// plans and step results (a step point), tool calls' starts and outputs
// (a tool call point).
func IsForkEvent(t longhaul.EventType) bool {
	switch t {
	case longhaul.EventPlan, longhaul.EventStepResult, longhaul.EventToolStart, longhaul.EventToolOutput:
		return true
	}
	return false
}

// ForkRequest asks the ReadFork activity for the reusable state of run Run
// at Step or Call (one of them).
type ForkRequest struct {
	Run  string `json:"run"`
	Step string `json:"step,omitempty"`
	Call string `json:"call,omitempty"`
	// Decided says the API decided the point already (Fork.State): only
	// the recorded loop up to Call is read, not the run's state.
	Decided bool `json:"decided,omitempty"`
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
// latest one that holds step with every step it needs finished, that one
// active again with step, every step that needs it or another step run
// anew, and every step that had not finished pending and without results;
// and the reviews of what is kept. A step that finished and needs none of
// those keeps its result: in a plan whose steps name what they need
// (depends_on), a fork at a step of a wave keeps the siblings that
// finished; in a plan that names none, each step needs every step before
// it, so every step after step runs anew. ok is false when no revision
// holds step so.
func ForkPlans(plans []PlanRevision, reviews []longhaul.ReviewData, step string) (kept []PlanRevision, keptReviews []longhaul.ReviewData, ok bool) {
	for r := len(plans) - 1; r >= 0; r-- {
		again := ForkRerun(plans[r].Steps, step)
		if again == nil {
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
			s := &p.Steps[j]
			if !again[s.ID] {
				done[s.ID] = true
				continue
			}
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

// ForkRerun is the set of the steps of a plan that a fork at step runs
// anew: step, the steps that had not finished, and every step that needs
// one of them, however indirectly (see ForkPlans). It is nil when no step
// is step, or when a step that step needs had not finished.
func ForkRerun(steps []longhaul.PlanStep, step string) map[string]bool {
	i := slices.IndexFunc(steps, func(s longhaul.PlanStep) bool { return s.ID == step })
	if i < 0 {
		return nil
	}
	graph := slices.ContainsFunc(steps, func(s longhaul.PlanStep) bool { return len(s.DependsOn) > 0 })
	finished := map[string]bool{}
	for _, s := range steps {
		finished[s.ID] = s.Status == longhaul.StepDone || s.Status == longhaul.StepFailed
	}
	for _, id := range forkNeeds(steps, i, graph) {
		if f, ok := finished[id]; ok && !f {
			return nil
		}
	}
	again := map[string]bool{step: true}
	for _, s := range steps {
		if !finished[s.ID] {
			again[s.ID] = true
		}
	}
	// A step may name a later one (the supervisor orders nothing), so
	// go round until nothing is added.
	for grew := true; grew; {
		grew = false
		for j, s := range steps {
			if !again[s.ID] && slices.ContainsFunc(forkNeeds(steps, j, graph), func(id string) bool { return again[id] }) {
				again[s.ID], grew = true, true
			}
		}
	}
	return again
}

// forkNeeds are the ids of the steps that step i of steps needs: in a
// graph, those it names, and every other step for the completion step
// (which waits for all); otherwise every step before it.
func forkNeeds(steps []longhaul.PlanStep, i int, graph bool) []string {
	var ids []string
	for j, s := range steps {
		switch {
		case j == i:
		case !graph && j < i, graph && steps[i].Kind == longhaul.StepCompletion:
			ids = append(ids, s.ID)
		}
	}
	if graph && steps[i].Kind != longhaul.StepCompletion {
		return steps[i].DependsOn
	}
	return ids
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
