package workflows

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/textcut"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Bounds of an agentic run.
const (
	// maxPlanSteps bounds the steps a plan may still have to run.
	maxPlanSteps = contract.DefaultMaxPlanSteps
	// stepResultLimit bounds a step's result kept in the run's state.
	stepResultLimit = 16000
	// resultContext bounds each step result given to the final answer.
	resultContext = 6000
)

// agentic is the planning pipeline: plan and check the plan; run its steps,
// having each result reviewed; re-plan what remains when a review asks for
// it, within the agent's re-plan budget; the completion step answers.
func (r *run) agentic(ctx workflow.Context) (contract.AgentResult, error) {
	r.state.ReplansRemaining = r.spec.MaxReplans
	ok, err := r.newPlan(ctx, "initial plan", "")
	if err != nil {
		return contract.AgentResult{Model: r.model}, err
	}
	if !ok {
		r.think(ctx, "No valid plan within the re-plan budget; answering directly instead")
		r.state.Mode = contract.ModeChat
		r.state.Dispatch += "; no valid plan within the re-plan budget, so the request ran as a chat"
		return r.chat(ctx)
	}
	return r.pipeline(ctx)
}

// pipeline carries out the current plan from its first pending step. The
// plan is all in the run's state, so a run that continued as new between
// two steps goes on here.
func (r *run) pipeline(ctx workflow.Context) (contract.AgentResult, error) {
	for ran := 0; ; ran++ {
		if ran > 0 && r.shouldContinue(ctx) {
			if err := r.continueAsNew(ctx, nil); err != nil {
				return contract.AgentResult{Model: r.model}, err
			}
		}
		p := r.current()
		i := firstPending(p.Steps)
		if i < 0 {
			// Every plan ends with a completion step; the checks see to it.
			return contract.AgentResult{Model: r.model}, temporal.NewNonRetryableApplicationError("the plan ended without an answer", longhaul.ErrTypePlanIncomplete, nil)
		}
		if p.Steps[i].Kind == longhaul.StepCompletion {
			return r.complete(ctx, i)
		}
		if r.planGraph(ctx, p) {
			if err := r.fanOut(ctx); err != nil {
				return contract.AgentResult{Model: r.model}, err
			}
			continue
		}
		if err := r.runStep(ctx, i); err != nil {
			return contract.AgentResult{Model: r.model}, err
		}
		if err := r.reviewStep(ctx, i); err != nil {
			return contract.AgentResult{Model: r.model}, err
		}
	}
}

// current is the plan being carried out.
func (r *run) current() *contract.PlanRevision {
	for i := len(r.state.Plans) - 1; i >= 0; i-- {
		if p := &r.state.Plans[i]; p.Status == contract.PlanActive || p.Status == contract.PlanDone {
			return p
		}
	}
	return nil
}

func firstPending(steps []longhaul.PlanStep) int {
	for i, s := range steps {
		if s.Status == longhaul.StepPending {
			return i
		}
	}
	return -1
}

// newPlan asks the planner for a plan (or, with a current plan, for the
// steps that remain) and has it checked; a rejected plan goes back to the
// planner with the problems while the re-plan budget lasts. It reports
// whether a new plan is now active; when not, the current plan (if any)
// stays.
func (r *run) newPlan(ctx workflow.Context, reason, feedback string) (bool, error) {
	for {
		rev := len(r.state.Plans) + 1
		cur := r.current()
		plan, problems, err := r.draftPlan(ctx, rev, cur, reason, feedback)
		if err != nil {
			return false, err
		}
		if len(problems) == 0 {
			r.adoptPlan(ctx, cur, plan)
			return true, nil
		}
		r.state.Plans = append(r.state.Plans, contract.PlanRevision{Plan: plan, Status: contract.PlanRejected, Problems: problems})
		review := longhaul.ReviewData{
			Revision: rev, Decision: longhaul.ReviewAdjust, Reason: strings.Join(problems, "; "),
			ReplansRemaining: r.state.ReplansRemaining,
		}
		if r.state.ReplansRemaining == 0 {
			review.Forced = cur != nil
			r.addReview(ctx, review)
			if cur != nil {
				r.think(ctx, "The re-plan budget is used up; continuing with the current plan")
			}
			return false, nil
		}
		r.state.ReplansRemaining--
		review.ReplansRemaining = r.state.ReplansRemaining
		r.addReview(ctx, review)
		reason = fmt.Sprintf("plan v%d was rejected: %s", rev, review.Reason)
		feedback = "the previous plan was rejected: " + review.Reason
	}
}

