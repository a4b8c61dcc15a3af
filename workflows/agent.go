package workflows

import (
	"errors"
	"fmt"
	"strings"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/textcut"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// a references the activities; its methods are never called directly.
var a *activities.Activities

// toolOutputExcerpt bounds the tool output copied into tool_output events.
const toolOutputExcerpt = 2000

// run is the state of one AgentWorkflow execution.
type run struct {
	in    Input
	spec  contract.AgentSpec
	log   *eventLog
	state contract.RunState
	usage longhaul.Usage
	model string
	// stepSeq numbers plan steps across revisions.
	stepSeq int
	// toolSeq numbers the run's tool calls, across continue-as-new: the
	// last number given.
	toolSeq int64
	// input is a person's answer while the run waits for one, and
	// inputUpdate the id of the update that delivered it.
	input       *contract.InputRequest
	inputUpdate string
	// grant is what approving the call that waits for approval grants.
	grant *contract.ApprovalGrant
	// inputFrom is the answer's origin when a person gave it to an
	// ancestor run (see askwait.go); waits are the approval waits of the
	// run's children, at any depth, that it shows.
	inputFrom *contract.WaitInput
	waits     []contract.ChildWait
	// noContinue is set once archiving the log failed: the run then stays
	// in this execution.
	noContinue bool
	// partial is the text the answer's model call had when the run's
	// cancellation stopped it, so a cancelled run keeps what it had streamed.
	partial string
	// answered is what the run's own tool loop added to the conversation,
	// unbounded: what the conversation store records of a chat turn.
	answered []longhaul.Message
	// recorded is how many of the turn's messages earlier executions stored.
	recorded int
	// stores are the vector stores the run searches: the agent's and the
	// request's (see activities.RunVectorStores).
	stores []string
	// summary stands for the start of the run's own conversation once it
	// no longer fit the model's window: the one an earlier turn of the
	// chat kept (restoreConversation), then the run's own (Compact). The
	// turn records it for the chat's next request.
	summary *longhaul.Summary
	// steers are the user messages the run took (UpdateSteer) for its
	// next model call; steerable says whether it takes one now, and final
	// is what the run added to its conversation once it ended (see
	// multitask.go).
	steers    []string
	steerable bool
	final     []longhaul.Message
	// pinned is a pinned replay's use of its recorded tool calls.
	pinned *PinnedState
}

// AgentWorkflow runs one request to an agent: the chat tool loop, with every
// model and tool call an activity, keeping the run's durable events in a log
// that QueryEvents serves (the text of a running model call streams to the
// API over NATS, outside history).
func AgentWorkflow(ctx workflow.Context, in Input) (contract.AgentResult, error) {
	r := &run{
		in:    in,
		log:   newEventLog(),
		state: contract.RunState{Agent: in.Agent, User: in.User.Key(), Status: contract.StatusRunning},
	}
	if in.Resume != nil {
		r.restore(in.Resume)
	}
	if err := r.register(ctx); err != nil {
		return contract.AgentResult{}, err
	}
	res, err := r.execute(ctx)
	if workflow.IsContinueAsNewError(err) {
		return contract.AgentResult{}, err
	}
	r.keepEnded(ctx, res, err)
	if err == nil && r.keepsConversation(ctx) {
		// Before done: the chat's next request may come as soon as it.
		msgs := r.answered
		if msgs == nil {
			msgs = res.Messages
		}
		r.recordTurn(ctx, msgs, contract.StatusCompleted, true)
	}
	// A pinned replay saves no memories: it has no side effects.
	if err == nil && r.in.Pinned == nil && !r.forgets(ctx) {
		r.remember(ctx, res.Content)
	}
	now := workflow.Now(ctx)
	if r.usage.TotalTokens > 0 {
		var data any = r.usage
		if r.spec.Models != (contract.RoleModels{}) {
			// Per model, beside the OpenAI fields, when the agent gives
			// its roles models of their own.
			data = longhaul.UsageData{Usage: r.usage, Models: contract.ModelUsage(r.state.Calls)}
		}
		r.log.emit(now, longhaul.EventUsage, data)
	}
	status := contract.StatusCompleted
	if err != nil {
		status = contract.StatusFailed
		if temporal.IsCanceledError(err) {
			status = contract.StatusCancelled
			if res.Content == "" {
				// What the answer had streamed when the cancellation came.
				res.Content = r.partial
			}
		}
		r.state.Error = errorMessage(err)
		r.log.emit(now, longhaul.EventError, longhaul.ErrorData{Message: r.state.Error, Code: errorCode(err)})
	}
	r.state.Status = status
	r.state.Result = res.Content
	// Through Temporal's handler, which records nothing while replaying.
	workflow.GetMetricsHandler(ctx).WithTags(map[string]string{"agent": r.in.Agent, "outcome": status}).Counter(MetricRuns).Inc(1)
	r.log.emit(now, longhaul.EventDone, longhaul.DoneData{Status: status, FinishReason: res.FinishReason, Cut: res.Cut})
	// Cancellation must not stop the last bookkeeping.
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	_ = workflow.UpsertTypedSearchAttributes(dctx, contract.SearchAttrStatus.ValueSet(status))
	r.notify(dctx, webhookEnd(status), contract.WebhookEventData{Status: status, Error: textcut.Runes(r.state.Error, webhookErrorChars)})
	r.forget(dctx)
	res.LastOffset = r.log.last
	res.Usage = r.usage
	if r.in.Pinned != nil {
		res.Replay = r.replayData()
	}
	return res, err
}

func (r *run) register(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, contract.QueryEvents, func(req contract.EventsRequest) (contract.EventsPage, error) {
		return r.log.page(req), nil
	}); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, contract.QueryState, func() (contract.RunState, error) {
		s := r.state
		s.Usage = r.usage
		return s, nil
	}); err != nil {
		return err
	}
	if err := r.registerFork(ctx); err != nil {
		return err
	}
	if err := r.registerInput(ctx); err != nil {
		return err
	}
	if err := r.registerMultitask(ctx); err != nil {
		return err
	}
	r.registerChildWaits(ctx)
	attrs := []temporal.SearchAttributeUpdate{
		contract.SearchAttrAgent.ValueSet(r.in.Agent),
		contract.SearchAttrUser.ValueSet(r.in.User.Key()),
		contract.SearchAttrStatus.ValueSet(contract.StatusRunning),
	}
	if r.in.ChatID != "" {
		attrs = append(attrs, contract.SearchAttrChat.ValueSet(r.in.ChatID))
	}
	return workflow.UpsertTypedSearchAttributes(ctx, attrs...)
}

