package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/textcut"
	"github.com/longhaul-dev/longhaul/skills"
	"github.com/sashabaranov/go-openai"
	"go.temporal.io/sdk/temporal"
)

// resultExcerpt bounds a step result as shown to the planner and reviewers.
const resultExcerpt = 4000

// Plan asks the model for a plan through structured output. The schema is
// built from the run's scope, so step kinds, tool and skill names are enums
// and tool arguments follow the tools' own schemas.
func (a *Activities) Plan(ctx context.Context, req contract.PlanRequest) (contract.PlanResponse, error) {
	maxSteps := req.MaxSteps
	if maxSteps <= 0 {
		maxSteps = contract.DefaultMaxPlanSteps
	}
	schema, err := a.planSchema(req.Tools, req.Skills, maxSteps, req.Memory, false)
	if err != nil {
		return contract.PlanResponse{}, nonRetryable(longhaul.ErrTypeToolRefused, err)
	}
	// A plan without depends_on is still a plan: its steps run in order.
	accept, err := a.planSchema(req.Tools, req.Skills, maxSteps, req.Memory, true)
	if err != nil {
		return contract.PlanResponse{}, nonRetryable(longhaul.ErrTypeToolRefused, err)
	}
	var sys strings.Builder
	if p := a.agentPrompt(req.Agent, req.Skills); p != "" {
		sys.WriteString(p)
		sys.WriteString("\n\n# Planning\n\n")
	}
	sys.WriteString(a.catalog.Prompt(skills.PromptPlanner))
	sys.WriteString("\n\n" + a.scopeText(req.Tools, req.Skills))
	if req.Memory {
		sys.WriteString("\n" + a.catalog.Prompt(skills.PromptPlannerMemory))
	}
	msgs := []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleSystem, Content: sys.String()}}
	msgs = append(msgs, conversation(req.Messages)...)
	if req.Previous != nil || len(req.Done) > 0 || req.Feedback != "" {
		msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: replanText(req)})
	}
	raw, usage, err := a.structured(ctx, structuredCall{
		model: a.model(req.Model), messages: msgs, name: "plan", schema: schema, accept: accept,
		spend: a.spender(req.Principal, req.Agent),
	})
	if err != nil {
		return contract.PlanResponse{Usage: usage}, err
	}
	var out struct {
		Goal  string `json:"goal"`
		Steps []struct {
			Kind      string          `json:"kind"`
			Target    string          `json:"target"`
			Title     string          `json:"title"`
			Arguments json.RawMessage `json:"arguments"`
			Input     string          `json:"input"`
			Success   string          `json:"success"`
			DependsOn []int           `json:"depends_on"`
		} `json:"steps"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return contract.PlanResponse{Usage: usage}, temporal.NewApplicationError("plan: "+err.Error(), longhaul.ErrTypeModelBadOutput)
	}
	resp := contract.PlanResponse{Goal: strings.TrimSpace(out.Goal), Usage: usage}
	for i, s := range out.Steps {
		step := longhaul.PlanStep{
			Kind: s.Kind, Target: s.Target, Title: strings.TrimSpace(s.Title),
			Input: strings.TrimSpace(s.Input), Success: strings.TrimSpace(s.Success),
		}
		for _, n := range s.DependsOn {
			if n < 1 {
				return contract.PlanResponse{Usage: usage}, temporal.NewApplicationError(fmt.Sprintf("plan: step %d needs step %d; steps are numbered from 1", i+1, n), longhaul.ErrTypeModelBadOutput)
			}
			// The planner's number; the workflow makes it an id.
			step.DependsOn = append(step.DependsOn, strconv.Itoa(n))
		}
		if s.Kind == longhaul.StepTool {
			step.Arguments = dropNulls(s.Arguments)
			step.About = a.toolTarget(s.Target, string(step.Arguments))
		}
		if s.Kind == longhaul.StepCompletion {
			step.Target = ""
		}
		resp.Steps = append(resp.Steps, step)
	}
	return resp, nil
}

// planSchema is the JSON schema of a plan for the given scope: each step is
// one of a tool variant per tool (its target fixed, its arguments the tool's
// own schema made strict), a skill variant and the completion variant.
// Every variant has depends_on: the numbers (1-based, as the steps are
// written) of the steps whose results the step needs; required in what the
// model is asked for (strict structured output wants every field), not in
// the lenient schema answers are checked against.
func (a *Activities) planSchema(toolNames []string, skills []contract.SkillSpec, maxSteps int, mem, lenient bool) (json.RawMessage, error) {
	str := map[string]any{"type": "string"}
	enum := func(v ...string) map[string]any {
		vals := make([]any, len(v))
		for i, s := range v {
			vals[i] = s
		}
		return map[string]any{"type": "string", "enum": vals}
	}
	object := func(props map[string]any) map[string]any {
		req := make([]any, 0, len(props))
		for _, k := range slices.Sorted(maps.Keys(props)) {
			if lenient && k == "depends_on" {
				continue
			}
			req = append(req, k)
		}
		return map[string]any{"type": "object", "properties": props, "required": req, "additionalProperties": false}
	}
	needs := map[string]any{"type": "array", "items": map[string]any{"type": "integer"}}
	var variants []any
	defs, err := a.definitions(toolNames)
	if err != nil {
		return nil, err
	}
	for _, d := range defs {
		var params map[string]any
		if err := json.Unmarshal(d.Parameters, &params); err != nil {
			return nil, fmt.Errorf("tool %q: %w", d.Name, err)
		}
		variants = append(variants, object(map[string]any{
			"kind": enum(longhaul.StepTool), "target": enum(d.Name), "title": str,
			"arguments": strictify(params), "success": str, "depends_on": needs,
		}))
	}
	if len(skills) > 0 {
		ids := make([]string, len(skills))
		for i, s := range skills {
			ids[i] = s.ID
		}
		variants = append(variants, object(map[string]any{
			"kind": enum(longhaul.StepSkill), "target": enum(ids...), "title": str, "input": str, "success": str, "depends_on": needs,
		}))
	}
	if mem {
		variants = append(variants, object(map[string]any{
			"kind": enum(longhaul.StepMemory), "title": str, "input": str, "success": str, "depends_on": needs,
		}))
	}
	variants = append(variants, object(map[string]any{
		"kind": enum(longhaul.StepCompletion), "title": str, "input": str, "success": str, "depends_on": needs,
	}))
	schema := object(map[string]any{
		"goal":  str,
		"steps": map[string]any{"type": "array", "minItems": 1, "maxItems": maxSteps, "items": map[string]any{"anyOf": variants}},
	})
	return json.Marshal(schema)
}

// scopeText describes the tools and skills a plan may use.
func (a *Activities) scopeText(toolNames []string, skills []contract.SkillSpec) string {
	var b strings.Builder
	b.WriteString("Tools:\n")
	defs, _ := a.definitions(toolNames)
	if len(defs) == 0 {
		b.WriteString("- (none)\n")
	}
	for _, d := range defs {
		fmt.Fprintf(&b, "- %s: %s\n", d.Name, oneLine(d.Description))
	}
	b.WriteString("\nSkills:\n")
	if len(skills) == 0 {
		b.WriteString("- (none)\n")
	}
	for _, s := range skills {
		fmt.Fprintf(&b, "- %s: %s (tools: %s)\n", s.ID, oneLine(s.Description), strings.Join(s.Tools, ", "))
	}
	return b.String()
}

// replanText tells the planner what has been done and why the plan changes.
func replanText(req contract.PlanRequest) string {
	var b strings.Builder
	if len(req.Done) > 0 {
		b.WriteString("Steps already carried out (keep their results; do not repeat them unless they failed):\n\n")
		for _, s := range req.Done {
			fmt.Fprintf(&b, "### %s\n%s\n\n", stepLabel(s), excerpt(s.Result, resultExcerpt))
		}
	}
	if req.Previous != nil {
		b.WriteString("The current plan was:\n")
		for i, s := range req.Previous.Steps {
			fmt.Fprintf(&b, "%d. [%s] %s%s\n", i+1, s.Status, stepLabel(s), needsText(req.Previous.Steps, s))
		}
		b.WriteString("\n")
	}
	if req.Feedback != "" {
		b.WriteString("It has to change because: " + req.Feedback + "\n\n")
	}
	b.WriteString("Write the plan for what remains to be done, ending with the completion step.")
	return b.String()
}

// needsText says which of steps s needs, by their numbers in steps:
// " (needs 1, 2)", or "" when it names none.
func needsText(steps []longhaul.PlanStep, s longhaul.PlanStep) string {
	nums := s.NeedsIn(steps)
	if len(nums) == 0 {
		return ""
	}
	return " (needs " + strings.Join(nums, ", ") + ")"
}

// stepLabel names a step in one line: "tool web_fetch: Read the page".
func stepLabel(s longhaul.PlanStep) string {
	label := s.Kind
	if s.Target != "" {
		label += " " + s.Target
	}
	if s.Title != "" {
		label += ": " + s.Title
	}
	if s.Kind == longhaul.StepTool && len(s.Arguments) > 0 {
		label += " " + string(s.Arguments)
	}
	return label
}

// SupervisePlan reviews a plan: deterministic checks first (targets in
// scope, tool arguments valid against the tools' schemas, one completion
// step and it is last, a bound on the steps), then, when asked and the
// checks pass, a model review.
func (a *Activities) SupervisePlan(ctx context.Context, req contract.PlanCheckRequest) (contract.PlanCheck, error) {
	if problems := a.checkPlan(req); len(problems) > 0 {
		return contract.PlanCheck{Problems: problems}, nil
	}
	if !req.ModelReview {
		return contract.PlanCheck{OK: true}, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Goal: %s\n\nPlan:\n", req.Plan.Goal)
	for i, s := range req.Plan.Steps {
		fmt.Fprintf(&b, "%d. [%s] %s%s — success: %s\n", i+1, s.Status, stepLabel(s), needsText(req.Plan.Steps, s), s.Success)
	}
	prompt := a.catalog.Prompt(skills.PromptPlanReview) + "\n\n" + a.scopeText(req.Tools, req.Skills)
	v, usage, err := a.verdict(ctx, a.spender(req.Principal, req.Agent), req.Model, "plan_review", prompt, req.Messages, b.String())
	if err != nil {
		return contract.PlanCheck{Usage: usage}, err
	}
	if v.Decision == longhaul.ReviewOK {
		return contract.PlanCheck{OK: true, Usage: usage}, nil
	}
	return contract.PlanCheck{Problems: []string{v.Reason}, Usage: usage}, nil
}

// checkPlan returns what is wrong with req.Plan, deterministically.
func (a *Activities) checkPlan(req contract.PlanCheckRequest) []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	maxSteps := req.MaxSteps
	if maxSteps <= 0 {
		maxSteps = contract.DefaultMaxPlanSteps
	}
	var pending []longhaul.PlanStep
	for _, s := range req.Plan.Steps {
		if s.Status == "" || s.Status == longhaul.StepPending {
			pending = append(pending, s)
		}
	}
	if len(pending) == 0 {
		add("the plan has no steps to run")
	}
	if len(pending) > maxSteps {
		add("the plan has %d steps to run; at most %d are allowed", len(pending), maxSteps)
	}
	skills := map[string]bool{}
	for _, s := range req.Skills {
		skills[s.ID] = true
	}
	for i, s := range pending {
		n := i + 1
		switch s.Kind {
		case longhaul.StepTool:
			if !slices.Contains(req.Tools, s.Target) || !a.hasTool(s.Target) {
				add("step %d calls tool %q, which is not available here (available: %s)", n, s.Target, strings.Join(req.Tools, ", "))
				continue
			}
			args := s.Arguments
			if len(args) == 0 {
				args = json.RawMessage("{}")
			}
			if err := a.validateArgs(s.Target, args); err != nil {
				add("step %d (%s): %v", n, s.Target, err)
			}
		case longhaul.StepSkill:
			if !skills[s.Target] {
				add("step %d runs skill %q, which is not available here", n, s.Target)
			}
			if strings.TrimSpace(s.Input) == "" {
				add("step %d (skill %s) has no input", n, s.Target)
			}
		case longhaul.StepMemory:
			if !req.Memory {
				add("step %d searches memory, which this agent does not have", n)
			}
			if strings.TrimSpace(s.Input) == "" {
				add("step %d (memory) has no input: say what to look for", n)
			}
		case longhaul.StepCompletion:
			if i != len(pending)-1 {
				add("step %d is a completion step but is not the last step; the completion step must come last, once", n)
			}
		default:
			kinds := "tool, skill or completion"
			if req.Memory {
				kinds = "tool, skill, memory or completion"
			}
			add("step %d has kind %q; use %s", n, s.Kind, kinds)
		}
	}
	if len(pending) > 0 && pending[len(pending)-1].Kind != longhaul.StepCompletion {
		add("the last step must be the completion step that writes the answer")
	}
	return append(problems, checkNeeds(req.Plan.Steps, pending)...)
}

// checkNeeds returns what is wrong with the depends_on of the steps to run:
// a step may need only other steps of the plan (a finished one, or one to
// run), never itself or the completion step, and the steps to run must not
// need each other in a cycle. Steps are named by their numbers among the
// steps to run, as the planner wrote them.
func checkNeeds(all, pending []longhaul.PlanStep) []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	num := map[string]int{} // a step to run's number, by id
	for i, s := range pending {
		num[s.ID] = i + 1
	}
	kept := map[string]bool{}
	for _, s := range all {
		if _, ok := num[s.ID]; !ok {
			kept[s.ID] = true
		}
	}
	name := func(id string) string { return "step " + plannerNumber(pending, id) }
	graph := map[string][]string{}
	for i, s := range pending {
		for _, d := range s.DependsOn {
			switch n, ok := num[d]; {
			case d == s.ID:
				add("step %d needs itself; a step may need only other steps", i+1)
			case kept[d]:
			case !ok:
				add("step %d needs %s, which the plan does not have; name only steps of this plan", i+1, name(d))
			case pending[n-1].Kind == longhaul.StepCompletion:
				add("step %d needs the completion step, which comes last and needs the others", i+1)
			default:
				graph[s.ID] = append(graph[s.ID], d)
			}
		}
	}
	if cycle := findCycle(pending, graph); len(cycle) > 0 {
		names := make([]string, len(cycle))
		for i, id := range cycle {
			names[i] = strconv.Itoa(num[id])
		}
		add("steps %s need each other in a cycle, so none of them could start; a step may need only steps that can finish before it", strings.Join(names, " → "))
	}
	return problems
}

// plannerNumber is the number the planner gave the step with id, counted
// from the first step to run: ids are given in order, so a reference the
// plan does not hold still reads as the planner wrote it. Ids that are not
// numbers are shown as they are.
func plannerNumber(pending []longhaul.PlanStep, id string) string {
	n, err := strconv.Atoi(id)
	if err != nil || len(pending) == 0 {
		return strconv.Quote(id)
	}
	first, err := strconv.Atoi(pending[0].ID)
	if err != nil {
		return strconv.Quote(id)
	}
	return strconv.Itoa(n - first + 1)
}

// findCycle returns a cycle of graph (step id → the ids it needs) as the
// ids along it, the first repeated at the end, or nil when there is none.
// It walks the steps in plan order, so the cycle it reports is stable.
func findCycle(steps []longhaul.PlanStep, graph map[string][]string) []string {
	const (
		unseen = iota
		open
		closed
	)
	state := map[string]int{}
	var path []string
	var walk func(id string) []string
	walk = func(id string) []string {
		state[id] = open
		path = append(path, id)
		for _, d := range graph[id] {
			switch state[d] {
			case open:
				at := slices.Index(path, d)
				return append(slices.Clone(path[at:]), d)
			case unseen:
				if c := walk(d); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		state[id] = closed
		return nil
	}
	for _, s := range steps {
		if state[s.ID] == unseen {
			if c := walk(s.ID); c != nil {
				return c
			}
		}
	}
	return nil
}

// ReviewStep asks the model whether a step's result lets the plan go on
// ({decision: ok|adjust, reason}).
func (a *Activities) ReviewStep(ctx context.Context, req contract.StepReviewRequest) (contract.StepReview, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "Goal: %s\n\nPlan:\n", req.Plan.Goal)
	for i, s := range req.Plan.Steps {
		fmt.Fprintf(&b, "%d. [%s] %s\n", i+1, s.Status, stepLabel(s))
	}
	fmt.Fprintf(&b, "\nStep just carried out: %s\nWhat success looks like: %s\nStatus: %s\nResult:\n%s\n",
		stepLabel(req.Step), req.Step.Success, req.Step.Status, excerpt(req.Step.Result, resultExcerpt))
	v, usage, err := a.verdict(ctx, a.spender(req.Principal, req.Agent), req.Model, "step_review", a.catalog.Prompt(skills.PromptStepReview), req.Messages, b.String())
	if err != nil {
		return contract.StepReview{Usage: usage}, err
	}
	return contract.StepReview{Decision: v.Decision, Reason: v.Reason, Usage: usage}, nil
}

// verdict is a reviewer's structured answer.
type verdict struct {
	Decision string `json:"decision"`
	Reason   string `json:"reason"`
}

var verdictSchema = json.RawMessage(`{"type":"object","properties":{"decision":{"type":"string","enum":["ok","adjust"]},"reason":{"type":"string"}},"required":["decision","reason"],"additionalProperties":false}`)

// verdict asks a reviewer, instructed by prompt, for its verdict on what
// it reviews (the plan, or a step's result), shown after the run's
// conversation.
func (a *Activities) verdict(ctx context.Context, spend spender, model, name, prompt string, conv []longhaul.Message, reviewed string) (verdict, longhaul.Usage, error) {
	msgs := []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleSystem, Content: prompt}}
	msgs = append(msgs, conversation(conv)...)
	msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: reviewed})
	zero := float32(0)
	raw, usage, err := a.structured(ctx, structuredCall{model: a.model(model), messages: msgs, name: name, schema: verdictSchema, temperature: &zero, spend: spend})
	if err != nil {
		return verdict{}, usage, err
	}
	var v verdict
	if err := json.Unmarshal(raw, &v); err != nil {
		return verdict{}, usage, temporal.NewApplicationError(name+": "+err.Error(), longhaul.ErrTypeModelBadOutput)
	}
	v.Reason = strings.TrimSpace(v.Reason)
	return v, usage, nil
}

var dispatchSchema = json.RawMessage(`{"type":"object","properties":{"mode":{"type":"string","enum":["chat","agentic"]},"reason":{"type":"string"}},"required":["mode","reason"],"additionalProperties":false}`)

// Classify is the dispatcher's model call for auto-mode agents: structured
// output {mode, reason} deciding chat or agentic.
func (a *Activities) Classify(ctx context.Context, req contract.ClassifyRequest) (contract.Dispatch, error) {
	msgs := []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleSystem, Content: a.catalog.Prompt(skills.PromptClassify)}}
	msgs = append(msgs, conversation(lastTurns(req.Messages, 6))...)
	zero := float32(0)
	raw, usage, err := a.structured(ctx, structuredCall{model: a.model(req.Model), messages: msgs, name: "dispatch", schema: dispatchSchema, temperature: &zero, spend: a.spender(req.Principal, req.Agent)})
	if err != nil {
		return contract.Dispatch{Usage: usage}, err
	}
	var d contract.Dispatch
	if err := json.Unmarshal(raw, &d); err != nil {
		return contract.Dispatch{Usage: usage}, temporal.NewApplicationError("dispatch: "+err.Error(), longhaul.ErrTypeModelBadOutput)
	}
	d.Usage = usage
	return d, nil
}

// conversation turns the run's messages into the model's, leaving out tool
// traffic and the client's system messages (the reviewers and the planner
// have their own instructions).
func conversation(msgs []longhaul.Message) []openai.ChatCompletionMessage {
	out := make([]openai.ChatCompletionMessage, 0, len(msgs))
	for _, m := range msgs {
		if m.Role != longhaul.RoleUser && m.Role != longhaul.RoleAssistant || len(m.ToolCalls) > 0 || m.Content == "" {
			continue
		}
		out = append(out, openai.ChatCompletionMessage{Role: string(m.Role), Content: m.Content})
	}
	return out
}

// lastTurns keeps the last n messages.
func lastTurns(msgs []longhaul.Message, n int) []longhaul.Message {
	if len(msgs) > n {
		return msgs[len(msgs)-n:]
	}
	return msgs
}

// agentPrompt is the system prompt of the agent, or "", with the prompt
// fragments of the run's skills only (the spec's, which the user's allow:
// rules filtered).
func (a *Activities) agentPrompt(id string, run []contract.SkillSpec) string {
	ag, ok := a.catalog.Agent(id)
	if !ok {
		return ""
	}
	kept := *ag
	kept.Skills = nil
	for _, s := range ag.Skills {
		if slices.ContainsFunc(run, func(r contract.SkillSpec) bool { return r.ID == s }) {
			kept.Skills = append(kept.Skills, s)
		}
	}
	return strings.TrimSpace(a.catalog.SystemPrompt(&kept))
}

func (a *Activities) model(m string) string {
	if m == "" {
		return a.defaultModel
	}
	return m
}

func excerpt(s string, n int) string {
	if cut := textcut.Runes(s, n); cut != s {
		return cut + fmt.Sprintf("\n[… %d more characters]", utf8.RuneCountInString(s)-n)
	}
	return s
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
