package activities

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/modelcheck"
	"github.com/longhaul-dev/longhaul/internal/natsbus"
	"github.com/longhaul-dev/longhaul/internal/toolargs"
	"github.com/longhaul-dev/longhaul/internal/window"
	"github.com/longhaul-dev/longhaul/skills"
	"github.com/sashabaranov/go-openai"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
)

// nameCalls gives every call an id no other call of the conversation has:
// a model may send none, or the same ones each turn ("call_0"), and a tool
// result answers its call by id. Such a call is named after its sequence
// number, "call_lh<n>", which continue-as-new never resets.
func nameCalls(calls []longhaul.ToolCall, conv []longhaul.Message, next int64) {
	taken := map[string]bool{}
	for _, m := range conv {
		for _, c := range m.ToolCalls {
			taken[c.ID] = true
		}
		if m.ToolCallID != "" {
			taken[m.ToolCallID] = true
		}
	}
	for i := range calls {
		c := &calls[i]
		if c.ID == "" || taken[c.ID] {
			c.ID = "call_lh" + strconv.FormatInt(next+int64(i), 10)
			for taken[c.ID] {
				c.ID += "_"
			}
		}
		taken[c.ID] = true
	}
}

// ChatCompletion calls the model with streaming on, publishes its text as
// ephemeral deltas while it arrives (an attempt's deltas name the attempt,
// so a retry's text replaces a failed attempt's), heartbeats, and returns
// the assembled message. Cancelled while it streams, it returns the text it
// had as the cancellation's details.
func (a *Activities) ChatCompletion(ctx context.Context, req contract.ModelRequest) (resp contract.ModelResponse, err error) {
	info := activity.GetInfo(ctx)
	a.progress(req.Progress)
	model := req.Model
	if model == "" {
		model = a.defaultModel
	}
	ctx, end := modelSpan(ctx, "chat", a.canonical(model))
	defer func() { end(resp.Model, resp.Usage, err) }()
	ep, err := a.resolveCall(model, req.Fallback)
	if err != nil {
		return contract.ModelResponse{}, err
	}
	// A fallback model's attempts number on from the models' before it.
	attempt := req.AttemptBase + int(info.Attempt)
	if req.ConvRef != "" {
		base, err := a.loadConversation(ctx, req.ConvRef)
		if err != nil {
			return contract.ModelResponse{}, err
		}
		req.Messages = append(base, req.Messages...)
	}
	oreq, shape, refs, err := a.chatRequest(ctx, ep, req)
	if err != nil {
		return contract.ModelResponse{}, err
	}
	a.enforceParams(ctx, ep, &oreq, req.Options)
	fit, compact, err := a.fitCall(ctx, ep, req, &oreq, shape, refs)
	if err != nil || compact > 0 {
		return contract.ModelResponse{Compact: compact, Context: fit, Attempt: attempt}, err
	}
	settle, err := a.spender(req.Principal, req.Agent).call(ctx, a.ref(ep, ""), "", oreq)
	if err != nil {
		return contract.ModelResponse{}, err
	}

	bus := a.Bus
	if !req.Publish {
		bus = nil // the text is kept, not published
	}
	out := bus.OpenCall(info.WorkflowExecution.ID, req.Call, attempt, req.After)
	defer out.Close()
	// Every attempt is charged, a cancelled or failed one too (charged).
	defer func() { settle(streamCharge(oreq, resp, err, out.Text())) }()
	// The call stops when Temporal cancels it (the answer to a heartbeat) or,
	// sooner, when an API says over NATS that its run (stepRun) was cancelled.
	sctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	defer a.Bus.OnCancel(stepRun(info), func() { stop(errRunCancelled) })()
	stopBeat := a.heartbeat(ctx)
	resp, err = a.stream(sctx, ep, oreq, out)
	if err == nil && len(resp.Message.ToolCalls) == 0 {
		resp, err = a.checkFormat(sctx, ep, oreq, req.Options.ResponseFormat, resp)
	}
	stopBeat()
	a.noteHealth(sctx, ep, err)
	if err != nil {
		if ctx.Err() != nil || context.Cause(sctx) == errRunCancelled {
			partial := contract.ModelResponse{Model: model, Attempt: attempt}
			partial.Message = longhaul.Message{Role: longhaul.RoleAssistant, Content: out.Text(), Reasoning: out.Reasoning()}
			partial.Reasoning = out.Reasoning()
			cancelled := temporal.NewCanceledError(partial)
			if ctx.Err() != nil {
				return contract.ModelResponse{}, cancelled
			}
			// Temporal has not told the call yet: the SDK reports a
			// cancellation it did not deliver as a (retryable) failure,
			// and a retry would start the call again before the run's
			// cancellation reaches it. Final, with the cancellation as
			// its cause, which the run, having asked for it first,
			// takes as the call's.
			return contract.ModelResponse{}, temporal.NewNonRetryableApplicationError(errRunCancelled.Error(), longhaul.ErrTypeRunCancelled, cancelled)
		}
		return contract.ModelResponse{}, err
	}
	resp.Attempt = attempt
	resp.Context = fit
	resp.Message.ToolCalls = oneCallARound(req.Options, resp.Message.ToolCalls)
	return a.finishResponse(ctx, ep, req, resp)
}