func (r *run) execute(ctx workflow.Context) (contract.AgentResult, error) {
	if r.in.Resume == nil && len(r.in.Messages) == 0 {
		return contract.AgentResult{}, temporal.NewNonRetryableApplicationError("no messages", longhaul.ErrTypeBadInput, nil)
	}
	if err := r.admitFire(ctx); err != nil {
		return contract.AgentResult{}, err
	}
	if err := workflow.ExecuteLocalActivity(resolveOptions(ctx), a.ResolveAgent, r.in.Agent, r.in.User).Get(ctx, &r.spec); err != nil {
		return contract.AgentResult{}, err
	}
	if f := r.in.Fork; f != nil && f.Model != "" {
		r.spec = forkModel(r.spec, f.Model)
	}
	if p := r.in.Pinned; p != nil {
		r.spec = pinnedModels(r.spec, p)
	}
	// document_search is offered only to a run with vector stores to
	// search. (A run recorded before it existed has none and its agent
	// no such tool: nothing changes for it.)
	r.stores = activities.RunVectorStores(r.spec.VectorStores, r.in.VectorStores)
	if len(r.stores) == 0 {
		r.spec = activities.WithoutDocuments(r.spec)
	}
	if r.in.Depth >= contract.MaxAskDepth {
		r.spec = withoutAsks(r.spec)
	}
	if cp := r.in.Resume; cp != nil {
		return r.resume(ctx, cp)
	}
	if f := r.in.Fork; f != nil {
		return r.fork(ctx, f)
	}
	r.model = r.spec.Model
	if err := r.follow(ctx); err != nil {
		return contract.AgentResult{}, err
	}
	if err := r.restoreConversation(ctx); err != nil {
		return contract.AgentResult{}, err
	}
	return r.dispatch(ctx)
}

