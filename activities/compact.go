package activities

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/textcut"
	"github.com/longhaul-dev/longhaul/internal/window"
	"github.com/longhaul-dev/longhaul/skills"
	"github.com/sashabaranov/go-openai"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
)

// summaryHeading leads the summary of the earlier conversation in a model
// call's system prompt.
const summaryHeading = "## The conversation so far (summarized to fit the context window)"

// compactToolRunes bounds what of one tool result the compact role reads:
// the rest was the model's to read when it came, and what mattered of it
// is in the answers that followed.
const compactToolRunes = 2000

// Compact summarizes the conversation's older turns with the compact
// role's model, so that later model calls send the summary instead. The
// turns are read in stretches that each fit the model's window, each
// folded into the summary so far; the latest user message is left out (it
// is always sent whole). The summary is bounded by the answer reserve of
// the compact model's window, and is workflow state once returned: a
// retried or replayed run never compacts the same turns twice.
func (a *Activities) Compact(ctx context.Context, req contract.CompactRequest) (resp contract.CompactResponse, err error) {
	model := cmp.Or(req.Model, a.defaultModel)
	ctx, end := modelSpan(ctx, "compact", model)
	defer func() { end("", resp.Usage, err) }()
	ep, err := a.resolve(model)
	if err != nil {
		return contract.CompactResponse{}, err
	}
	conv := req.Messages
	if req.ConvRef != "" {
		base, err := a.loadConversation(ctx, req.ConvRef)
		if err != nil {
			return contract.CompactResponse{}, err
		}
		conv = append(base, conv...)
	}
	from, text := 0, ""
	if p := req.Previous; p != nil {
		from, text = p.Covers, p.Text
	}
	upto := min(req.Upto, len(conv))
	if upto <= from {
		return contract.CompactResponse{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("nothing to compact: messages %d to %d", from, upto), longhaul.ErrTypeBadInput, nil)
	}
	f, err := a.newFitting(ctx, ep, req.Window, longhaul.ModelOptions{})
	if err != nil {
		return contract.CompactResponse{}, err
	}
	// An attempt after a dead worker's goes on from the stretch it had
	// reached, with the summary it had written so far.
	at := compactProgress{Next: from, Text: text}
	if activity.HasHeartbeatDetails(ctx) {
		var p compactProgress
		if activity.GetHeartbeatDetails(ctx, &p) == nil && p.Next > from && p.Next <= upto {
			at = p
			resp.Usage, resp.Calls = p.Usage, p.Calls
		}
	}
	prog := &progress[compactProgress]{details: at}
	defer a.heartbeatWith(ctx, prog.heartbeatDetails)()
	_, user := currentRound(conv)
	prompt := a.catalog.Prompt(skills.PromptCompact)
	text = at.Text
	for i := at.Next; i < upto; {
		chunk, next, err := compactChunk(conv, i, upto, user, f.budget()-window.Text(prompt)-window.Text(text)-64, f)
		if err != nil {
			return resp, err
		}
		text, err = a.summarize(ctx, a.spender(req.Principal, req.Agent), ep, f, prompt, text, chunk, &resp)
		if err != nil {
			return resp, err
		}
		i = next
		// Recorded at once, not at the next tick: a worker that dies now
		// loses no stretch already summarized.
		prog.set(compactProgress{Next: i, Text: text, Usage: resp.Usage, Calls: resp.Calls})
		activity.RecordHeartbeat(ctx, prog.get())
	}
	resp.Summary = longhaul.Summary{Text: text, Covers: upto, Key: longhaul.SummaryKey(conv[:upto]), Model: a.ref(ep, ""), Tokens: window.Text(text)}
	activity.GetMetricsHandler(ctx).WithTags(map[string]string{"model": resp.Summary.Model}).Counter(MetricCompactions).Inc(1)
	return resp, nil
}

// compactChunk renders the conversation from message i (up to upto,
// skipping the latest user message skip) as text for the compact role, as
// much as fits budget tokens; next is where the following stretch starts.
// A single message larger than the budget is cut to it.
func compactChunk(conv []longhaul.Message, i, upto, skip, budget int, f fitting) (chunk string, next int, err error) {
	if budget < 128 {
		return "", i, f.tooLong("the compaction prompt and the summary so far", f.window.Tokens-f.reserve-budget)
	}
	var b strings.Builder
	used := 0
	for ; i < upto; i++ {
		if i == skip {
			continue
		}
		line := summaryLine(conv[i])
		t := window.Text(line) + 2
		if used+t > budget {
			if used > 0 {
				break
			}
			line = textcut.Runes(line, len([]rune(line))*budget/t) + " […]"
			t = budget
		}
		b.WriteString(line)
		b.WriteString("\n\n")
		used += t
	}
	return b.String(), i, nil
}

// summaryLine is one message as the compact role reads it.
func summaryLine(m longhaul.Message) string {
	var b strings.Builder
	switch m.Role {
	case longhaul.RoleTool:
		fmt.Fprintf(&b, "[tool %s result] %s", m.Name, textcut.Ellipsis(m.Content, compactToolRunes))
	default:
		fmt.Fprintf(&b, "[%s] %s", m.Role, m.Content)
	}
	for _, tc := range m.ToolCalls {
		fmt.Fprintf(&b, "\n[%s calls %s %s]", m.Role, tc.Name, textcut.Ellipsis(tc.Arguments, 500))
	}
	return b.String()
}

// summarize asks the compact role to fold chunk into the summary so far.
func (a *Activities) summarize(ctx context.Context, spend spender, ep endpoint, f fitting, prompt, summary, chunk string, resp *contract.CompactResponse) (string, error) {
	var user strings.Builder
	user.WriteString("Summary so far:\n")
	if summary == "" {
		user.WriteString("(none)")
	}
	user.WriteString(summary)
	user.WriteString("\n\nConversation to add to it:\n\n")
	user.WriteString(chunk)
	oreq := openai.ChatCompletionRequest{
		Model: ep.model,
		Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleSystem, Content: prompt},
			{Role: openai.ChatMessageRoleUser, Content: user.String()},
		},
		MaxTokens: f.reserve,
	}
	// Each chunk's call is a part of its own, numbered as the calls the
	// progress carries across attempts; each attempt is charged its own.
	settle, err := spend.call(ctx, a.ref(ep, ""), strconv.Itoa(resp.Calls+1), oreq)
	if err != nil {
		return "", err
	}
	out, err := ep.client.CreateChatCompletion(ctx, oreq)
	usage := wholeUsage(oreq, out)
	settle(unaryCharge(ctx, oreq, out, err))
	if err != nil {
		return "", a.modelError(ctx, err, ep)
	}
	resp.Calls++
	resp.Usage = resp.Usage.Add(usage)
	var text string
	if len(out.Choices) > 0 {
		// A thinking model's <think> block is not the summary.
		_, text = splitThink(out.Choices[0].Message.Content)
		text = strings.TrimSpace(text)
	}
	if text == "" {
		return "", temporal.NewApplicationError("the compact model answered no summary", longhaul.ErrTypeModelBadOutput)
	}
	// However long the model made it, the summary must leave the window
	// room: it is bounded by the answer reserve.
	if window.Text(text) > f.reserve {
		text = textcut.Runes(text, len([]rune(text))*f.reserve/window.Text(text))
	}
	return text, nil
}

// compactProgress is how far a compaction got: the stretch it goes on
// from and the summary up to it, recorded with its heartbeats.
type compactProgress struct {
	Next  int            `json:"next"`
	Text  string         `json:"text"`
	Usage longhaul.Usage `json:"usage"`
	Calls int            `json:"calls"`
}
