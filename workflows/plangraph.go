package workflows

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// versionPlanGraph marks the runs that carry out a plan whose steps say
// which steps they need (depends_on) as a graph: every step whose needs
// are done at once, each in a workflow of its own (StepWorkflow). A plan
// where no step names any runs in order, as before, without the marker.
const versionPlanGraph = "plan-graph"

// stepToolBlock is how many tool call numbers the run sets aside for each
// step that runs in a workflow of its own, so that the calls of steps
// running at once are named apart ("call_lh<n>"); a skill step's loop makes
// a few calls a turn for a few turns.
const stepToolBlock = 10000

// stepIDs turns the planner's numbers of the steps a step needs into the
// ids of those steps: number n is base+n (see draftPlan). What is no number
// is kept as it is, for the supervisor to refuse.
func stepIDs(base int, numbers []string) []string {
	if len(numbers) == 0 {
		return nil
	}
	ids := make([]string, len(numbers))
	for i, n := range numbers {
		ids[i] = n
		if k, err := strconv.Atoi(n); err == nil {
			ids[i] = strconv.Itoa(base + k)
		}
	}
	return ids
}

// isGraph reports whether a step of plan p names steps it needs.
func isGraph(p *contract.PlanRevision) bool {
	return slices.ContainsFunc(p.Steps, func(s longhaul.PlanStep) bool { return len(s.DependsOn) > 0 })
}

// planGraph reports whether the run carries out p as a graph (fanOut): p
// is one, and the run was not recorded before graphs ran so.
func (r *run) planGraph(ctx workflow.Context, p *contract.PlanRevision) bool {
	return isGraph(p) && workflow.GetVersion(ctx, versionPlanGraph, workflow.DefaultVersion, 1) == 1
}

// neededFindings are the results of the finished steps that step i needs,
// in plan order, each cut to limit characters.
func neededFindings(p *contract.PlanRevision, i, limit int) []string {
	var out []string
	for _, s := range p.Steps {
		if slices.Contains(p.Steps[i].DependsOn, s.ID) && (s.Status == longhaul.StepDone || s.Status == longhaul.StepFailed) {
			out = append(out, finding(s, limit))
		}
	}
	return out
}

// needsMarkdown says in the plan's checklist which steps s needs, by their
// numbers in p: " — needs 1, 2", or "" when it names none.
func needsMarkdown(p *contract.PlanRevision, s longhaul.PlanStep) string {
	nums := s.NeedsIn(p.Steps)
	if len(nums) == 0 {
		return ""
	}
	return " — needs " + strings.Join(nums, ", ")
}

// readySteps are the pending steps of p, but the completion step, whose
// needs are done (finished, failed or not in the plan), in plan order.
func readySteps(p *contract.PlanRevision) []int {
	status := map[string]string{}
	for _, s := range p.Steps {
		status[s.ID] = s.Status
	}
	var out []int
	for i, s := range p.Steps {
		if s.Status != longhaul.StepPending || s.Kind == longhaul.StepCompletion {
			continue
		}
		if !slices.ContainsFunc(s.DependsOn, func(id string) bool {
			st, ok := status[id]
			return ok && st != longhaul.StepDone && st != longhaul.StepFailed
		}) {
			out = append(out, i)
		}
	}
	return out
}

// errPlanStuck ends a run whose steps wait for each other, which the plan
// supervisor's checks rule out.
func errPlanStuck() error {
	return temporal.NewNonRetryableApplicationError("the plan's steps wait for each other", longhaul.ErrTypePlanIncomplete, nil)
}

// inRun reports whether p's steps run in the run itself, one at a time:
// when one may have to wait for a person's approval (only the run takes
// one), or in a pinned replay (only the run holds the recorded calls).
func (r *run) inRun(p *contract.PlanRevision) bool {
	if r.in.Pinned != nil || r.spec.Parallel < 1 {
		return true
	}
	for _, s := range p.Steps {
		if s.Status != longhaul.StepPending {
			continue
		}
		switch s.Kind {
		case longhaul.StepTool:
			if r.needsApproval(s.Target) {
				return true
			}
		case longhaul.StepSkill:
			if sk, ok := r.skill(s.Target); ok && slices.ContainsFunc(sk.Tools, r.needsApproval) {
				return true
			}
		}
	}
	return false
}

// stepDone is how a step's workflow ended.
type stepDone struct {
	i   int
	res contract.StepResult
	err error
}

// fanOut carries out the current plan's steps but the completion step as
// a graph: every step whose needs are done starts at once, up to the
// agent's bound (spec.Parallel), each in a workflow of its own; each is
// reviewed as it finishes, and the steps it let start start then. It
// returns once they are all done, or once a review asked for a new plan:
// the steps still running finish first, their results kept for the
// planner (they are not reviewed: the new plan is). Steps that must run
// in the run itself (inRun) run one at a time, in the graph's order.
func (r *run) fanOut(ctx workflow.Context) error {
	p := r.current()
	if r.inRun(p) {
		ready := readySteps(p)
		if len(ready) == 0 {
			return errPlanStuck()
		}
		if err := r.runStep(ctx, ready[0]); err != nil {
			return err
		}
		return r.reviewStep(ctx, ready[0])
	}
	sel := workflow.NewSelector(ctx)
	var finished []stepDone
	running := 0
	next := func() (stepDone, error) {
		sel.Select(ctx)
		running--
		d := finished[0]
		finished = finished[1:]
		return d, r.endStep(ctx, p, d)
	}
	for {
		for _, i := range readySteps(p) {
			if running >= r.spec.Parallel {
				break
			}
			r.launchStep(ctx, sel, p, i, &finished)
			running++
		}
		if running == 0 {
			if i := firstPending(p.Steps); i >= 0 && p.Steps[i].Kind != longhaul.StepCompletion {
				return errPlanStuck()
			}
			return nil
		}
		d, err := next()
		if err != nil {
			return err
		}
		again, err := r.judgeStep(ctx, d.i)
		if err != nil {
			return err
		}
		if again == nil {
			continue
		}
		for running > 0 {
			if _, err := next(); err != nil {
				return err
			}
		}
		_, err = r.newPlan(ctx, again.reason, again.feedback)
		return err
	}
}

