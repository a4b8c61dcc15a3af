package evals

import (
	"fmt"
	"strings"

	"github.com/longhaul-dev/longhaul/contract"
)

// CallsDiff lists how a replay's tool calls differ from the recorded ones,
// call by call in order: a missing call, an extra one, another tool, other
// arguments (unless names only are compared). Empty: the same calls.
func CallsDiff(recorded, replayed []contract.PinnedCall, namesOnly bool) []string {
	var out []string
	for i := range max(len(recorded), len(replayed)) {
		switch {
		case i >= len(replayed):
			out = append(out, fmt.Sprintf("call %d: %s%s was recorded, not made", i+1, recorded[i].Name, args(recorded[i], namesOnly)))
		case i >= len(recorded):
			out = append(out, fmt.Sprintf("call %d: %s%s was made, not recorded", i+1, replayed[i].Name, args(replayed[i], namesOnly)))
		case recorded[i].Name != replayed[i].Name:
			out = append(out, fmt.Sprintf("call %d: %s instead of %s", i+1, replayed[i].Name, recorded[i].Name))
		case !namesOnly && contract.CanonicalJSON(recorded[i].Arguments) != contract.CanonicalJSON(replayed[i].Arguments):
			out = append(out, fmt.Sprintf("call %d: %s with %s instead of %s", i+1, replayed[i].Name,
				contract.CanonicalJSON(replayed[i].Arguments), contract.CanonicalJSON(recorded[i].Arguments)))
		}
	}
	return out
}

func args(c contract.PinnedCall, namesOnly bool) string {
	if namesOnly {
		return ""
	}
	return " " + contract.CanonicalJSON(c.Arguments)
}

// PlanDiff lists how a replay's plan steps differ from the recorded ones.
func PlanDiff(recorded, replayed []string) []string {
	var out []string
	for i := range max(len(recorded), len(replayed)) {
		switch {
		case i >= len(replayed):
			out = append(out, fmt.Sprintf("step %d: %q was recorded, not planned", i+1, recorded[i]))
		case i >= len(recorded):
			out = append(out, fmt.Sprintf("step %d: %q was planned, not recorded", i+1, replayed[i]))
		case recorded[i] != replayed[i]:
			out = append(out, fmt.Sprintf("step %d: %q instead of %q", i+1, replayed[i], recorded[i]))
		}
	}
	return out
}

// maxDiffLines bounds the lines an answer diff compares (its cost is their
// product).
const maxDiffLines = 2000

// AnswerDiff is a line diff of the recorded answer (lines "-") and the
// replayed one (lines "+"), with the lines they share (" "); empty when
// they are the same.
func AnswerDiff(recorded, replayed string) string {
	if strings.TrimSpace(recorded) == strings.TrimSpace(replayed) {
		return ""
	}
	a, b := lines(recorded), lines(replayed)
	// lcs[i][j] is the longest common subsequence of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var sb strings.Builder
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			sb.WriteString("  " + a[i] + "\n")
			i, j = i+1, j+1
		case j < len(b) && (i == len(a) || lcs[i][j+1] >= lcs[i+1][j]):
			sb.WriteString("+ " + b[j] + "\n")
			j++
		default:
			sb.WriteString("- " + a[i] + "\n")
			i++
		}
	}
	return sb.String()
}

func lines(s string) []string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	if len(l) > maxDiffLines {
		l = append(l[:maxDiffLines], fmt.Sprintf("… %d more lines", len(l)-maxDiffLines))
	}
	return l
}

// Result builds a case's result from its replay and its grades: it passes
// when the replay ended without error and every grade passed.
func Result(c contract.EvalCase, res contract.AgentResult, replayErr string, grades []contract.GraderResult) contract.CaseResult {
	out := contract.CaseResult{
		Case: c.ID, Error: replayErr, Grades: grades, Answer: res.Content,
		AnswerDiff: AnswerDiff(c.Answer, res.Content), Usage: res.Usage, Recorded: c.Usage,
	}
	if r := res.Replay; r != nil {
		out.Calls, out.NotRecorded = r.Calls, r.NotRecorded
		out.PlanDiff = PlanDiff(c.Plan, r.Plan)
	}
	out.CallsDiff = CallsDiff(c.Calls, out.Calls, false)
	out.Pass = replayErr == ""
	for _, g := range grades {
		out.Pass = out.Pass && g.Pass
	}
	return out
}
