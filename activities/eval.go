package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/evals"
	"github.com/sashabaranov/go-openai"
	"go.temporal.io/sdk/temporal"
)

// GradeCase grades one replayed case of an evaluation: the graders of the
// request's graders file that apply to it (a rubric grader calls the grade
// model, else the agent's), and the comparison of its tool calls, plan and
// answer with the recording. A bad graders file is not retried.
func (a *Activities) GradeCase(ctx context.Context, req contract.GradeRequest) (contract.CaseResult, error) {
	gs, err := evals.ParseGraders([]byte(req.Graders))
	if err != nil {
		return contract.CaseResult{}, temporal.NewNonRetryableApplicationError(err.Error(), longhaul.ErrTypeBadInput, err)
	}
	if req.Error != "" {
		return evals.Result(req.Case, req.Result, req.Error, nil), nil
	}
	calls := []contract.PinnedCall(nil)
	if req.Result.Replay != nil {
		calls = req.Result.Replay.Calls
	}
	judge := &modelJudge{a: a, model: a.gradeModel(req)}
	grades, usage, err := gs.Grade(ctx, req.Case, req.Result.Content, calls, judge)
	if err != nil {
		return contract.CaseResult{}, err
	}
	res := evals.Result(req.Case, req.Result, "", grades)
	res.GradeUsage = usage
	return res, nil
}

// gradeModel is the model rubric graders use: the request's, else the
// case's agent's, else the default.
func (a *Activities) gradeModel(req contract.GradeRequest) string {
	if req.GradeModel != "" {
		return req.GradeModel
	}
	if ag, ok := a.catalog.Agent(req.Case.Agent); ok {
		return a.model(ag.Model)
	}
	return a.model("")
}

// modelJudge grades rubrics with a structured model call.
type modelJudge struct {
	a     *Activities
	model string
}

var _ evals.Judge = (*modelJudge)(nil)

// rubricPrompt asks the grade model for a verdict.
const rubricPrompt = `You grade an AI assistant's answer against a rubric. Read the user's question, the rubric and the answer. Answer with JSON: {"pass": true or false, "reason": "one sentence"}. Pass only if the answer meets every point of the rubric.`

func (j *modelJudge) Judge(ctx context.Context, rubric, question, answer string) (evals.Verdict, error) {
	zero := float32(0)
	msgs := []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: rubricPrompt},
		{Role: openai.ChatMessageRoleUser, Content: fmt.Sprintf("Question:\n%s\n\nRubric:\n%s\n\nAnswer:\n%s", question, rubric, answer)},
	}
	raw, usage, err := j.a.structured(ctx, structuredCall{model: j.model, messages: msgs, name: "grade", schema: json.RawMessage(evals.VerdictSchema), temperature: &zero})
	if err != nil {
		return evals.Verdict{Usage: usage}, err
	}
	var v evals.Verdict
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, temporal.NewApplicationError("grade: "+err.Error(), longhaul.ErrTypeModelBadOutput)
	}
	v.Reason, v.Usage = strings.TrimSpace(v.Reason), usage
	return v, nil
}