// errRunCancelled is the cause of a model call's stop when the run's
// cancellation came over NATS.
var errRunCancelled = errors.New("the run was cancelled")

// fitCall makes oreq fit its model's window (fit.go). It returns the
// context event's data when the request was shortened (nil when it was
// sent as built), or the conversation index up to which the workflow
// must compact first.
func (a *Activities) fitCall(ctx context.Context, ep endpoint, req contract.ModelRequest, oreq *openai.ChatCompletionRequest, shape chatShape, refs []string) (*longhaul.ContextData, int, error) {
	f, err := a.newFitting(ctx, ep, req.Window, req.Options)
	if err != nil {
		return nil, 0, err
	}
	// With truncation disabled, the client's own input is sent whole or
	// refused; what the run's tool loop adds to it later is fitted as
	// always.
	if req.Options.Truncation == longhaul.TruncationDisabled && shape.cur == max(shape.user, 0) {
		if est := window.Request(*oreq); est > f.budget() {
			observeWindow(ctx, f.report(est), 0, errors.New("over"))
			return nil, 0, f.tooLong("the input (truncation is disabled)", est)
		}
	}
	data, compact, err := fitChat(oreq, shape, refs, f)
	data.Call = req.Call
	if req.Summary != nil {
		data.Summarized = req.Summary.Covers
	}
	observeWindow(ctx, data, compact, err)
	if err != nil {
		return nil, 0, err
	}
	if compact > 0 && (req.NoPrompt || req.Summary != nil && compact <= req.Summary.Covers) {
		// Nothing older is left to compact: what remains is the summary.
		return nil, 0, f.tooLong("the summary of the earlier conversation and the current round", data.Used)
	}
	if !data.Changed() && compact == 0 {
		return nil, 0, nil
	}
	return &data, compact, nil
}

// chatRequest is the streamed Chat Completions request of req, sent to ep:
// the prompt and the conversation, the request's options, and the tools
// offered.
func (a *Activities) chatRequest(ctx context.Context, ep endpoint, req contract.ModelRequest) (openai.ChatCompletionRequest, chatShape, []string, error) {
	msgs, shape, refs, err := a.buildMessages(ctx, req)
	if err != nil {
		return openai.ChatCompletionRequest{}, shape, nil, err
	}
	oreq := openai.ChatCompletionRequest{
		Model:               ep.model,
		Messages:            msgs,
		Stream:              true,
		StreamOptions:       &openai.StreamOptions{IncludeUsage: true},
		MaxTokens:           req.Options.MaxTokens,
		MaxCompletionTokens: req.Options.MaxCompletionTokens,
		Stop:                req.Options.Stop,
		Seed:                req.Options.Seed,
		LogProbs:            req.Options.Logprobs,
		TopLogProbs:         req.Options.TopLogprobs,
		ReasoningEffort:     req.Options.ReasoningEffort,
		ResponseFormat:      responseFormat(req.Options.ResponseFormat),
	}
	oreq.Temperature = sampling(req.Options.Temperature)
	oreq.TopP = sampling(req.Options.TopP)
	if oreq.Tools, err = a.offeredTools(req); err != nil {
		return openai.ChatCompletionRequest{}, shape, nil, err
	}
	if len(oreq.Tools) > 0 {
		if len(req.Options.ToolChoice) > 0 {
			oreq.ToolChoice = req.Options.ToolChoice
		}
		if p := req.Options.ParallelToolCalls; p != nil {
			oreq.ParallelToolCalls = *p
		}
	}
	return oreq, shape, refs, nil
}

