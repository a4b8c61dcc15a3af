package chatapi

import (
	"encoding/json"
	"fmt"
	"html"
	"slices"
	"strings"
	"unicode"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// The chat API's pure helpers over messages: client tool results, tool
// cards, summaries and a person's reply to an approval prompt. The wire
// types they read are internal/wire's.

// clientResults finds the results of client tool calls at the end of a
// conversation: the tool messages after the last assistant message, when
// they answer calls that name a run of Longhaul's (contract.ClientCallID),
// all the same one. It returns that run and the results.
func clientResults(msgs []wire.ChatMessage) (string, []contract.ToolResult, bool) {
	var run string
	var out []contract.ToolResult
	for i := len(msgs) - 1; i >= 0 && msgs[i].Role == "tool"; i-- {
		id, ok := contract.ParseClientCallID(msgs[i].ToolCallID)
		if !ok || (run != "" && id != run) {
			return "", nil, false
		}
		run = id
		out = append(out, contract.ToolResult{ToolCallID: msgs[i].ToolCallID, Content: msgs[i].Content.Text})
	}
	if run == "" {
		return "", nil, false
	}
	slices.Reverse(out)
	return run, out, true
}

// toolCard renders a finished tool call the way Open WebUI renders its own:
// a <details type="tool_calls"> block whose attributes hold the JSON-encoded
// arguments and result, HTML-escaped.
func toolCard(d longhaul.ToolOutputData, arguments string) string {
	args, _ := json.Marshal(arguments)
	result, _ := json.Marshal(d.Output)
	return fmt.Sprintf("\n<details type=\"tool_calls\" done=\"true\" id=\"%s\" name=\"%s\" arguments=\"%s\" result=\"%s\" files=\"\" embeds=\"\">\n<summary>Tool Executed</summary>\n</details>\n",
		html.EscapeString(d.ToolCallID), html.EscapeString(d.Name), html.EscapeString(string(args)), html.EscapeString(string(result)))
}

// chatInput reads a chat message that answers a run waiting for a person:
// approve, yes, ok, y and the like approve the pending call; deny, no, n,
// reject and the like deny it (whatever the case, with punctuation or
// spaces around); anything else is the person's reply, passed on as text.
func chatInput(text string) contract.InputRequest {
	word := strings.ToLower(strings.Join(strings.Fields(strings.TrimFunc(text, func(r rune) bool {
		return unicode.IsPunct(r) || unicode.IsSpace(r) || unicode.IsSymbol(r)
	})), " "))
	if word != "" {
		switch contract.Decide(contract.InputRequest{Text: word}) {
		case contract.DecisionApproved:
			yes := true
			return contract.InputRequest{Approve: &yes}
		case contract.DecisionDenied:
			no := false
			return contract.InputRequest{Approve: &no}
		}
	}
	return contract.InputRequest{Text: strings.TrimSpace(text)}
}

// lastUser is the index of the last user message, or -1.
func lastUser(msgs []longhaul.Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == longhaul.RoleUser {
			return i
		}
	}
	return -1
}

// replyTo is the assistant message the last user message answers, or nil
// when the conversation has none before it (its first turn).
func replyTo(msgs []longhaul.Message) *longhaul.Message {
	for i := lastUser(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == longhaul.RoleAssistant {
			return &msgs[i]
		}
	}
	return nil
}

// askedForApproval reports whether the assistant message the last user
// message answers is an approval prompt of this API.
func askedForApproval(msgs []longhaul.Message) bool {
	m := replyTo(msgs)
	return m != nil && strings.Contains(m.Content, approvalReplyHint)
}
