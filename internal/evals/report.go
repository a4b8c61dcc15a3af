package evals

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
)

// Report is an evaluation's report: every case's result, the pass rate of
// the cases and of each grader, and the tokens spent beside the recorded
// runs'.
type Report struct {
	Cases    []contract.CaseResult `json:"cases"`
	Passed   int                   `json:"passed"`
	Failed   int                   `json:"failed"`
	PassRate float64               `json:"pass_rate"`
	// Graders are each grader's pass rate over the cases it graded.
	Graders []GraderRate `json:"graders"`
	// NotRecorded counts the replays' tool calls the recordings lacked.
	NotRecorded int            `json:"not_recorded"`
	Usage       longhaul.Usage `json:"usage"`
	Recorded    longhaul.Usage `json:"recorded_usage"`
	GradeUsage  longhaul.Usage `json:"grade_usage"`
}

// GraderRate is one grader's results.
type GraderRate struct {
	Grader   string  `json:"grader"`
	Passed   int     `json:"passed"`
	Graded   int     `json:"graded"`
	PassRate float64 `json:"pass_rate"`
}

// NewReport sums results up.
func NewReport(results []contract.CaseResult) Report {
	r := Report{Cases: results, Graders: []GraderRate{}}
	index := map[string]int{}
	for _, c := range results {
		if c.Pass {
			r.Passed++
		} else {
			r.Failed++
		}
		r.NotRecorded += c.NotRecorded
		r.Usage, r.Recorded, r.GradeUsage = r.Usage.Add(c.Usage), r.Recorded.Add(c.Recorded), r.GradeUsage.Add(c.GradeUsage)
		for _, g := range c.Grades {
			i, ok := index[g.Grader]
			if !ok {
				i = len(r.Graders)
				index[g.Grader] = i
				r.Graders = append(r.Graders, GraderRate{Grader: g.Grader})
			}
			r.Graders[i].Graded++
			if g.Pass {
				r.Graders[i].Passed++
			}
		}
	}
	r.PassRate = rate(r.Passed, len(results))
	for i := range r.Graders {
		r.Graders[i].PassRate = rate(r.Graders[i].Passed, r.Graders[i].Graded)
	}
	return r
}

func rate(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return float64(n) / float64(of)
}

// Table writes the report as a table for a terminal: a line per case.
func (r Report) Table(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tRESULT\tGRADERS\tTOOL CALLS\tTOKENS (RECORDED)")
	for _, c := range r.Cases {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d (%d)\n", c.Case, passFail(c.Pass), grades(c), calls(c), c.Usage.TotalTokens, c.Recorded.TotalTokens)
	}
	fmt.Fprintf(tw, "\n%d/%d passed (%.0f%%)\t\t\t%d not recorded\t%d (%d)\n", r.Passed, len(r.Cases), 100*r.PassRate, r.NotRecorded, r.Usage.TotalTokens, r.Recorded.TotalTokens)
	return tw.Flush()
}

func passFail(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

func grades(c contract.CaseResult) string {
	if c.Error != "" {
		return "error: " + c.Error
	}
	var out []string
	for _, g := range c.Grades {
		mark := "✓"
		if !g.Pass {
			mark = "✗"
		}
		out = append(out, mark+g.Grader)
	}
	return strings.Join(out, " ")
}

func calls(c contract.CaseResult) string {
	s := fmt.Sprintf("%d", len(c.Calls))
	if n := len(c.CallsDiff); n > 0 {
		s += fmt.Sprintf(", %d differ", n)
	}
	if c.NotRecorded > 0 {
		s += fmt.Sprintf(", %d not recorded", c.NotRecorded)
	}
	return s
}

// Markdown writes the report as Markdown: the summary, the graders' pass
// rates, the cases, and each failed case's reasons and diffs.
func (r Report) Markdown(w io.Writer) {
	fmt.Fprintf(w, "# Evaluation report\n\n%d of %d cases passed (%.0f%%); %d tool calls not recorded; tokens %d (recorded runs: %d), grading %d.\n\n",
		r.Passed, len(r.Cases), 100*r.PassRate, r.NotRecorded, r.Usage.TotalTokens, r.Recorded.TotalTokens, r.GradeUsage.TotalTokens)
	fmt.Fprintln(w, "| grader | passed | pass rate |\n|---|---|---|")
	for _, g := range r.Graders {
		fmt.Fprintf(w, "| %s | %d/%d | %.0f%% |\n", g.Grader, g.Passed, g.Graded, 100*g.PassRate)
	}
	fmt.Fprintln(w, "\n| case | result | graders | tool calls | tokens (recorded) |\n|---|---|---|---|---|")
	for _, c := range r.Cases {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %d (%d) |\n", c.Case, passFail(c.Pass), grades(c), calls(c), c.Usage.TotalTokens, c.Recorded.TotalTokens)
	}
	for _, c := range r.Cases {
		if !c.Pass {
			failure(w, c)
		}
	}
}

func failure(w io.Writer, c contract.CaseResult) {
	fmt.Fprintf(w, "\n## %s\n\n", c.Case)
	if c.Error != "" {
		fmt.Fprintf(w, "The replay failed: %s\n\n", c.Error)
	}
	for _, g := range c.Grades {
		if !g.Pass {
			fmt.Fprintf(w, "- %s failed: %s\n", g.Grader, g.Reason)
		}
	}
	for _, d := range append(c.CallsDiff, c.PlanDiff...) {
		fmt.Fprintf(w, "- %s\n", d)
	}
	if c.AnswerDiff != "" {
		fmt.Fprintf(w, "\nThe answer, recorded (-) and replayed (+):\n\n```diff\n%s```\n", c.AnswerDiff)
	}
}

// Write writes report.json and report.md to dir.
func (r Report) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	var md strings.Builder
	r.Markdown(&md)
	return os.WriteFile(filepath.Join(dir, "report.md"), []byte(md.String()), 0o644)
}
