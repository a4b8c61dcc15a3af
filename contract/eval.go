package contract

import (
	"encoding/json"
	"strings"

	"github.com/longhaul-dev/longhaul"
)

// An evaluation replays recorded runs (cases) against a candidate agent
// or model with every tool result pinned from the recording: the run's
// model calls are made anew, its tool calls are answered from the case and
// never run, so a replay has no side effect.

// EvaluationWorkflowName is the registered name of the Evaluation workflow.
const EvaluationWorkflowName = "Evaluation"

// QueryEvalResults returns the cases an Evaluation has finished so far
// ([]CaseResult, in case order).
const QueryEvalResults = "results"

// DefaultEvalParallel is how many cases an Evaluation replays at once when
// EvalInput.Parallel is zero.
const DefaultEvalParallel = 4

// NotRecorded is what a pinned run's model reads for a tool call the case
// has no recording of: a tool error, so the model may go on without it.
const NotRecorded = "error: not recorded: this tool call is not in the recorded run being replayed"

// Pinned makes a run a pinned replay (AgentInput.Pinned): its tool calls
// are answered from Calls, and the models may be swapped.
type Pinned struct {
	// Calls are the recorded tool calls with their results. A call is
	// matched by name and canonical arguments (PinnedKey), else by name and
	// order among the calls of that name not yet used (see PinnedMatch).
	Calls []PinnedCall `json:"calls"`
	// Model, when set, is the model of every model call (as Fork.Model);
	// Models, applied after it, sets the model of single roles.
	Model  string     `json:"model,omitempty"`
	Models RoleModels `json:"models,omitzero"`
}

// PinnedCall is one recorded tool call and its result.
type PinnedCall struct {
	Name string `json:"name"`
	// Arguments are the call's arguments as canonical JSON (CanonicalJSON).
	Arguments string `json:"arguments"`
	// Content is the result the model read; Error says the call failed
	// (Content is then the "error: …" the model read).
	Content string `json:"content"`
	Error   bool   `json:"error,omitempty"`
	// Match says how a replayed call found its recording: "exact",
	// "order" or "none" (set on ReplayedCall only).
	Match string `json:"match,omitempty"`
}

// How a replayed tool call matched a recorded one.
const (
	MatchExact = "exact"
	MatchOrder = "order"
	MatchNone  = "none"
)

// ReplayData is what a pinned run reports of its tool calls
// (AgentResult.Replay).
type ReplayData struct {
	// Calls are the tool calls the run made, in order, each with the
	// result it was given and how it matched.
	Calls []PinnedCall `json:"calls"`
	// NotRecorded counts the calls the case had no recording of.
	NotRecorded int `json:"not_recorded"`
	// Plan is the titles of the steps of the run's last plan (agentic).
	Plan []string `json:"plan,omitempty"`
}

// EvalCase is one case as the Evaluation replays it: what was recorded.
type EvalCase struct {
	ID       string             `json:"id"`
	Agent    string             `json:"agent"`
	Messages []longhaul.Message `json:"messages"`
	Calls    []PinnedCall       `json:"tool_calls"`
	Plan     []string           `json:"plan,omitempty"`
	Answer   string             `json:"answer"`
	Usage    longhaul.Usage     `json:"usage"`
}

// EvalInput starts an Evaluation.
type EvalInput struct {
	Cases []EvalCase `json:"cases"`
	// Graders is the graders file's content (YAML), read by GradeCase.
	Graders string `json:"graders,omitempty"`
	// Model and Models swap the cases' models (see Pinned).
	Model  string     `json:"model,omitempty"`
	Models RoleModels `json:"models,omitzero"`
	// GradeModel is the model of rubric graders; empty: the agent's.
	GradeModel string `json:"grade_model,omitempty"`
	// Parallel bounds the cases replayed at once (0: DefaultEvalParallel).
	Parallel int `json:"parallel,omitempty"`
	// TaskQueue is where the replays run (the Evaluation's own when empty).
	TaskQueue string `json:"task_queue,omitempty"`
}

// GradeRequest asks GradeCase to grade one replayed case.
type GradeRequest struct {
	Case       EvalCase    `json:"case"`
	Graders    string      `json:"graders,omitempty"`
	GradeModel string      `json:"grade_model,omitempty"`
	Result     AgentResult `json:"result"`
	// Error is why the replay failed, if it did.
	Error string `json:"error,omitempty"`
}

// GraderResult is one grader's verdict on a case.
type GraderResult struct {
	Grader string `json:"grader"`
	Pass   bool   `json:"pass"`
	Reason string `json:"reason,omitempty"`
}

// CaseResult is one case's outcome.
type CaseResult struct {
	Case   string         `json:"case"`
	Pass   bool           `json:"pass"`
	Error  string         `json:"error,omitempty"`
	Grades []GraderResult `json:"grades"`
	// Answer is the replay's answer; AnswerDiff its line diff against the
	// recorded one (empty when they are equal).
	Answer     string `json:"answer"`
	AnswerDiff string `json:"answer_diff,omitempty"`
	// Calls are the replay's tool calls; CallsDiff lists how they differ
	// from the recorded ones (empty when they are the same).
	Calls       []PinnedCall `json:"tool_calls"`
	CallsDiff   []string     `json:"tool_calls_diff,omitempty"`
	NotRecorded int          `json:"not_recorded"`
	PlanDiff    []string     `json:"plan_diff,omitempty"`
	// Usage is the replay's, Recorded the recorded run's.
	Usage    longhaul.Usage `json:"usage"`
	Recorded longhaul.Usage `json:"recorded_usage"`
	// GradeUsage is what rubric graders spent.
	GradeUsage longhaul.Usage `json:"grade_usage,omitzero"`
}

// EvalResult is what an Evaluation returns.
type EvalResult struct {
	Cases  []CaseResult `json:"cases"`
	Passed int          `json:"passed"`
	Failed int          `json:"failed"`
}

// CanonicalJSON is s as canonical JSON: decoded and encoded again, so
// object keys are sorted and spacing is gone (numbers are float64s, as
// JSON Schema's: 1.0 and 1 are the same); s itself, trimmed, when it is
// not JSON. (json.Unmarshal, which workflowcheck is told is safe: Marshal
// sorts the keys of the maps it decoded.)
func CanonicalJSON(s string) string {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return strings.TrimSpace(s)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return strings.TrimSpace(s)
	}
	return string(b)
}

// PinnedMatch finds the recorded call that answers a call of tool name
// with arguments args, among calls not yet used: first one with the same
// name and canonical arguments, else the first unused one of that name (a
// call whose arguments changed a little, as a date or a phrasing, still
// reads the result recorded at its place). It returns the index and how
// it matched, or -1 and MatchNone.
func PinnedMatch(calls []PinnedCall, used []bool, name, args string) (int, string) {
	canon := CanonicalJSON(args)
	for i, c := range calls {
		if !used[i] && c.Name == name && CanonicalJSON(c.Arguments) == canon {
			return i, MatchExact
		}
	}
	for i, c := range calls {
		if !used[i] && c.Name == name {
			return i, MatchOrder
		}
	}
	return -1, MatchNone
}