// finishResponse completes the model's answer to req: the model as a
// reference, the tool calls named and their targets, and, when req asks
// for it, the conversation with the answer stored.
func (a *Activities) finishResponse(ctx context.Context, ep endpoint, req contract.ModelRequest, resp contract.ModelResponse) (contract.ModelResponse, error) {
	run := activity.GetInfo(ctx).WorkflowExecution.ID
	// The model the endpoint says it used, as a reference to the same
	// endpoint ("remote:gpt-4o"), so that a run that goes on with it stays
	// there.
	a.thinkers.note(a.ref(ep, ""), resp)
	resp.Model = a.ref(ep, resp.Model)
	nameCalls(resp.Message.ToolCalls, req.Messages, req.NextCall)
	nameClientCalls(resp.Message.ToolCalls, req.ClientTools, run, req.NextCall)
	for _, tc := range resp.Message.ToolCalls {
		if t := a.toolTarget(tc.Name, tc.Arguments); t != "" {
			if resp.Targets == nil {
				resp.Targets = map[string]string{}
			}
			resp.Targets[tc.ID] = t
		}
	}
	if req.Store && a.Blobs != nil {
		ref, err := a.storeConversation(ctx, run, append(req.Messages, resp.Message))
		if err != nil {
			return contract.ModelResponse{}, err
		}
		resp.ConvRef = ref
	}
	return resp, nil
}

// sampling turns an optional sampling value into go-openai's field, whose
// zero means "unset" and is left out of the request: an explicit 0 is sent
// as the smallest positive float, which every endpoint treats as 0.
func sampling(v *float32) float32 {
	switch {
	case v == nil:
		return 0
	case *v == 0:
		return math.SmallestNonzeroFloat32
	}
	return *v
}

// buildMessages is req's conversation as the model reads it: the system
// prompt (with the summary of the earlier conversation, when req has one),
// the messages the summary does not stand for, and the max-turns prompt of
// a final call. It also says which conversation message each is, and their
// tool results' stored references (see fit.go).
func (a *Activities) buildMessages(ctx context.Context, req contract.ModelRequest) ([]openai.ChatCompletionMessage, chatShape, []string, error) {
	out := make([]openai.ChatCompletionMessage, 0, len(req.Messages)+1)
	var shape chatShape
	var refs []string
	shape.cur, shape.user = currentRound(req.Messages)
	add := func(m openai.ChatCompletionMessage, src int, ref string) {
		out = append(out, m)
		shape.src = append(shape.src, src)
		refs = append(refs, ref)
	}
	covers := 0
	if s := req.Summary; s != nil && !req.NoPrompt {
		covers = min(s.Covers, len(req.Messages))
	}
	if !req.NoPrompt {
		if sys := a.systemPrompt(req, covers); sys != "" {
			add(openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: sys}, -1, "")
		}
		for _, f := range req.Findings {
			add(openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: f}, srcFinding, "")
		}
	}
	for i, m := range req.Messages {
		if i < covers && i != shape.user {
			continue
		}
		om := openai.ChatCompletionMessage{
			Role:       string(m.Role),
			Content:    m.Content,
			Name:       m.Name,
			ToolCallID: m.ToolCallID,
		}
		if len(m.Parts) > 0 {
			parts, err := a.messageParts(ctx, m.Parts)
			if err != nil {
				return nil, shape, nil, err
			}
			om.Content, om.MultiContent = "", parts
		}
		if m.Role == longhaul.RoleAssistant && i > shape.user {
			// The thinking behind a call of the current round's tool loop
			// goes back with it, as reasoning (reasoningField): a
			// thinking model goes on from its own thought. Ollama hands
			// it to the model's template as the message's .Thinking
			// (template/template.go:505); gpt-oss's template is the
			// model's own, from the registry, not Ollama's source (ollama
			// v0.32.15 server/routes.go:77-86 shouldUseHarmony only
			// checks it has harmony's tags), and the harmony format it
			// renders keeps a tool-calling turn's analysis. Earlier
			// turns' thinking is not sent.
			om.ReasoningContent = m.Reasoning
		}
		for _, tc := range m.ToolCalls {
			// Arguments that are not one JSON object go out repaired or
			// empty, never as sent (internal/toolargs): the call's result
			// says what the model sent.
			om.ToolCalls = append(om.ToolCalls, openai.ToolCall{
				ID: tc.ID, Type: openai.ToolTypeFunction,
				Function: openai.FunctionCall{Name: tc.Name, Arguments: toolargs.Wire(tc.Arguments)},
			})
		}
		add(om, i, m.Ref)
	}
	if req.Final {
		add(openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: a.catalog.Prompt(skills.PromptMaxTurns)}, -1, "")
	}
	return out, shape, refs, nil
}

