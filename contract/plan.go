package contract

import (
	"github.com/longhaul-dev/longhaul"
)

// DefaultMaxPlanSteps bounds a plan's length when a request sets no bound.
const DefaultMaxPlanSteps = 8

// PlanRequest asks the planner for a plan, or for a revision of the steps
// that remain.
type PlanRequest struct {
	Caller
	Messages []longhaul.Message `json:"messages"`
	// Tools and Skills are the run's scope: the only targets a step may name.
	Tools  []string    `json:"tools,omitempty"`
	Skills []SkillSpec `json:"skills,omitempty"`
	// MaxSteps bounds the new steps; DefaultMaxPlanSteps when zero.
	MaxSteps int `json:"max_steps,omitempty"`
	// Memory offers memory steps: the agent has the user's long-term memory.
	Memory bool `json:"memory,omitempty"`
	// Revision is the number the new plan will have.
	Revision int `json:"revision"`
	// Done are the steps already finished, with their results; a revision
	// plans only what comes after them.
	Done []longhaul.PlanStep `json:"done,omitempty"`
	// Previous is the plan being revised, and Feedback why.
	Previous *longhaul.Plan `json:"previous,omitempty"`
	Feedback string         `json:"feedback,omitempty"`
}

// PlanResponse is the planner's answer: the goal and the new steps (ids and
// statuses are the workflow's to assign). A step's DependsOn holds the
// planner's numbers of the steps it needs ("1" the first new step), which
// the workflow turns into ids.
type PlanResponse struct {
	Goal  string              `json:"goal"`
	Steps []longhaul.PlanStep `json:"steps"`
	Usage longhaul.Usage      `json:"usage"`
}

// PlanCheckRequest asks the plan supervisor to review a plan.
type PlanCheckRequest struct {
	Caller
	Messages []longhaul.Message `json:"messages,omitempty"`
	Plan     longhaul.Plan      `json:"plan"`
	// Tools and Skills are the run's scope.
	Tools  []string    `json:"tools,omitempty"`
	Skills []SkillSpec `json:"skills,omitempty"`
	// MaxSteps bounds the plan's steps still to run.
	MaxSteps int `json:"max_steps,omitempty"`
	// ModelReview asks for a model's review after the deterministic checks.
	ModelReview bool `json:"model_review,omitempty"`
	// Memory allows memory steps.
	Memory bool `json:"memory,omitempty"`
}

// PlanCheck is the plan supervisor's verdict.
type PlanCheck struct {
	OK bool `json:"ok"`
	// Problems say what is wrong, for the planner to fix.
	Problems []string       `json:"problems,omitempty"`
	Usage    longhaul.Usage `json:"usage"`
}

// StepReviewRequest asks the step supervisor to review a step's result.
type StepReviewRequest struct {
	Caller
	Messages []longhaul.Message `json:"messages,omitempty"`
	Plan     longhaul.Plan      `json:"plan"`
	// Step is the reviewed step, with its status and result.
	Step longhaul.PlanStep `json:"step"`
}

// StepReview is the step supervisor's verdict.
type StepReview struct {
	Decision string         `json:"decision"`
	Reason   string         `json:"reason"`
	Usage    longhaul.Usage `json:"usage"`
}

// ClassifyRequest asks how an auto-mode agent should run a request.
type ClassifyRequest struct {
	Caller
	Messages []longhaul.Message `json:"messages"`
}

// Dispatch is the dispatcher's choice for a request.
type Dispatch struct {
	// Mode is "chat" or "agentic".
	Mode   string         `json:"mode"`
	Reason string         `json:"reason"`
	Usage  longhaul.Usage `json:"usage"`
}
