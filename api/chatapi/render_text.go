// The words a chat client is shown beside the answer: plan blocks,
// approval prompts and the status lines of memory, context and approvals.

package chatapi

import (
	"fmt"
	"html"
	"strings"
	"unicode/utf8"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/textcut"
)

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// planBlock renders a plan as a collapsible block, which Open WebUI shows
// folded above the answer.
func planBlock(p longhaul.Plan) string {
	var b strings.Builder
	title := fmt.Sprintf("Plan · %d step%s", len(p.Steps), plural(len(p.Steps)))
	if p.Revision > 1 {
		title = fmt.Sprintf("Revised plan (v%d) · %d step%s", p.Revision, len(p.Steps), plural(len(p.Steps)))
	}
	fmt.Fprintf(&b, "<details type=\"plan\" done=\"true\">\n<summary>%s</summary>\n\n", html.EscapeString(title))
	if p.Goal != "" {
		fmt.Fprintf(&b, "**Goal:** %s\n\n", html.EscapeString(p.Goal))
	}
	if p.Revision > 1 && p.Reason != "" {
		fmt.Fprintf(&b, "_Why:_ %s\n\n", html.EscapeString(p.Reason))
	}
	if t := p.Translation; t != nil {
		// language: auto: the request as written and as worked on.
		fmt.Fprintf(&b, "_Request (%s):_ %s\n\n_Worked on in %s:_ %s\n\n", html.EscapeString(t.Language),
			html.EscapeString(textcut.Ellipsis(strings.Join(strings.Fields(t.Original), " "), 300)), html.EscapeString(t.Into), html.EscapeString(textcut.Ellipsis(strings.Join(strings.Fields(t.Text), " "), 300)))
	}
	for i, s := range p.Steps {
		mark := ""
		if s.Status == longhaul.StepDone || s.Status == longhaul.StepFailed {
			mark = " ✓"
		}
		what := s.Title
		if s.Kind != longhaul.StepCompletion && s.Target != "" {
			what = fmt.Sprintf("%s (`%s`)", s.Title, s.Target)
		}
		if s.Kind == longhaul.StepCompletion && s.Model != "" {
			what = fmt.Sprintf("%s (answered by `%s`)", s.Title, s.Model)
		}
		fmt.Fprintf(&b, "%d. %s%s\n", i+1, html.EscapeString(what), mark)
	}
	b.WriteString("\n</details>\n\n")
	return b.String()
}

// approvalReplyHint closes every approval prompt; a chat message after an
// assistant message holding it answers the run that asked.
const approvalReplyHint = "Reply `approve` to let it run or `deny` to refuse it"

// maxPromptArgs bounds the arguments an approval prompt shows.
const maxPromptArgs = 1500

// approvalPrompt asks a person, in the chat, to approve a tool call of run:
// which tool, on what, with which arguments, and how to answer. Arguments
// longer than maxPromptArgs are cut; since an approval covers them whole,
// the prompt then says how much it left out and where to read them all
// (the run's waiting.arguments).
func approvalPrompt(d longhaul.ApprovalRequiredData, run string) string {
	var b strings.Builder
	who := "the agent"
	if d.Agent != "" {
		// A child run's call (an agent this one asked), answered here.
		who = "the agent " + codeSpan(d.Agent) + ", asked by this one,"
	}
	b.WriteString("**Approval needed:** " + who + " wants to call " + codeSpan(d.Name))
	if d.Target != "" {
		b.WriteString(" (" + codeSpan(d.Target) + ")")
	}
	whole := strings.TrimSpace(d.Arguments)
	args := textcut.Ellipsis(whole, maxPromptArgs)
	if args != "" && args != "{}" {
		fence := "```"
		for strings.Contains(args, fence) {
			fence += "`"
		}
		b.WriteString(" with these arguments:\n\n" + fence + "json\n" + args + "\n" + fence + "\n\n")
		if args != whole {
			left := utf8.RuneCountInString(whole) - utf8.RuneCountInString(strings.TrimSuffix(args, "…"))
			where := "the run's `waiting.arguments`"
			if run != "" {
				where = "`GET /v1/runs/" + run + "` (`waiting.arguments`)"
			}
			fmt.Fprintf(&b, "_The arguments are cut here: %d more characters are not shown, and approving lets the call run with all of them; %s shows them whole._\n\n", left, where)
		}
	} else {
		b.WriteString(".\n\n")
	}
	b.WriteString(approvalReplyHint + ", or write a reply to tell it what to do instead.")
	return b.String()
}