// background answers a client's housekeeping request (a title, tags,
// follow-up questions) with one model call: no agent prompt, no tools.
func (r *run) background(ctx workflow.Context) (contract.AgentResult, error) {
	r.state.Turns = 1
	resp, err := r.callModel(ctx, contract.ModelRequest{
		Call:     "task",
		Agent:    r.spec.ID,
		Model:    r.model,
		Messages: r.in.Messages,
		Options:  r.in.Options,
		NoPrompt: true,
		Publish:  !r.in.Quiet,
	}, "task", true)
	if err != nil {
		return contract.AgentResult{Model: r.model}, err
	}
	msg := resp.Message
	msg.ToolCalls = nil
	return contract.AgentResult{Content: msg.Content, FinishReason: "stop", Messages: []longhaul.Message{msg}, Model: resp.Model}, nil
}

// chat runs the agent's own tool loop on the conversation.
func (r *run) chat(ctx workflow.Context) (contract.AgentResult, error) {
	l := LoopState{
		Summary:     r.summary,
		Messages:    r.in.Messages,
		Scope:       r.spec.Tools,
		ClientTools: len(r.in.ClientTools) > 0,
		MaxTurns:    r.spec.MaxTurns,
		Publish:     !r.in.Quiet,
	}
	if t := r.in.Translation; t != nil {
		// The loop works on the translated request and answers in the
		// user's language.
		l.Instructions = answerInLanguage(t)
		l.Label = "answer in " + t.Language
	}
	return r.toolLoop(ctx, l)
}

// toolLoop calls the model; runs the tool calls it asks for (in parallel)
// and gives it their results; repeats until it answers or the turns are used
// up, then has it answer with what it has.
func (r *run) toolLoop(ctx workflow.Context, l LoopState) (contract.AgentResult, error) {
	// conv is the conversation after ref, its stored start (the whole of it
	// while ref is empty).
	conv := append([]longhaul.Message(nil), l.Messages...)
	ref := l.ConvRef
	// summary stands for conv's start once it no longer fits the window.
	summary := l.Summary
	var added []longhaul.Message
	// A plan step's loop answers the plan, not the client.
	opts := r.callOptions(l.StepID == "")
	first := max(l.Turn, 1)
	publish := l.Publish && publishes(opts)
	// Once the loop ended, a new message would wait for a call that never
	// comes: the run refuses it.
	defer r.setSteerable(l, true)
	for turn := first; ; turn++ {
		conv, added = r.takeSteers(ctx, l, conv, added)
		if turn > 1 {
			// A tool_choice that forces a call binds the request's first
			// model call; the loop could not end otherwise.
			opts.ToolChoice = relaxChoice(opts.ToolChoice)
		}
		// Only a run's own loop continues as new; a plan step's loop is
		// one step, and the plan continues between steps.
		if turn > first && l.StepID == "" && r.shouldContinue(ctx) {
			if err := r.continueLoop(ctx, loopAt(l, turn, ref, conv, summary), added); err != nil {
				return contract.AgentResult{Messages: added, Model: r.model}, err
			}
		}
		last := turn > l.MaxTurns
		r.setSteerable(l, last)
		req := r.modelRequest(l, turn, last, opts, publish, ref, conv)
		req.Summary = summary
		if l.StepID == "" {
			r.state.Turns++
		}
		resp, err := r.callFitted(ctx, &req, l.Label, l.StepID == "")
		summary = req.Summary
		if l.StepID == "" {
			r.summary = summary
		}
		if err != nil {
			return contract.AgentResult{Messages: added, Model: r.model}, err
		}
		msg := resp.Message
		if last {
			// No tools were offered; a model that asks anyway gets none.
			msg.ToolCalls = nil
		}
		added = append(added, msg)
		if resp.ConvRef != "" {
			ref, conv = resp.ConvRef, nil
		} else {
			conv = append(conv, msg)
		}
		if len(msg.ToolCalls) == 0 {
			if r.steerPending(l, last) {
				continue
			}
			reason := "stop"
			if last || resp.FinishReason == "length" {
				reason = "length"
			}
			r.loopAnswered(l, added)
			return contract.AgentResult{Content: msg.Content, Reasoning: resp.Reasoning, FinishReason: reason, Cut: longhaul.CutOf(resp.FinishReason, msg.Content, resp.Reasoning), Messages: boundResult(added), Model: resp.Model}, nil
		}
		results, pending, err := r.runToolCalls(ctx, l, req.Call, msg.ToolCalls, resp.Targets)
		if err != nil {
			return contract.AgentResult{Messages: added, Model: r.model}, err
		}
		added = append(added, results...)
		if len(pending) > 0 {
			// The client never came back: the run ends where OpenAI's
			// response would, with the calls for the client to run.
			r.loopAnswered(l, added)
			return contract.AgentResult{Content: msg.Content, FinishReason: "tool_calls", ToolCalls: pending, Messages: boundResult(added), Model: resp.Model}, nil
		}
		conv = append(conv, results...)
	}
}

