package contract

import (
	"strings"

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

// StepWorkflowName is the workflow type of one plan step that runs beside
// others: a child of the agent run (see StepWorkflowID).
const StepWorkflowName = "StepWorkflow"

// stepWorkflowSep joins a run's workflow id and a step id into the id of
// the step's workflow.
const stepWorkflowSep = "/step-"

// StepWorkflowID is the workflow id of step (a plan step's id) of run (the
// agent run's workflow id): derived from both, so a replayed or retried
// start names the same child.
func StepWorkflowID(run, step string) string {
	return run + stepWorkflowSep + step
}

// StepRun is the agent run a workflow works for: its own id, or, for a
// plan step's workflow (workflowType StepWorkflowName), the run whose step
// it is. Activities key what belongs to the run (its stream, its stored
// outputs, what its tools see) by it.
func StepRun(workflowType, id string) string {
	if workflowType != StepWorkflowName {
		return id
	}
	if i := strings.LastIndex(id, stepWorkflowSep); i > 0 {
		return id[:i]
	}
	return id
}

// StepInput is a plan step's workflow's input: the step and what of its
// run the step needs.
type StepInput struct {
	// Agent is the run's input, without its conversation: who runs the
	// step, in which chat, with which options.
	Agent AgentInput `json:"agent"`
	Spec  AgentSpec  `json:"spec"`
	// Model is the model the run works with.
	Model string `json:"model,omitempty"`
	// Stores are the run's vector stores.
	Stores []string          `json:"stores,omitempty"`
	Step   longhaul.PlanStep `json:"step"`
	// Label prefixes the step's activity summaries ("step 2/4").
	Label string `json:"label"`
	// Instructions are a skill step's: the plan, the step, and what the
	// steps it needs found.
	Instructions string `json:"instructions,omitempty"`
	// After is the offset of the step's step_start in the run's log.
	After int64 `json:"after"`
	// ToolSeq is the last tool call number before the step's own calls.
	ToolSeq int64 `json:"tool_seq"`
}

// StepResult is what a plan step's workflow found.
type StepResult struct {
	Result string `json:"result"`
	Failed bool   `json:"failed,omitempty"`
	// Ref names the whole output of a tool step in the store.
	Ref string `json:"ref,omitempty"`
	// Events are the step's own events (tool_start, tool_output,
	// skill_activity, memory_recall), for the run's log.
	Events []longhaul.Event `json:"events,omitempty"`
	// Calls are the step's model calls' usage, for the run's.
	Calls []CallUsage `json:"calls,omitempty"`
}
