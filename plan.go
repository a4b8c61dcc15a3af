package longhaul

import (
	"encoding/json"
	"slices"
	"strconv"
)

// Step kinds of a plan.
const (
	// StepTool runs one tool with the step's arguments.
	StepTool = "tool"
	// StepSkill runs a skill's own tool loop on the step's input.
	StepSkill = "skill"
	// StepMemory searches the user's long-term memory for the step's
	// input; only agents with memory (memory: tools or recall) plan it.
	StepMemory = "memory"
	// StepCompletion writes the answer; it is always the last step.
	StepCompletion = "completion"
)

// Step statuses.
const (
	StepPending = "pending"
	StepRunning = "running"
	StepDone    = "done"
	StepFailed  = "failed"
	// StepDropped marks a step a re-plan replaced before it ran.
	StepDropped = "dropped"
)

// Plan is one revision of an agentic run's plan. It is also the payload of
// the plan event.
type Plan struct {
	// Revision counts from 1; every re-plan adds one.
	Revision int `json:"revision"`
	// Reason says why this revision was made: "initial", or the review or
	// validation problems that caused the re-plan.
	Reason string `json:"reason"`
	Goal   string `json:"goal"`
	// Steps are in execution order. A re-plan keeps the finished steps and
	// replaces the rest.
	Steps []PlanStep `json:"steps"`
	// Translation is set when the agent works in another language than
	// the user's (language: auto): the request as written and as planned.
	Translation *Translation `json:"translation,omitempty"`
}

// PlanStep is one step of a plan.
type PlanStep struct {
	// ID is unique within a run: "1", "2", … in the order steps were
	// created; a re-plan gives its new steps new ids.
	ID string `json:"id"`
	// Kind is StepTool, StepSkill, StepMemory or StepCompletion.
	Kind string `json:"kind"`
	// Target is the tool or skill the step runs; empty for completion.
	Target string `json:"target,omitempty"`
	// Title is a short description for people.
	Title string `json:"title"`
	// About names what a tool step acts on (a host, a query), for people.
	About string `json:"about,omitempty"`
	// Arguments are a tool step's arguments.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Input is a skill step's task, a memory step's query, or the
	// completion step's instructions.
	Input string `json:"input,omitempty"`
	// Success says what a good result of the step looks like.
	Success string `json:"success,omitempty"`
	// Model is the model a completion step answers with, when the agent
	// names one for the role answer (models: {answer: …}).
	Model string `json:"model,omitempty"`
	// DependsOn are the ids of the steps whose results this step needs.
	// The planner names them by their 1-based positions in the steps it
	// wrote; the workflow turns those into ids when it gives the new steps
	// theirs, so a re-plan (which keeps the finished steps and numbers its
	// new ones on) leaves them right. A plan where no step names any runs
	// its steps one after another in order; otherwise every step whose
	// needs are done runs at once (the completion step waits for all).
	DependsOn []string `json:"depends_on,omitempty"`
	// Status is one of the Step* statuses.
	Status string `json:"status"`
	// Result is the step's output (an excerpt when long; ResultRef then
	// names the whole output in the store).
	Result    string `json:"result,omitempty"`
	ResultRef string `json:"result_ref,omitempty"`
}

// StepStartData is the payload of step_start.
type StepStartData struct {
	StepID string `json:"step_id"`
	// Index is the 1-based position of the step in the current plan, Total
	// the plan's number of steps.
	Index  int    `json:"index"`
	Total  int    `json:"total"`
	Kind   string `json:"kind"`
	Target string `json:"target,omitempty"`
	Title  string `json:"title"`
	About  string `json:"about,omitempty"`
}

// StepResultData is the payload of step_result.
type StepResultData struct {
	StepID string `json:"step_id"`
	Status string `json:"status"`
	// Output is an excerpt of the step's result.
	Output    string `json:"output,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
}

// Review decisions.
const (
	ReviewOK     = "ok"
	ReviewAdjust = "adjust"
)

// ReviewData is the payload of review: a supervisor's verdict on a plan or
// a step.
type ReviewData struct {
	// StepID is the reviewed step, or empty for a plan review.
	StepID string `json:"step_id,omitempty"`
	// Revision is the plan revision reviewed.
	Revision int    `json:"revision"`
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"`
	// ReplansRemaining is the re-plan budget left after this review.
	ReplansRemaining int `json:"replans_remaining"`
	// Forced reports an adjust that could not be acted on because the
	// re-plan budget was used up: the run goes on with the current plan.
	Forced bool `json:"forced,omitempty"`
}

// SkillActivityData is the payload of skill_activity: what a skill's own
// loop is doing.
type SkillActivityData struct {
	Skill   string `json:"skill"`
	StepID  string `json:"step_id,omitempty"`
	Message string `json:"message"`
}

// NeedsIn lists the 1-based positions in steps of the steps s needs
// (DependsOn), in plan order: how people and models read them.
func (s PlanStep) NeedsIn(steps []PlanStep) []string {
	var nums []string
	for i, o := range steps {
		if slices.Contains(s.DependsOn, o.ID) {
			nums = append(nums, strconv.Itoa(i+1))
		}
	}
	return nums
}