// continueLoop continues the run's own loop as new at next, the loop's
// state. The next execution starts without what this one added: a chat turn
// stores it first. It returns nil when the run stays in this execution
// (the event log could not be archived), else the error that ends it.
func (r *run) continueLoop(ctx workflow.Context, next *LoopState, added []longhaul.Message) error {
	stored := len(added) > 0 && r.keepsConversation(ctx)
	if stored {
		r.recordTurn(ctx, added, contract.StatusRunning, false)
		r.recorded += len(added)
	}
	if err := r.continueAsNew(ctx, next); err != nil {
		return err
	}
	if stored {
		// The run stays in this execution and records them again
		// at its end, under the same numbers.
		r.recorded -= len(added)
	}
	return nil
}

// modelRequest is the model call of the loop l's turn: the last one (past
// max turns) offers no tools and asks for an answer with what it has.
func (r *run) modelRequest(l LoopState, turn int, last bool, opts longhaul.ModelOptions, publish bool, ref string, conv []longhaul.Message) contract.ModelRequest {
	model := l.Model
	if model == "" {
		// The endpoint's answer names the model it used; keep using it.
		model = r.model
	}
	req := contract.ModelRequest{
		Call:         fmt.Sprintf("%sturn-%d", l.Call, turn),
		Agent:        r.spec.ID,
		Model:        model,
		Messages:     conv,
		Options:      opts,
		Publish:      publish,
		Skill:        l.Skill,
		Instructions: l.Instructions,
		ConvRef:      ref,
		// Past convInline, the conversation goes to the store and the
		// next call sends only what follows it.
		Store:    ref != "" || textSize(conv) > convInline,
		NextCall: r.toolSeq + 1,
	}
	if last {
		req.Final = true
	} else {
		req.Tools = l.Scope
		if l.ClientTools {
			req.ClientTools = r.in.ClientTools
		}
	}
	return req
}

// loopAnswered keeps what the run's own loop added as the run's answer; a
// plan step's loop answers the plan.
func (r *run) loopAnswered(l LoopState, added []longhaul.Message) {
	if l.StepID == "" {
		r.answered = added
	}
}

// runToolCalls runs the tool calls the model asked for in the loop l's
// model call named call: the worker's in parallel, the client's through
// the client. It returns their results in call order or, when the client
// never came back, the worker's results and the client's calls, pending.
func (r *run) runToolCalls(ctx workflow.Context, l LoopState, call string, calls []longhaul.ToolCall, targets map[string]string) (results []longhaul.Message, pending []longhaul.ToolCall, err error) {
	if l.Skill != "" && l.StepID != "" {
		names := make([]string, len(calls))
		for i, c := range calls {
			names[i] = strings.TrimSpace(c.Name + " " + targets[c.ID])
		}
		r.log.emit(workflow.Now(ctx), longhaul.EventSkillActivity, longhaul.SkillActivityData{
			Skill: l.Skill, StepID: l.StepID, Message: "calling " + strings.Join(names, ", "),
		})
	}
	server, client := r.splitCalls(calls, l.ClientTools)
	results, _ = r.callTools(ctx, server, targets, l.Skill, l.Label)
	if len(client) == 0 {
		return results, nil, nil
	}
	answers, answered, err := r.awaitClient(ctx, call, client)
	if err != nil {
		return nil, nil, err
	}
	if !answered {
		return results, client, nil
	}
	return inCallOrder(calls, append(results, answers...)), nil, nil
}

