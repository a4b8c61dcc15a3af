package activities

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/internal/textcut"
	"github.com/longhaul-dev/longhaul/internal/window"
	"github.com/sashabaranov/go-openai"
	"go.temporal.io/sdk/temporal"
)

// Fitting a request into its model's window. Model servers do not refuse a
// request that is too long the same way: OpenAI answers 400
// context_length_exceeded, Ollama drops the oldest messages until the rest
// fits and says so only in its debug log. So every model call is counted
// before it is sent (internal/window's estimate, which errs high) and made
// to fit here, in this order, stopping as soon as it fits:
//
//  1. older tool results (before the current round) become their stored
//     reference and a bounded excerpt, oldest first;
//  2. when the system prompt, the tools, the latest user message and the
//     current round alone do not fit, the current round's tool results are
//     cut, largest first, with a note the model reads;
//  3. when the older turns still do not fit, the call returns without
//     calling the model and asks the workflow to compact them (Compact):
//     a summary the compact role writes, which is workflow state;
//  4. what still does not fit ends the run with context_length_exceeded,
//     never a request the model would cut.

// excerptRunes bounds the excerpt an older tool result keeps.
const excerptRunes = 400

// windowMargin is the share of the window kept free beside the estimate,
// as sixteenths: the estimate errs high on the measured corpus, and the
// margin covers what it has not seen.
const windowMargin = 1

// DefaultAnswerReserve is the share of a window kept for the answer when
// the request sets no max_tokens: an eighth, at least 256 tokens and at
// most 4,096.
func DefaultAnswerReserve(tokens int) int {
	return min(max(tokens/8, 256), 4096)
}

// fitting is one request's window and what of it the prompt may use.
type fitting struct {
	model   string
	window  window.Window
	reserve int
}

// budget is the most tokens the prompt may take by the estimate.
func (f fitting) budget() int {
	return (f.window.Tokens - f.reserve) * 16 / (16 + windowMargin)
}

// report is the context event of a request that used est tokens.
func (f fitting) report(est int) longhaul.ContextData {
	return longhaul.ContextData{
		Model: f.model, Window: f.window.Tokens, WindowSource: f.window.Source,
		Used: est, Reserved: f.reserve, Left: max(f.window.Tokens-f.reserve-est, 0),
	}
}

// endpointTooLong is the error of a request the endpoint itself found
// longer than its window (400 context_length_exceeded): as a window error
// of the worker's own (tooLong), not retried, and a larger model may take
// the request.
func endpointTooLong(status int, msg string, err error) error {
	return temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("model endpoint answered %d: %s", status, msg), longhaul.ErrTypeContextLength, err, status)
}

// tooLong is the error of a request whose irreducible part does not fit.
func (f fitting) tooLong(what string, est int) error {
	setting := "LONGHAUL_LLM_CONTEXT (" + f.model + "=<tokens>)"
	if f.window.Source == window.SourceAgent {
		setting = "the agent's context:"
	}
	msg := fmt.Sprintf("the request does not fit the context window of %s: %s take about %d tokens and %d are kept for the answer, of a window of %d tokens (%s); "+
		"raise the window (%s, and on Ollama OLLAMA_CONTEXT_LENGTH to match) or send less",
		f.model, what, est, f.reserve, f.window.Tokens, f.window.Source, setting)
	return temporal.NewNonRetryableApplicationError(msg, longhaul.ErrTypeContextLength, nil)
}

// newFitting is the fitting of a call to ep's model with the request's
// options: the reserve is the request's max_tokens when it sets one, else
// the answer's share of the window and room to think (thinkroom.go).
func (a *Activities) newFitting(ctx context.Context, ep endpoint, override int, opts longhaul.ModelOptions) (fitting, error) {
	f := fitting{model: a.ref(ep, ""), window: a.windowOf(ctx, ep, override)}
	f.reserve = cmp.Or(opts.MaxCompletionTokens, opts.MaxTokens,
		DefaultAnswerReserve(f.window.Tokens)+thinkReserve(opts.ReasoningEffort, a.thinkers.thinks(f.model), f.window.Tokens))
	if f.reserve >= f.window.Tokens-window.Min/2 {
		return f, f.tooLong(fmt.Sprintf("max_tokens %d leaves no room for the prompt:", f.reserve), 0)
	}
	return f, nil
}