// systemPrompt is the system message of req: the agent's prompt (or its
// base prompt and one skill's fragment), the call's instructions, and the
// summary of the conversation's first covers messages.
func (a *Activities) systemPrompt(req contract.ModelRequest, covers int) string {
	var parts []string
	if ag, ok := a.catalog.Agent(req.Agent); ok {
		if req.Skill == "" {
			parts = append(parts, strings.TrimSpace(a.catalog.SystemPromptKeeping(ag, modelUser(req), func(s *skills.Skill) bool {
				return req.Documents || !onlyDocuments(s.Tools)
			})))
		} else {
			parts = append(parts, strings.TrimSpace(ag.Prompt))
			if s, ok := a.catalog.Skill(req.Skill); ok {
				parts = append(parts, "## "+s.ID+"\n\n"+strings.TrimSpace(s.Prompt))
			}
		}
	}
	parts = append(parts, strings.TrimSpace(req.Instructions))
	if covers > 0 {
		parts = append(parts, summaryHeading+"\n\n"+strings.TrimSpace(req.Summary.Text))
	}
	parts = slices.DeleteFunc(parts, func(p string) bool { return p == "" })
	return strings.Join(parts, "\n\n")
}

// heartbeat records heartbeats until the returned function is called, so a
// worker that dies mid-call is noticed within the heartbeat timeout.
func (a *Activities) heartbeat(ctx context.Context) func() {
	return a.heartbeatWith(ctx, nil)
}