// codeSpan writes s as inline Markdown code.
func codeSpan(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if !strings.Contains(s, "`") {
		return "`" + s + "`"
	}
	return "`` " + strings.ReplaceAll(s, "``", "` `") + " ``"
}

// waitingStatus is Open WebUI's status line of a response that stopped at a
// pending approval.
func waitingStatus(d longhaul.ApprovalRequiredData) string {
	s := "Waiting for your approval: " + d.Name
	if d.Target != "" {
		s += " · " + d.Target
	}
	if d.Agent != "" {
		s += " (" + d.Agent + ")"
	}
	return s
}

// approvalStatus is Open WebUI's status line of a person's decision.
func approvalStatus(d longhaul.ApprovalData) string {
	switch d.Decision {
	case contract.DecisionApproved:
		return "Approved: " + d.Name
	case contract.DecisionDenied:
		s := "Denied: " + d.Name
		if d.Text != "" {
			s += " (" + d.Text + ")"
		}
		return s
	}
	return "Not approved, with a reply: " + d.Name
}

// pendingApproval reports whether events[i] asks for an approval that no
// later event of events answers: the run waits for a person there.
func pendingApproval(events []longhaul.Event, i int) (longhaul.ApprovalRequiredData, bool) {
	var d longhaul.ApprovalRequiredData
	if events[i].Type != longhaul.EventApprovalRequired || events[i].Decode(&d) != nil {
		return d, false
	}
	for _, e := range events[i+1:] {
		var a longhaul.ApprovalData
		switch {
		case e.Type == longhaul.EventDone:
			return d, false
		case e.Type == longhaul.EventApproval && e.Decode(&a) == nil && a.ToolCallID == d.ToolCallID:
			return d, false
		}
	}
	return d, true
}

// resumeCut is where a response that answers a waiting run picks its events
// up: the index after the last approval_required at or before offset
// before (the log's end when the person's input arrived), which is where the
// previous response of the chat stopped; 0 when there is none.
func resumeCut(events []longhaul.Event, inputAt int64) int {
	cut := 0
	for i, e := range events {
		if e.Offset > inputAt {
			break
		}
		if e.Type == longhaul.EventApprovalRequired {
			cut = i + 1
		}
	}
	return cut
}

// memoryStatus is the status line of a memory event: "Recalled 3
// memories", "Saved 1 memory".
func memoryStatus(verb string, n int) string {
	if n == 1 {
		return verb + " 1 memory"
	}
	return fmt.Sprintf("%s %d memories", verb, n)
}

// contextStatus is the status line of a context event: what was shortened
// to fit the model's window, and how much of it the call used.
func contextStatus(d longhaul.ContextData) string {
	var did []string
	if d.Compacted {
		did = append(did, fmt.Sprintf("summarized the first %d messages", d.Summarized))
	}
	if d.Excerpted > 0 {
		did = append(did, fmt.Sprintf("shortened %d earlier tool result(s)", d.Excerpted))
	}
	if d.Cut > 0 {
		did = append(did, fmt.Sprintf("cut %d long result(s)", d.Cut))
	}
	if len(did) == 0 {
		did = append(did, "used the summary of earlier messages")
	}
	line := strings.Join(did, ", ")
	line = strings.ToUpper(line[:1]) + line[1:]
	if d.Compacted {
		return fmt.Sprintf("%s to fit %s's %d-token window", line, d.Model, d.Window)
	}
	return fmt.Sprintf("%s to fit %s's %d-token window (%d used, %d left)", line, d.Model, d.Window, d.Used, d.Left)
}