// windowOf is ep's model's window (override is the agent's context:).
func (a *Activities) windowOf(ctx context.Context, ep endpoint, override int) window.Window {
	return a.Windows.Window(ctx, window.Target{
		Ref: ep.model, Canonical: a.ref(ep, ""), BaseURL: ep.BaseURL, APIKey: ep.APIKey, Model: ep.model,
	}, override)
}

// srcFinding marks a request message that is one of the call's findings
// (ModelRequest.Findings): cut like the current round's tool results.
const srcFinding = -2

// chatShape says which messages of a chat request are which: src maps each
// request message to its index in the conversation (-1: the system prompt
// or another message of the engine's; srcFinding: a finding), cur is the conversation index where
// the current round starts, user the latest user message's (kept whole
// wherever it is).
type chatShape struct {
	src  []int
	cur  int
	user int
}

// older reports whether the request message i is part of the older turns:
// what steps 1 and 3 may shrink.
func (s chatShape) older(i int) bool {
	ci := s.src[i]
	return ci >= 0 && ci < s.cur && ci != s.user
}

// current reports whether request message i is part of the current round.
func (s chatShape) current(i int) bool { return s.src[i] >= s.cur }

// cuttable reports whether request message i may be cut when the current
// part does not fit: a tool result of the current round, or a finding.
func (s chatShape) cuttable(i int, m openai.ChatCompletionMessage) bool {
	return s.src[i] == srcFinding || s.current(i) && m.Role == openai.ChatMessageRoleTool
}

// currentRound is where the conversation's current round starts: the
// latest assistant message that called tools after the latest user
// message, else the latest user message; and that user message's index
// (-1 without one).
func currentRound(conv []longhaul.Message) (cur, user int) {
	user = -1
	for i := len(conv) - 1; i >= 0; i-- {
		if conv[i].Role == longhaul.RoleUser {
			user = i
			break
		}
	}
	cur = max(user, 0)
	for i := len(conv) - 1; i > user; i-- {
		if conv[i].Role == longhaul.RoleAssistant && len(conv[i].ToolCalls) > 0 {
			return i, user
		}
	}
	return cur, user
}

// fitChat makes the chat request req fit f (steps 1, 2 and 4 above, in
// place) and reports what it did; compact is the conversation index up to
// which the older turns must be summarized first (step 3), zero when the
// request fits.
func fitChat(req *openai.ChatCompletionRequest, shape chatShape, refs []string, f fitting) (data longhaul.ContextData, compact int, err error) {
	budget := f.budget()
	est := window.Request(*req)
	data = f.report(est)
	if est <= budget {
		return data, 0, nil
	}
	for i := range req.Messages {
		if est <= budget {
			break
		}
		m := &req.Messages[i]
		if !shape.older(i) || m.Role != openai.ChatMessageRoleTool || utf8.RuneCountInString(m.Content) <= 2*excerptRunes {
			continue
		}
		old := window.Message(*m)
		m.Content = excerptNote(m.Content, refs[i])
		est += window.Message(*m) - old
		data.Excerpted++
	}
	older := 0
	for i, m := range req.Messages {
		if shape.older(i) {
			older += window.Message(m)
		}
	}
	if est-older > budget {
		cut, left := chatCut{req, shape}.cut(est - older - budget)
		est -= (est - older) - left
		data.Cut = cut
		if left > budget {
			return data, 0, f.tooLong("the system prompt, the tools, the latest message and the current round", left)
		}
	}
	data.Used, data.Left = est, max(f.window.Tokens-f.reserve-est, 0)
	if est <= budget {
		return data, 0, nil
	}
	if older == 0 {
		return data, 0, f.tooLong("the system prompt, the tools and the messages", est)
	}
	return data, shape.cur, nil
}