// draftPlan asks the planner for plan revision rev (with cur, the current
// plan, its steps that remain: the done and failed ones are kept) and has
// the plan checked. It returns the plan and its problems, none when it
// passed; an output the planner could not get right is a problem too.
func (r *run) draftPlan(ctx workflow.Context, rev int, cur *contract.PlanRevision, reason, feedback string) (longhaul.Plan, []string, error) {
	req := contract.PlanRequest{
		Caller: r.caller(r.roleModel(rolePlan)), Messages: r.in.Messages,
		Tools: r.spec.Tools, Skills: r.spec.Skills, MaxSteps: maxPlanSteps,
		Revision: rev, Feedback: feedback, Memory: r.spec.Memory != "",
	}
	var kept []longhaul.PlanStep
	if cur != nil {
		prev := cur.Plan
		req.Previous = &prev
		for _, s := range cur.Steps {
			if s.Status == longhaul.StepDone || s.Status == longhaul.StepFailed {
				kept = append(kept, s)
			}
		}
		req.Done = kept
	}
	r.think(ctx, planningMessage(rev))
	var resp contract.PlanResponse
	err := workflow.ExecuteActivity(r.structuredOptions(ctx, r.roleSummary(fmt.Sprintf("plan v%d", rev), req.Model)), a.Plan, req).Get(ctx, &resp)
	r.addUsage(fmt.Sprintf("plan-v%d", rev), req.Model, resp.Usage)
	plan := longhaul.Plan{Revision: rev, Reason: reason, Goal: resp.Goal, Steps: append([]longhaul.PlanStep(nil), kept...), Translation: r.in.Translation}
	switch {
	case err != nil && errorCode(err) != longhaul.ErrTypeModelBadOutput:
		return plan, nil, err
	case err != nil:
		return plan, []string{errorMessage(err)}, nil
	}
	// The planner names the steps a step needs by their numbers in what
	// it wrote (1 its first new step); the new steps get the ids after
	// base in that order, so number n is the id base+n. Kept steps keep
	// their ids, and the ids are stored, so a later re-plan (which
	// numbers its new steps on) leaves these right. A number past the
	// new steps is an id the plan does not have: the supervisor says so.
	base := r.stepSeq
	for _, s := range resp.Steps {
		r.stepSeq++
		s.ID = strconv.Itoa(r.stepSeq)
		s.DependsOn = stepIDs(base, s.DependsOn)
		s.Status = longhaul.StepPending
		if s.Kind == longhaul.StepCompletion {
			// The answer's own model, when the agent names one,
			// shows in the plan (a larger remote model, say).
			s.Model = r.spec.Models.Answer
		}
		plan.Steps = append(plan.Steps, s)
	}
	problems, err := r.checkPlan(ctx, rev, plan)
	return plan, problems, err
}