// callOneModel runs one ChatCompletion activity, with attempts attempts,
// under summary in the Temporal UI. When the call's text is part of the
// run's answer, it reconciles the streamed text with the answer the call
// returns; a plan step's own loop is not the answer (its result goes to
// step_result), so its text stays out of the log's content.
func (r *run) callOneModel(ctx workflow.Context, req contract.ModelRequest, summary string, answer bool, attempts int32) (contract.ModelResponse, error) {
	actx := r.modelCallOptions(ctx, strings.TrimSpace(summary), attempts, true)
	req.After = r.log.last
	req.Principal = r.principal()
	req.Progress = r.progress("thinking (" + strings.ReplaceAll(req.Call, "-", " ") + ")")
	req.Documents = len(r.stores) > 0
	var resp contract.ModelResponse
	if err := r.awaitModel(ctx, workflow.ExecuteActivity(actx, a.ChatCompletion, req), &resp); err != nil {
		if answer && (resp.Message.Content != "" || resp.Reasoning != "") {
			r.partial = resp.Message.Content
			r.log.emit(workflow.Now(ctx), longhaul.EventContent, longhaul.ContentData{
				Text: r.partial, Reasoning: resp.Reasoning, Call: req.Call, Attempt: resp.Attempt, Cancelled: true,
			})
		}
		return contract.ModelResponse{}, err
	}
	r.addUsage(req.Call, req.Model, resp.Usage)
	if answer && (resp.Message.Content != "" || resp.Reasoning != "") {
		r.log.emit(workflow.Now(ctx), longhaul.EventContent, longhaul.ContentData{
			Text: resp.Message.Content, Reasoning: resp.Reasoning, Call: req.Call, Attempt: resp.Attempt,
		})
	}
	return resp, nil
}

// versionPartialOnCancel marks runs whose cancellation waits for the
// running model call to stop and keeps the text it had; runs started before
// it stopped waiting at once.
const versionPartialOnCancel = "partial-on-cancel"

// awaitModel waits for a model call. When the run is cancelled meanwhile,
// it waits for the call to stop as well (its activity options wait for the
// cancellation) and puts the text the call had into resp.
func (r *run) awaitModel(ctx workflow.Context, f workflow.Future, resp *contract.ModelResponse) error {
	cancelled := false
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(f, func(workflow.Future) {})
	sel.AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) { cancelled = true })
	sel.Select(ctx)
	if cancelled && !f.IsReady() {
		dctx, _ := workflow.NewDisconnectedContext(ctx)
		if workflow.GetVersion(dctx, versionPartialOnCancel, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
			return temporal.NewCanceledError()
		}
	}
	err := f.Get(ctx, resp)
	var cancelledErr *temporal.CanceledError
	if errors.As(err, &cancelledErr) && cancelledErr.HasDetails() {
		_ = cancelledErr.Details(resp)
	}
	return err
}

// toolOutcome is how a tool call ended: failed or not, and the reference of
// its whole output in the store when the model read an excerpt.
type toolOutcome struct {
	failed bool
	ref    string
}