// launchStep starts step i of p in a workflow of its own, a child of the
// run's, and has sel add how it ended to finished.
func (r *run) launchStep(ctx workflow.Context, sel workflow.Selector, p *contract.PlanRevision, i int, finished *[]stepDone) {
	step := p.Steps[i]
	label := fmt.Sprintf("step %d/%d", i+1, len(p.Steps))
	r.startStep(ctx, p, i)
	in := contract.StepInput{
		Agent: r.in.AgentInput, Spec: r.spec, Model: r.model, Stores: r.stores,
		Step: step, Label: label, After: r.log.last, ToolSeq: r.toolSeq,
	}
	r.toolSeq += stepToolBlock
	// The step's workflow needs who runs it and how, not the conversation.
	in.Agent.Messages, in.Agent.Response, in.Agent.Follows, in.Agent.Fork, in.Agent.Webhook = nil, nil, nil, nil, nil
	if step.Kind == longhaul.StepSkill {
		in.Instructions = r.stepInstructions(p, i)
	}
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:          contract.StepWorkflowID(workflow.GetInfo(ctx).WorkflowExecution.ID, step.ID),
		StaticSummary:       label + " " + stepName(step),
		WaitForCancellation: true,
	})
	f := workflow.ExecuteChildWorkflow(cctx, contract.StepWorkflowName, in)
	sel.AddFuture(f, func(f workflow.Future) {
		d := stepDone{i: i}
		d.err = f.Get(ctx, &d.res)
		*finished = append(*finished, d)
	})
}

// endStep puts what step d.i's workflow did into the run: its events, its
// model calls' usage and its result. A workflow that failed is a failed
// step; a cancelled one ends the run.
func (r *run) endStep(ctx workflow.Context, p *contract.PlanRevision, d stepDone) error {
	if d.err != nil {
		if temporal.IsCanceledError(d.err) {
			return d.err
		}
		d.res = contract.StepResult{Result: "error: " + errorMessage(d.err), Failed: true}
	}
	step := &p.Steps[d.i]
	for _, e := range d.res.Events {
		var call longhaul.ToolStartData
		if e.Type == longhaul.EventToolStart && e.Decode(&call) == nil {
			// Other steps started since this one did: the call names
			// its step.
			call.StepID = step.ID
			e = longhaul.NewEvent(e.Type, e.Time, call)
		}
		r.log.append(longhaul.Event{Type: e.Type, Time: e.Time, Data: e.Data})
	}
	for _, c := range d.res.Calls {
		r.addUsage(c.Call, c.Model, c.Usage)
	}
	step.ResultRef = d.res.Ref
	r.finishStep(ctx, step, d.res.Result, d.res.Failed)
	return nil
}

// runID is the id of the agent run the workflow works for: its own, or,
// in a plan step's workflow, the run whose step it is (contract.StepRun).
// What a step's workflow starts for the run (an asked agent's child run)
// is named from it; the step's calls are numbered in a block of their own,
// so the names stay apart.
func runID(ctx workflow.Context) string {
	info := workflow.GetInfo(ctx)
	return contract.StepRun(info.WorkflowType.Name, info.WorkflowExecution.ID)
}

// stepName names a step in a summary: "tool web_fetch (example.com)".
func stepName(s longhaul.PlanStep) string {
	name := s.Kind
	if s.Target != "" {
		name += " " + s.Target
	}
	if s.About != "" {
		name += " (" + s.About + ")"
	}
	return strings.TrimSpace(name + " — " + s.Title)
}

// StepWorkflow carries out one plan step of an agent run, beside the
// run's other steps: the run starts it as a child (fanOut) and takes its
// result, its events and its usage when it ends. Its activities work for
// the run (contract.StepRun): tool progress reaches the run's stream.
func StepWorkflow(ctx workflow.Context, in contract.StepInput) (contract.StepResult, error) {
	workflow.SetCurrentDetails(ctx, in.Label+" "+stepName(in.Step))
	r := &run{
		in: Input{AgentInput: in.Agent}, spec: in.Spec, log: newEventLog(),
		model: in.Model, stores: in.Stores, toolSeq: in.ToolSeq,
		state: contract.RunState{Agent: in.Agent.Agent, User: in.Agent.User.Key(), Status: contract.StatusRunning},
	}
	// The step's events are numbered from its step_start in the run's log
	// (After): a tool call's progress, which a follower shows once it has
	// the offset the call's request names (its tool_start's here), so
	// shows after the step's start in the run's stream. The run numbers
	// the events again when it takes them.
	r.log.restore(in.After-1, nil)
	out, err := r.doStep(ctx, in.Step, in.Label, in.Instructions)
	out.Events = r.log.events
	out.Calls = r.state.Calls
	return out, err
}