// checkPlan has the plan supervisor check plan revision rev (the
// deterministic checks, and a model review when the agent asks for one)
// and returns its problems, none when it passed.
func (r *run) checkPlan(ctx workflow.Context, rev int, plan longhaul.Plan) ([]string, error) {
	var check contract.PlanCheck
	review := r.roleModel(roleReview)
	err := workflow.ExecuteActivity(r.structuredOptions(ctx, r.roleSummary(fmt.Sprintf("review plan v%d", rev), review)), a.SupervisePlan, contract.PlanCheckRequest{
		Caller: r.caller(review), Messages: r.in.Messages, Plan: plan,
		Tools: r.spec.Tools, Skills: r.spec.Skills, MaxSteps: maxPlanSteps, ModelReview: r.spec.ReviewPlan,
		Memory: r.spec.Memory != "",
	}).Get(ctx, &check)
	r.addUsage(fmt.Sprintf("review-plan-v%d", rev), review, check.Usage)
	if err != nil {
		return nil, err
	}
	if check.OK {
		return nil, nil
	}
	if len(check.Problems) == 0 {
		return []string{"the plan supervisor rejected the plan"}, nil
	}
	return check.Problems, nil
}

// adoptPlan makes plan the active one: cur, the plan it replaces (if any),
// drops its pending steps.
func (r *run) adoptPlan(ctx workflow.Context, cur *contract.PlanRevision, plan longhaul.Plan) {
	if cur != nil {
		cur.Status = contract.PlanReplaced
		for i := range cur.Steps {
			if cur.Steps[i].Status == longhaul.StepPending {
				cur.Steps[i].Status = longhaul.StepDropped
			}
		}
	}
	r.state.Plans = append(r.state.Plans, contract.PlanRevision{Plan: plan, Status: contract.PlanActive})
	r.log.emit(workflow.Now(ctx), longhaul.EventPlan, plan)
	r.showPlan(ctx)
}

func planningMessage(rev int) string {
	if rev == 1 {
		return "Planning"
	}
	return fmt.Sprintf("Re-planning (plan v%d)", rev)
}

// runStep carries out step i of the current plan in the run itself:
// startStep, doStep, finishStep.
func (r *run) runStep(ctx workflow.Context, i int) error {
	p := r.current()
	step := &p.Steps[i]
	label := fmt.Sprintf("step %d/%d", i+1, len(p.Steps))
	r.startStep(ctx, p, i)
	instructions := ""
	if step.Kind == longhaul.StepSkill {
		instructions = r.stepInstructions(p, i)
	}
	out, err := r.doStep(ctx, *step, label, instructions)
	if err != nil {
		return err
	}
	step.ResultRef = out.Ref
	r.finishStep(ctx, step, out.Result, out.Failed)
	return nil
}