// excerptNote is what an older tool result becomes: its reference in the
// store, when it has one, and its start.
func excerptNote(content, ref string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[An earlier tool result of %d characters, shortened to fit the model's context window", utf8.RuneCountInString(content))
	if ref != "" {
		fmt.Fprintf(&b, " (stored whole as %s)", ref)
	}
	b.WriteString("; call the tool again if you need more of it. It began:]\n")
	b.WriteString(textcut.Ellipsis(content, excerptRunes))
	return b.String()
}

// cutCurrent cuts the current round's tool results and the findings until
// they shed over tokens, each with a note the model reads: evenly, so that
// each keeps its start (the largest are cut to one level, and the smaller
// ones below it are kept whole). It returns how many it cut and the
// estimate of the current part left (system prompt, tools, latest user
// message, current round, findings).
func (req chatCut) cut(over int) (cut, left int) {
	var idx []int
	var sizes []int
	for i, m := range req.Messages {
		if req.shape.cuttable(i, m) {
			idx = append(idx, i)
			sizes = append(sizes, window.Message(m))
		}
	}
	level := cutLevel(sizes, over)
	for k, i := range idx {
		if sizes[k] <= level {
			continue
		}
		m := &req.Messages[i]
		text := m.Content
		runes := utf8.RuneCountInString(text)
		tokens := max(window.Text(text), 1)
		want := sizes[k] - level // tokens this one sheds
		// Keep the share of the text that the tokens left allow, less
		// the note's own, and check again: the estimate is not linear.
		keep := runes * max(tokens-want-48, 0) / tokens
		for {
			m.Content = cutNote(text, keep, runes)
			if window.Message(*m) <= level || keep == 0 {
				break
			}
			keep = keep * 7 / 8
		}
		cut++
	}
	left = window.Request(*req.ChatCompletionRequest)
	for i, m := range req.Messages {
		if req.shape.older(i) {
			left -= window.Message(m)
		}
	}
	return cut, left
}

// chatCut is a request being cut, with its shape.
type chatCut struct {
	*openai.ChatCompletionRequest
	shape chatShape
}

// cutLevel is the size each of sizes is cut down to so that together they
// shed over: the largest level L with the sum over sizes of
// max(size-L, 0) at least over (0 when even that is not enough).
func cutLevel(sizes []int, over int) int {
	sorted := slices.Clone(sizes)
	slices.SortFunc(sorted, func(x, y int) int { return cmp.Compare(y, x) })
	shed := 0
	for k, s := range sorted {
		next := 0
		if k+1 < len(sorted) {
			next = sorted[k+1]
		}
		// Cutting the k+1 largest from s down to next sheds this much more.
		if shed+(k+1)*(s-next) >= over {
			return s - (over-shed+k)/(k+1)
		}
		shed += (k + 1) * (s - next)
	}
	return 0
}

// cutNote is text cut to its first keep runes of runes, with a note.
func cutNote(text string, keep, runes int) string {
	return textcut.Runes(text, keep) + fmt.Sprintf("\n\n[Cut: %d of %d characters shown; the rest does not fit the model's context window.]", keep, runes)
}

// fitStructured makes a structured call (a plan, a review, a dispatch)
// fit f: its system prompt and schema are irreducible; the messages after
// it (the conversation, the steps done, the result under review) are cut
// evenly, each with a note, until the request fits.
func fitStructured(req *openai.ChatCompletionRequest, f fitting) (longhaul.ContextData, error) {
	budget := f.budget()
	est := window.Request(*req)
	data := f.report(est)
	if est <= budget {
		return data, nil
	}
	// A copy: the caller's messages stay as they were, for the correction
	// round.
	req.Messages = slices.Clone(req.Messages)
	shape := chatShape{src: make([]int, len(req.Messages))}
	for i := range shape.src {
		shape.src[i] = srcFinding
	}
	if len(req.Messages) > 0 && req.Messages[0].Role == openai.ChatMessageRoleSystem {
		shape.src[0] = -1
	}
	cut, left := chatCut{req, shape}.cut(est - budget)
	data.Cut, data.Used, data.Left = cut, left, max(f.window.Tokens-f.reserve-left, 0)
	if left > budget {
		return data, f.tooLong("the instructions and the schema", left)
	}
	return data, nil
}