// heartbeatWith is heartbeat recording details() with each heartbeat (nil
// records none): what a retry of the activity may go on from.
func (a *Activities) heartbeatWith(ctx context.Context, details func() any) func() {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(max(a.HeartbeatInterval, 10*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				if details == nil {
					activity.RecordHeartbeat(ctx)
				} else {
					activity.RecordHeartbeat(ctx, details())
				}
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// stream reads the model's streamed answer, writing its text to out as it
// arrives. It gives up on a stream that stays silent for the idle timeout
// (retryable) and on an answer larger than the output cap (not retryable).
func (a *Activities) stream(ctx context.Context, ep endpoint, req openai.ChatCompletionRequest, out *natsbus.CallStream) (contract.ModelResponse, error) {
	limit := a.outputLimit()
	// The stream runs under a context of its own, which the watchdog
	// cancels when no chunk came for the idle timeout.
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watch := a.streamWatch(ctx, ep, cancel)
	defer watch.stop()
	s, err := ep.client.CreateChatCompletionStream(sctx, req)
	if err != nil {
		return contract.ModelResponse{}, a.streamError(ctx, watch, err, ep)
	}
	defer s.Close()
	ans := streamed{calls: map[int]*longhaul.ToolCall{}}
	for {
		raw, err := s.RecvRaw()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if ferr := streamFrameError(err); ferr != err {
				return contract.ModelResponse{}, ferr
			}
			return contract.ModelResponse{}, a.streamError(ctx, watch, err, ep)
		}
		watch.reset()
		c, err := decodeChunk(raw)
		if err != nil {
			return contract.ModelResponse{}, err
		}
		ans.size += chunkSize(c)
		if ans.size > limit {
			return contract.ModelResponse{}, outputTooLarge(limit)
		}
		ans.add(c, out)
	}
	return ans.response(req, out)
}

// outputLimit is the cap on one model call's output.
func (a *Activities) outputLimit() int {
	if a.MaxOutputBytes <= 0 {
		return DefaultMaxOutputBytes
	}
	return a.MaxOutputBytes
}

// outputTooLarge is the error of a model answer past the cap: not retried,
// as a model that rambled on would ramble again.
func outputTooLarge(limit int) error {
	return temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("the model's answer went past %d bytes (LONGHAUL_MAX_MODEL_OUTPUT_BYTES) and was cut off; ask for a shorter answer", limit),
		longhaul.ErrTypeModelOutputTooLarge, nil)
}

// streamError classifies a failed stream: silent for the idle timeout, or
// failed (see modelError).
func (a *Activities) streamError(ctx context.Context, watch *watchdog, err error, ep endpoint) error {
	if ctx.Err() == nil && watch.fired() {
		return temporal.NewApplicationError(watch.reason(), longhaul.ErrTypeModelUnavailable)
	}
	return a.modelError(ctx, err, ep)
}

// modelError classifies a failed call of model (see classifyModelError).
// A call that could not connect at all says what to do about it, as the
// start banner does (modelcheck.Explain): start Ollama, or set
// LONGHAUL_LLM_BASE_URL. It is retried all the same, so a run outlives an
// endpoint that restarts; the message is what a run that gives up shows.
func (a *Activities) modelError(ctx context.Context, err error, ep endpoint) error {
	if ctx.Err() == nil {
		if msg := modelcheck.Explain(err, ep.BaseURL, ep.model); msg != "" {
			if ep.Name != "" {
				msg = "endpoint " + ep.Name + " (LONGHAUL_LLM_ENDPOINTS): " + msg
			}
			return temporal.NewApplicationErrorWithCause("model call failed: "+msg, longhaul.ErrTypeModelUnavailable, err)
		}
	}
	return classifyModelError(ctx, err)
}

// classifyModelError turns a model endpoint failure into a Temporal error:
// requests the endpoint rejects (bad request, auth, unknown model) fail at
// once; rate limits, server errors, timeouts and broken streams retry.
func classifyModelError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	status, msg := 0, err.Error()
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	switch {
	case errors.As(err, &apiErr):
		status, msg = apiErr.HTTPStatusCode, apiErr.Message
	case errors.As(err, &reqErr):
		status = reqErr.HTTPStatusCode
		if reqErr.Err != nil {
			msg = reqErr.Err.Error()
		}
	}
	if serverContextExceeded(apiErr, status) {
		return endpointTooLong(status, msg, err)
	}
	msg += serverAdvice(status, msg)
	switch status {
	case http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusUnprocessableEntity:
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("model endpoint answered %d: %s", status, msg), longhaul.ErrTypeModelRejected, err, status)
	case 0:
		return temporal.NewApplicationErrorWithCause(fmt.Sprintf("model call failed: %s", msg), longhaul.ErrTypeModelUnavailable, err)
	}
	return temporal.NewApplicationErrorWithCause(
		fmt.Sprintf("model endpoint answered %d: %s", status, msg), longhaul.ErrTypeModelUnavailable, err, status)
}

func nonRetryable(typ string, err error) error {
	return temporal.NewNonRetryableApplicationError(err.Error(), typ, err)
}

func toolFailed(name string, err error) error {
	return temporal.NewApplicationErrorWithCause(fmt.Sprintf("tool %s failed: %v", name, err), longhaul.ErrTypeToolFailed, err)
}

// modelUser is the user a model call's allow: rules judge.
func modelUser(r contract.ModelRequest) longhaul.User {
	if r.Principal != nil {
		return *r.Principal
	}
	return longhaul.User{}
}