// doStep does a plan step's work, in the run or in the step's own
// workflow (StepWorkflow): a tool step is one tool activity; a skill step
// is the skill's own tool loop, limited to its tools, with instructions; a
// memory step is a search of the user's memory. It returns an error only
// when the run cannot go on (cancelled); a step that failed is a result.
func (r *run) doStep(ctx workflow.Context, step longhaul.PlanStep, label, instructions string) (contract.StepResult, error) {
	var out contract.StepResult
	switch step.Kind {
	case longhaul.StepTool:
		call := longhaul.ToolCall{ID: "step-" + step.ID, Name: step.Target, Arguments: string(step.Arguments)}
		if call.Arguments == "" {
			call.Arguments = "{}"
		}
		msgs, outcomes := r.callTools(ctx, []longhaul.ToolCall{call}, map[string]string{call.ID: step.About}, "", label)
		out.Result, out.Failed, out.Ref = msgs[0].Content, outcomes[0].failed, outcomes[0].ref
	case longhaul.StepSkill:
		s, ok := r.skill(step.Target)
		if !ok {
			out.Result, out.Failed = fmt.Sprintf("error: skill %q is not available", step.Target), true
			break
		}
		res, err := r.toolLoop(ctx, LoopState{
			Call:         "step-" + step.ID + "-",
			Label:        label + " skill " + s.ID,
			Messages:     []longhaul.Message{{Role: longhaul.RoleUser, Content: step.Input}},
			Scope:        s.Tools,
			MaxTurns:     s.MaxTurns,
			Skill:        s.ID,
			Model:        s.Model,
			Instructions: instructions,
			StepID:       step.ID,
		})
		if temporal.IsCanceledError(err) {
			return out, err
		}
		out.Result = res.Content
		if err != nil {
			out.Result, out.Failed = "error: "+errorMessage(err), true
		}
		r.log.emit(workflow.Now(ctx), longhaul.EventSkillActivity, longhaul.SkillActivityData{Skill: s.ID, StepID: step.ID, Message: "finished"})
	case longhaul.StepMemory:
		var err error
		out.Result, out.Failed, err = r.memoryStep(ctx, &step, label)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

func (r *run) skill(id string) (contract.SkillSpec, bool) {
	for _, s := range r.spec.Skills {
		if s.ID == id {
			return s, true
		}
	}
	return contract.SkillSpec{}, false
}

func (r *run) startStep(ctx workflow.Context, p *contract.PlanRevision, i int) {
	step := &p.Steps[i]
	step.Status = longhaul.StepRunning
	r.log.emit(workflow.Now(ctx), longhaul.EventStepStart, longhaul.StepStartData{
		StepID: step.ID, Index: i + 1, Total: len(p.Steps), Kind: step.Kind, Target: step.Target, Title: step.Title, About: step.About,
	})
	r.showPlan(ctx)
}

func (r *run) finishStep(ctx workflow.Context, step *longhaul.PlanStep, result string, failed bool) {
	step.Status = longhaul.StepDone
	if failed {
		step.Status = longhaul.StepFailed
	}
	step.Result = textcut.Runes(result, stepResultLimit)
	out := textcut.Runes(result, toolOutputExcerpt)
	r.log.emit(workflow.Now(ctx), longhaul.EventStepResult, longhaul.StepResultData{
		StepID: step.ID, Status: step.Status, Output: out, Truncated: len(out) < len(result),
	})
	r.showPlan(ctx)
}

// stepInstructions tell a skill's loop which step of which plan it runs.
func (r *run) stepInstructions(p *contract.PlanRevision, i int) string {
	s := p.Steps[i]
	var b strings.Builder
	b.WriteString(fmt.Sprintf("# Your task\n\nYou are carrying out step %d of %d of a plan whose goal is: %s\n\nThis step: %s\n", i+1, len(p.Steps), p.Goal, s.Title))
	if s.Success != "" {
		b.WriteString(fmt.Sprintf("It succeeds when: %s\n", s.Success))
	}
	b.WriteString("\nUse your tools as needed, then report what you found — facts, figures and the URLs of the pages you read — plainly and completely, for the final answer to build on. Say so if you could not find something.")
	notes := r.findings(p, i, 2000)
	if isGraph(p) {
		// A step of a graph reads what the steps it needs found.
		notes = strings.TrimSpace(strings.Join(neededFindings(p, i, 2000), ""))
	}
	if notes != "" {
		b.WriteString("\n\n# What earlier steps found\n\n" + notes)
	}
	return b.String()
}

// findings lists the results of the finished steps before step i, each cut
// to limit characters.
func (r *run) findings(p *contract.PlanRevision, i, limit int) string {
	return strings.TrimSpace(strings.Join(r.stepFindings(p, i, limit), ""))
}

// stepFindings are the results of the finished steps before step i, one
// entry a step, each cut to limit characters.
func (r *run) stepFindings(p *contract.PlanRevision, i, limit int) []string {
	var out []string
	for _, s := range p.Steps[:i] {
		if s.Status != longhaul.StepDone && s.Status != longhaul.StepFailed {
			continue
		}
		out = append(out, finding(s, limit))
	}
	return out
}

// finding is a finished step's result for the steps after it, cut to
// limit characters.
func finding(s longhaul.PlanStep, limit int) string {
	label := s.Title
	if s.Target != "" {
		label = s.Kind + " " + s.Target + " — " + s.Title
	}
	if s.About != "" {
		label += " (" + s.About + ")"
	}
	return fmt.Sprintf("## Step %s: %s\n\n%s\n\n", s.ID, label, textcut.Runes(s.Result, limit))
}

// reviewStep has the step supervisor review step i's result (judgeStep)
// and re-plans what remains when the review asks for it.
func (r *run) reviewStep(ctx workflow.Context, i int) error {
	replan, err := r.judgeStep(ctx, i)
	if err != nil || replan == nil {
		return err
	}
	_, err = r.newPlan(ctx, replan.reason, replan.feedback)
	return err
}

// replan is why a review asks for a new plan: the plan's reason and the
// planner's feedback.
type replan struct{ reason, feedback string }

// judgeStep has the step supervisor review step i's result. An adjust
// asks for a re-plan of what remains (the replan it returns) while the
// budget lasts; once it is used up the run goes on with the current plan
// and says so. A reviewer that fails does not stop the run: the step
// counts as reviewed ok.
func (r *run) judgeStep(ctx workflow.Context, i int) (*replan, error) {
	p := r.current()
	step := p.Steps[i]
	var v contract.StepReview
	model := r.roleModel(roleReview)
	err := workflow.ExecuteActivity(r.structuredOptions(ctx, r.roleSummary(fmt.Sprintf("review step %d", i+1), model)), a.ReviewStep, contract.StepReviewRequest{
		Caller: r.caller(model), Messages: r.in.Messages, Plan: p.Plan, Step: step,
	}).Get(ctx, &v)
	r.addUsage("review-step-"+step.ID, model, v.Usage)
	if temporal.IsCanceledError(err) {
		return nil, err
	}
	if err != nil {
		v = contract.StepReview{Decision: longhaul.ReviewOK, Reason: "review unavailable: " + errorMessage(err)}
	}
	review := longhaul.ReviewData{StepID: step.ID, Revision: p.Revision, Decision: v.Decision, Reason: v.Reason, ReplansRemaining: r.state.ReplansRemaining}
	if v.Decision != longhaul.ReviewAdjust {
		review.Decision = longhaul.ReviewOK
		r.addReview(ctx, review)
		return nil, nil
	}
	if r.state.ReplansRemaining == 0 {
		review.Forced = true
		r.addReview(ctx, review)
		r.think(ctx, "The re-plan budget is used up; continuing with the current plan")
		return nil, nil
	}
	r.state.ReplansRemaining--
	review.ReplansRemaining = r.state.ReplansRemaining
	r.addReview(ctx, review)
	return &replan{
		reason:   fmt.Sprintf("review of step %s: %s", step.ID, v.Reason),
		feedback: "the review of step " + step.ID + " asked for a change: " + v.Reason,
	}, nil
}

func (r *run) addReview(ctx workflow.Context, d longhaul.ReviewData) {
	r.state.Reviews = append(r.state.Reviews, d)
	r.log.emit(workflow.Now(ctx), longhaul.EventReview, d)
}

// complete runs the completion step: the answer, streamed like a chat
// turn, written from what the steps found.
func (r *run) complete(ctx workflow.Context, i int) (contract.AgentResult, error) {
	p := r.current()
	label := fmt.Sprintf("step %d/%d answer", i+1, len(p.Steps))
	r.startStep(ctx, p, i)
	step := &p.Steps[i]
	var b strings.Builder
	b.WriteString(fmt.Sprintf("# Answering\n\nYou planned and carried out the work below to answer the user's request. The goal: %s\n", p.Goal))
	if step.Input != "" {
		b.WriteString(fmt.Sprintf("\nThe answer must: %s\n", step.Input))
	}
	b.WriteString("\nWrite the final answer for the user now, from these findings. Cite the URLs of pages that were actually read for the claims they support, never other URLs; say what could not be found or checked.")
	// The findings follow the prompt, one message a step, so that a
	// window too small for all of them cuts each in turn, not the last.
	findings := r.stepFindings(p, i, resultContext)
	if len(findings) > 0 {
		b.WriteString("\n\n# Findings\n\nThe findings follow, one message per step.")
	}
	if t := r.in.Translation; t != nil {
		b.WriteString("\n\n" + answerInLanguage(t))
		label += " in " + t.Language
	}
	opts := r.callOptions(true)
	r.state.Turns++
	runModel := r.model
	req := contract.ModelRequest{
		Call: "answer", Agent: r.spec.ID, Model: r.roleModel(roleAnswer), Messages: r.in.Messages, Options: opts,
		Publish: !r.in.Quiet && publishes(opts), Instructions: b.String(), Findings: findings, Summary: r.summary,
	}
	resp, err := r.callFitted(ctx, &req, label, true)
	r.summary = req.Summary
	if r.spec.Models.Answer != "" {
		// The answer's own model stays the answer's: what follows it
		// (remembering the turn) runs on the agent's model.
		r.model = runModel
	}
	if err != nil {
		return contract.AgentResult{Model: r.model}, err
	}
	msg := resp.Message
	msg.ToolCalls = nil
	r.finishStep(ctx, step, msg.Content, false)
	p.Status = contract.PlanDone
	r.showPlan(ctx)
	reason := "stop"
	if resp.FinishReason == "length" {
		reason = "length"
	}
	return contract.AgentResult{Content: msg.Content, FinishReason: reason, Cut: longhaul.CutOf(resp.FinishReason, msg.Content, resp.Reasoning),
		Messages: []longhaul.Message{msg}, Model: resp.Model}, nil
}

// think emits a progress line.
func (r *run) think(ctx workflow.Context, msg string) {
	r.log.emit(workflow.Now(ctx), longhaul.EventThinking, longhaul.ThinkingData{Message: msg})
}

// addUsage counts a call's usage in the run's total and per call, with
// the model reference the call was made with.
func (r *run) addUsage(call, model string, u longhaul.Usage) {
	if u == (longhaul.Usage{}) {
		return
	}
	r.usage = r.usage.Add(u)
	r.state.Calls = append(r.state.Calls, contract.CallUsage{Call: call, Model: model, Usage: u})
}

// showPlan puts the current plan in the workflow's current details, as a
// Markdown checklist the Temporal UI shows.
func (r *run) showPlan(ctx workflow.Context) {
	p := r.current()
	if p == nil {
		return
	}
	workflow.SetCurrentDetails(ctx, planMarkdown(p))
}

func planMarkdown(p *contract.PlanRevision) string {
	var b strings.Builder
	b.WriteString(fmt.Sprintf("**Plan v%d** — %s\n\n", p.Revision, p.Goal))
	if t := p.Translation; t != nil {
		b.WriteString(translationMarkdown(t) + "\n\n")
	}
	if p.Revision > 1 {
		b.WriteString(fmt.Sprintf("_Revised: %s_\n\n", p.Reason))
	}
	for i, s := range p.Steps {
		box := "[ ]"
		if s.Status == longhaul.StepDone || s.Status == longhaul.StepFailed {
			box = "[x]"
		}
		what := s.Title
		if s.Kind != longhaul.StepCompletion {
			what = fmt.Sprintf("%s `%s` — %s", s.Kind, s.Target, s.Title)
		} else if s.Model != "" {
			what += fmt.Sprintf(" (answered by `%s`)", s.Model)
		}
		if s.About != "" {
			what += " (" + s.About + ")"
		}
		what += needsMarkdown(p, s)
		state := ""
		switch s.Status {
		case longhaul.StepRunning:
			state = " — **running**"
		case longhaul.StepFailed:
			state = " — **failed**"
		}
		b.WriteString(fmt.Sprintf("- %s %d. %s%s\n", box, i+1, what, state))
	}
	return b.String()
}