// callTools runs the calls in parallel and returns one tool message per call,
// in the order of the calls, and which calls failed. A failed call becomes an
// error message the model can read and react to. skill names the skill
// whose loop makes the calls, empty for the agent's own: the activity reads
// from the catalog what they may use.
func (r *run) callTools(ctx workflow.Context, calls []longhaul.ToolCall, targets map[string]string, skill string, label string) ([]longhaul.Message, []toolOutcome) {
	futures := make([]workflow.Future, len(calls))
	pinned := make([]*contract.PinnedCall, len(calls))
	refused := make([]string, len(calls))
	reqs := make([]contract.ToolRequest, len(calls))
	summaries := make([]string, len(calls))
	who := r.in.User
	var n asking
	for i, c := range calls {
		target := targets[c.ID]
		r.toolSeq++
		req := contract.ToolRequest{Call: c, Agent: r.spec.ID, Skill: skill, Seq: r.toolSeq, User: r.in.User.Key(), Chat: r.in.ChatID, Principal: &who, VectorStores: r.stores}
		// A pinned replay runs nothing, so it needs nobody's approval.
		if r.in.Pinned == nil && r.needsApproval(c.Name) {
			ok, msg, err := r.approve(ctx, c, req.Seq, target)
			if err != nil {
				msg = "error: " + errorMessage(err)
			}
			if !ok {
				refused[i] = msg
				continue
			}
			req.Approval = r.inputUpdate
			if f := r.inputFrom; f != nil {
				req.ApprovalWorkflow, req.ApprovalRunID = f.Workflow, f.RunID
			}
		}
		ask, asks := r.askOf(ctx, c.Name, skill)
		r.toolStart(ctx, c, target, req.Seq, asks)
		if r.in.Pinned != nil {
			p := r.pinnedResult(ctx, c)
			pinned[i] = &p
			continue
		}
		req.After = r.log.last
		if asks {
			futures[i] = r.ask(ctx, ask, c, req.Seq, req.After, &n)
			continue
		}
		req.Progress = r.progress(strings.TrimSpace(label + " calling " + c.Name + " " + target))
		summary := strings.TrimSpace(label + " tool " + c.Name + " " + target)
		reqs[i], summaries[i] = req, summary
		futures[i] = workflow.ExecuteActivity(toolOptions(ctx, summary), a.CallTool, req)
	}
	out := make([]longhaul.Message, len(calls))
	outcomes := make([]toolOutcome, len(calls))
	for i, c := range calls {
		if futures[i] == nil && pinned[i] == nil {
			// Not approved: the call never ran.
			out[i] = longhaul.Message{Role: longhaul.RoleTool, ToolCallID: c.ID, Name: c.Name, Content: refused[i]}
			outcomes[i] = toolOutcome{failed: true}
			continue
		}
		res, content, failed := toolResult(ctx, futures[i], pinned[i])
		if !failed && r.waitsForConnect(ctx, res) {
			// The user's account is not connected: wait for them to
			// connect it, then call again; else the model reads the link.
			if ok, err := r.awaitConnect(ctx, c, *res.Connect); err == nil && ok {
				res, content, failed = toolResult(ctx, workflow.ExecuteActivity(toolOptions(ctx, summaries[i]), a.CallTool, reqs[i]), nil)
			}
		}
		excerpt := content
		// document_search's output stays whole (bounded by the tool,
		// internal/docsearch's DefaultMaxChars, and by what the model
		// reads): the Responses API renders a file_search_call's results
		// from this event (internal/wire/responses_events.go toolOutput), and an
		// excerpt of its JSON has none.
		if r := []rune(excerpt); len(r) > toolOutputExcerpt && c.Name != longhaul.DocumentSearchTool {
			excerpt = string(r[:toolOutputExcerpt])
		}
		r.log.emit(workflow.Now(ctx), longhaul.EventToolOutput, longhaul.ToolOutputData{
			ToolCallID: c.ID, Name: c.Name, Output: excerpt, Error: failed,
			Truncated: res.Truncated || len(excerpt) < len(content), Ref: res.Ref,
		})
		out[i] = longhaul.Message{Role: longhaul.RoleTool, ToolCallID: c.ID, Name: c.Name, Content: content, Ref: res.Ref}
		outcomes[i] = toolOutcome{failed: failed, ref: res.Ref}
	}
	return out, outcomes
}

// principal is the run's user, as a request to an activity carries it:
// what allow: rules judge and budgets count against.
func (r *run) principal() *longhaul.User {
	who := r.in.User
	return &who
}
