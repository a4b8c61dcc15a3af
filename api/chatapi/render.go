package chatapi

import (
	"fmt"
	"strings"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// renderer turns a run's events into the frames of an OpenAI chat stream.
// Plain clients get standard chunks only; Open WebUI callers also get status
// frames and tool cards. It is pure: no I/O, so it is tested frame by frame.
type renderer struct {
	id string
	// run is the run whose events are rendered, named in an approval
	// prompt whose arguments are cut.
	run       string
	model     string
	created   int64
	openWebUI bool

	roleSent bool
	// sent is the text of the current attempt of each model call; shown is
	// all the client was shown of it; replay is shown text that a retried
	// call is expected to produce again, which is skipped.
	sent   map[string]*strings.Builder
	shown  map[string]*strings.Builder
	replay map[string]string
	args   map[string]string // tool call id → arguments, for cards
	usage  *longhaul.Usage
	tools  int
	finish string
	// cut says why an answer that finished "length" is short.
	cut    string
	failed *longhaul.ErrorData
	// waiting is the pending approval the response stops at, if any.
	waiting *longhaul.ApprovalRequiredData
	// start is when the request came, until its first text is sent (for
	// the time-to-first-token metric); zero after.
	start time.Time
	// auditOwner, when set, is the principal that asked for the run's
	// audit trail: it ends the stream on a chunk of its own (auditChunk).
	auditOwner string
}

func newRenderer(id, model string, created int64, openWebUI bool) *renderer {
	return &renderer{
		id: id, model: model, created: created, openWebUI: openWebUI,
		sent: map[string]*strings.Builder{}, shown: map[string]*strings.Builder{}, replay: map[string]string{}, args: map[string]string{},
	}
}

// render returns the frames (each JSON-encodable) for one event: each
// event type has a method of its own.
func (r *renderer) render(e longhaul.Event) []any {
	switch e.Type {
	case longhaul.EventContentDelta:
		return r.contentDelta(e)
	case longhaul.EventReasoningDelta:
		return r.reasoningDelta(e)
	case longhaul.EventContent:
		return r.content(e)
	case longhaul.EventClientToolCalls:
		return r.clientToolCalls(e)
	case longhaul.EventContentReset:
		var d longhaul.ContentResetData
		if e.Decode(&d) == nil {
			r.reset(d.Call)
		}
	case longhaul.EventThinking:
		return statusLine(r, e, false, func(d longhaul.ThinkingData) string { return d.Message })
	case longhaul.EventPlan:
		return r.plan(e)
	case longhaul.EventStepStart:
		return statusLine(r, e, false, stepStatus)
	case longhaul.EventReview:
		return r.review(e)
	case longhaul.EventSkillActivity:
		return statusLine(r, e, false, func(d longhaul.SkillActivityData) string { return d.Skill + ": " + d.Message })
	case longhaul.EventToolStart:
		return r.toolStart(e)
	case longhaul.EventToolStatus:
		return statusLine(r, e, false, toolStatus)
	case longhaul.EventToolOutput:
		var d longhaul.ToolOutputData
		if r.openWebUI && e.Decode(&d) == nil {
			return []any{r.chunk(toolCard(d, r.args[d.ToolCallID]))}
		}
	case longhaul.EventApproval:
		return statusLine(r, e, false, approvalStatus)
	case longhaul.EventMemoryRecall:
		return statusLine(r, e, false, func(d longhaul.MemoryRecallData) string { return memoryStatus("Recalled", d.Count) })
	case longhaul.EventMemorySaved:
		return statusLine(r, e, true, func(d longhaul.MemorySavedData) string { return memoryStatus("Saved", d.Count) })
	case longhaul.EventContext:
		return statusLine(r, e, false, contextStatus)
	case longhaul.EventModelFallback:
		return statusLine(r, e, false, func(d longhaul.ModelFallbackData) string { return d.Message() })
	default:
		r.note(e)
	}
	return nil
}

// note takes the events that end a stream rather than show in it: the
// run's usage, its failure, its finish reason.
func (r *renderer) note(e longhaul.Event) {
	switch e.Type {
	case longhaul.EventUsage:
		var u longhaul.Usage
		if e.Decode(&u) == nil {
			r.usage = &u
		}
	case longhaul.EventError:
		var d longhaul.ErrorData
		if e.Decode(&d) == nil {
			r.failed = &d
		}
	case longhaul.EventDone:
		var d longhaul.DoneData
		if e.Decode(&d) == nil {
			r.finish, r.cut = d.FinishReason, d.Cut
		}
	}
}

// statusLine is the status frame of an event that Open WebUI shows as a
// status line only (none for other clients): line words e's data, D.
func statusLine[D any](r *renderer, e longhaul.Event, done bool, line func(D) string) []any {
	var d D
	if !r.openWebUI || e.Decode(&d) != nil {
		return nil
	}
	return []any{wire.NewStatusFrame(line(d), done)}
}

// contentDelta is the chunk of a model call's streamed text.
func (r *renderer) contentDelta(e longhaul.Event) []any {
	var d longhaul.Delta
	if e.Decode(&d) != nil {
		return nil
	}
	if t := r.text(d.Call, d.Text); t != "" {
		return []any{r.chunk(t)}
	}
	return nil
}

// reasoningDelta is the chunk of a model call's streamed reasoning: a
// delta.reasoning_content, the field the contract streams reasoning in.
// Open WebUI v0.11.0 takes a delta's reasoning_content, reasoning or
// thinking as the answer's reasoning and shows it as a "Thought for N
// seconds" block above the text (backend/open_webui/utils/middleware.py:
// 4550-4554, 4571-4620; as the owuitest double records). A past answer's
// reasoning goes back to a model only as <think> tags for a provider it
// knows to read them (:2059-2073), which Longhaul's models name none of;
// wire.AnswerText takes a reasoning block a client sends back in
// a past answer out of its history all the same.
func (r *renderer) reasoningDelta(e longhaul.Event) []any {
	var d longhaul.Delta
	if e.Decode(&d) != nil {
		return nil
	}
	return r.reasoningChunk(r.text(d.Call+thoughtKey, d.Text))
}

// thoughtKey marks the key of a call's reasoning in the renderer's text
// maps, beside its text's: the two are kept and reset alike, apart.
const thoughtKey = "\x00reasoning"

// reasoningChunk is the chunk of a piece of reasoning (none for none).
func (r *renderer) reasoningChunk(t string) []any {
	if t == "" {
		return nil
	}
	c := r.chunk("")
	c.Choices[0].Delta.ReasoningContent = t
	return []any{c}
}

// content takes a model call's whole reasoning and text: what the deltas
// did not bring yet.
func (r *renderer) content(e longhaul.Event) []any {
	var d longhaul.ContentData
	if e.Decode(&d) != nil {
		return nil
	}
	out := r.reasoningChunk(r.text(d.Call+thoughtKey, r.unsent(d.Call+thoughtKey, d.Reasoning)))
	if t := r.text(d.Call, r.unsent(d.Call, d.Text)); t != "" {
		out = append(out, r.chunk(t))
	}
	return out
}

// unsent is what of the whole text of key the deltas did not bring: all
// of it, after a reset, when the deltas sent something else.
func (r *renderer) unsent(key, text string) string {
	b := r.sent[key]
	if b == nil {
		return text
	}
	shown := b.String()
	if !strings.HasPrefix(text, shown) {
		r.reset(key)
		return text
	}
	return text[len(shown):]
}

// clientToolCalls ends the response: the client runs these and comes back.
func (r *renderer) clientToolCalls(e longhaul.Event) []any {
	var d longhaul.ClientToolCallsData
	if e.Decode(&d) != nil {
		return nil
	}
	r.finish = "tool_calls"
	c := r.chunk("")
	c.Choices[0].Delta.ToolCalls = wireCalls(d.Calls, true)
	return []any{c}
}

// plan shows Open WebUI a plan: a status line and the plan's block.
func (r *renderer) plan(e longhaul.Event) []any {
	var p longhaul.Plan
	if !r.openWebUI || e.Decode(&p) != nil {
		return nil
	}
	return []any{wire.NewStatusFrame(fmt.Sprintf("Planned %d step%s", len(p.Steps), plural(len(p.Steps))), false), r.chunk(planBlock(p))}
}

// toolStart keeps a tool call's arguments for its card and counts it;
// Open WebUI gets a status line.
func (r *renderer) toolStart(e longhaul.Event) []any {
	var d longhaul.ToolStartData
	if e.Decode(&d) != nil {
		return nil
	}
	r.args[d.ToolCallID] = d.Arguments
	r.tools++
	if !r.openWebUI {
		return nil
	}
	desc := "Running " + d.Name
	if d.Target != "" {
		desc += " · " + d.Target
	}
	return []any{wire.NewStatusFrame(desc, false)}
}

// stepStatus is the status line of a plan step that starts.
func stepStatus(d longhaul.StepStartData) string {
	desc := fmt.Sprintf("Step %d/%d: %s", d.Index, d.Total, d.Title)
	if d.About != "" {
		desc += " · " + d.About
	}
	return desc
}

// review shows Open WebUI a review that adjusts the plan; other reviews
// show nothing.
func (r *renderer) review(e longhaul.Event) []any {
	var d longhaul.ReviewData
	if !r.openWebUI || e.Decode(&d) != nil || d.Decision != longhaul.ReviewAdjust {
		return nil
	}
	return []any{wire.NewStatusFrame(reviewStatus(d), false)}
}

// reviewStatus is the status line of a review that adjusts the plan.
func reviewStatus(d longhaul.ReviewData) string {
	if d.Forced {
		return "Continuing with the current plan (no re-plans left): " + d.Reason
	}
	return "Re-planning: " + d.Reason
}

// toolStatus is the status line of a running tool's progress.
func toolStatus(d longhaul.ToolStatusData) string {
	desc := d.Name + ": " + d.Message
	if d.Progress > 0 && d.Progress <= 1 {
		desc += fmt.Sprintf(" (%.0f%%)", d.Progress*100)
	}
	return desc
}

// reset voids the text and reasoning of call sent so far: a retried call
// is expected to produce them again, and what it repeats is not sent twice.
func (r *renderer) reset(call string) {
	if !strings.HasSuffix(call, thoughtKey) {
		r.reset(call + thoughtKey)
	}
	if b := r.sent[call]; b != nil {
		b.Reset()
	}
	if b := r.shown[call]; b != nil {
		r.replay[call] = b.String()
	}
}

// replayShown takes note of an event an earlier response of the chat already
// showed, so that what follows renders as if this response had shown it:
// a tool started there may finish here, and its card needs the arguments.
func (r *renderer) replayShown(e longhaul.Event) {
	var d longhaul.ToolStartData
	if e.Type == longhaul.EventToolStart && e.Decode(&d) == nil {
		r.args[d.ToolCallID] = d.Arguments
	}
}

// pause returns the frames that show a pending approval to the person and
// ends the response there: the run goes on waiting, and the chat's next
// message answers it.
func (r *renderer) pause(d longhaul.ApprovalRequiredData) []any {
	r.waiting = &d
	prompt := approvalPrompt(d, r.run)
	if r.roleSent {
		prompt = "\n\n" + prompt
	}
	return []any{r.chunk(prompt)}
}

// text returns what of a content delta is new to the client: after a
// content_reset, text the retried call produces again is not repeated; if the
// retry says something else, it starts on a new paragraph.
func (r *renderer) text(call, t string) string {
	sent, shown := r.sent[call], r.shown[call]
	if sent == nil {
		sent, shown = &strings.Builder{}, &strings.Builder{}
		r.sent[call], r.shown[call] = sent, shown
	}
	sent.WriteString(t)
	out := t
	if rp := r.replay[call]; rp != "" {
		k := commonPrefix(rp, t)
		switch {
		case k == len(t):
			r.replay[call] = rp[k:]
			return ""
		case k == len(rp):
			r.replay[call] = ""
			out = t[k:]
		default:
			r.replay[call] = ""
			out = "\n\n" + sent.String()
		}
	}
	shown.WriteString(out)
	return out
}

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

func (r *renderer) chunk(content string) wire.ChatChunk {
	d := wire.Delta{Content: content}
	if !r.roleSent {
		d.Role = "assistant"
		r.roleSent = true
	}
	return wire.ChatChunk{ID: r.id, Object: "chat.completion.chunk", Created: r.created, Model: r.model,
		Choices: []wire.ChunkChoice{{Index: 0, Delta: d}}}
}

// finishFrames are the frames after the last event: a final status for Open
// WebUI, the chunk with finish_reason, and the usage chunk when asked for. A
// failed run ends with an OpenAI error frame instead.
func (r *renderer) finishFrames(includeUsage bool) []any {
	var out []any
	if r.failed != nil {
		if r.openWebUI {
			out = append(out, wire.NewStatusFrame("Failed: "+r.failed.Message, true))
		}
		return append(out, wire.ErrorBody{Error: wire.ErrorDetail{Message: r.failed.Message, Type: "server_error", Code: strings.ToLower(r.failed.Code)}})
	}
	switch {
	case r.openWebUI && r.waiting != nil:
		out = append(out, wire.NewStatusFrame(waitingStatus(*r.waiting), true))
	case r.openWebUI && r.tools > 0:
		out = append(out, wire.NewStatusFrame(fmt.Sprintf("Used %d tool call%s", r.tools, plural(r.tools)), true))
	}
	if r.openWebUI && r.cut != "" {
		// Open WebUI shows no finish reason: a cut answer, or none at
		// all after a think that used the whole limit, says so where
		// its user reads.
		out = append(out, wire.NewStatusFrame(longhaul.CutNotice(r.cut), true))
	}
	reason := r.finish
	if reason == "" {
		reason = "stop"
	}
	last := r.chunk("")
	last.Choices[0].Delta.Content = ""
	last.Choices[0].FinishReason = &reason
	out = append(out, last)
	if includeUsage {
		u := longhaul.Usage{}
		if r.usage != nil {
			u = *r.usage
		}
		out = append(out, wire.ChatChunk{ID: r.id, Object: "chat.completion.chunk", Created: r.created, Model: r.model,
			Choices: []wire.ChunkChoice{}, Usage: wire.UsageOf(u)})
	}
	return out
}

// auditChunk is the last chunk before [DONE] of a stream that asked for
// the audit trail: no choices, as the usage chunk, which OpenAI's clients
// already take (openai-node's ChatCompletionStream iterates chunk.choices,
// lib/ChatCompletionStream.mjs at "for (const choice of chunk.choices)").
func (r *renderer) auditChunk(a *wire.Audit) wire.ChatChunk {
	return wire.ChatChunk{ID: r.id, Object: "chat.completion.chunk", Created: r.created, Model: r.model, Choices: []wire.ChunkChoice{}, Longhaul: a}
}
