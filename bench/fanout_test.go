//go:build linux

package bench

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
)

// fanoutSteps is how many look-ups each plan shape has.
const fanoutSteps = 6

// planShape is one plan BenchmarkFanout runs: each look-up step's needs
// (1-based step numbers), or no depends_on at all (today's order).
type planShape struct {
	name  string
	needs func(i int) []int // i is the step's 1-based number
}

var planShapes = []planShape{
	{name: "sequential (no depends_on)"},
	{name: "six independent", needs: func(int) []int { return []int{} }},
	{name: "a chain of six", needs: func(i int) []int {
		if i == 1 {
			return []int{}
		}
		return []int{i - 1}
	}},
	{name: "two waves of three", needs: func(i int) []int {
		if i <= 3 {
			return []int{}
		}
		return []int{1, 2, 3}
	}},
}

// BenchmarkFanout measures a research run's wall time by the shape of its
// plan: six look-ups, each an HTTP tool that answers after
// LONGHAUL_BENCH_STEP (default 10 s), then the answer, run by `longhaul
// dev` as a child process with the default bound of four steps at once.
// Beside each shape's wall time it reports the engine's CPU and the
// embedded Temporal's persistence writes per step (each step of a shape
// with depends_on is a child workflow), so what fanning out costs is read
// against running the same six steps in order.
func BenchmarkFanout(b *testing.B) {
	set := loadSettings(b)
	step := 10 * time.Second
	if v := os.Getenv("LONGHAUL_BENCH_STEP"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			b.Fatalf("LONGHAUL_BENCH_STEP %q: a positive duration", v)
		}
		step = d
	}
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(step):
		case <-r.Context().Done():
			return
		}
		fmt.Fprintf(w, "fact %s", r.URL.Query().Get("n"))
	}))
	defer slow.Close()
	b.Setenv("LONGHAUL_SKILLS_DIR", fanoutSkills(b, slow.URL))
	metricsAddr := freeAddr(b)
	b.Setenv("LONGHAUL_EMBEDDED_METRICS_ADDR", metricsAddr)
	model := llmtest.New(b)
	for _, s := range planShapes {
		model.On(func(r llmtest.Request) bool {
			return llmtest.HasSchema("plan")(r) && strings.Contains(r.LastUserMessage(), s.name)
		}, llmtest.JSON(fanoutPlan(s)))
	}
	model.On(llmtest.HasSchema("step_review"), llmtest.JSON(map[string]string{"decision": "ok", "reason": "found"}))
	model.SetDefault(llmtest.Text("Six facts."))
	lh := startChild(b, binary(b), model.URL())
	engineURL := lh.url + "/v1/chat/completions"
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(len(planShapes)*(fanoutSteps+2))*step+4*requestTimeout)
	defer cancel()
	b.ResetTimer()

	t := table{
		title: fmt.Sprintf("a research run by plan shape: %d look-ups of %v each, then the answer; at most 4 steps at once", fanoutSteps, step),
		head:  []string{"plan", "wall s", "of sequential", "engine CPU ms", "CPU ms a step", "persistence writes a step"},
	}
	var sequential time.Duration
	for _, s := range planShapes {
		var wall time.Duration
		var cpu time.Duration
		counts := lh.countRequests(b, "http://"+metricsAddr+"/metrics", func() {
			cpu, _ = lh.measure(b, func() {
				start := time.Now()
				if _, err := nonStream(ctx, engineURL, chatBody("fanbench", false, "Look up six facts: "+s.name)); err != nil {
					lh.fatal(b, fmt.Errorf("%s: %w", s.name, err))
				}
				wall = time.Since(start)
			})
		})
		if s.needs == nil {
			sequential = wall
		}
		writes := 0.0
		for k, v := range counts.n {
			if k.kind() == "write" {
				writes += v
			}
		}
		t.rows = append(t.rows, []string{s.name, secs(wall), fmt.Sprintf("%.2f", wall.Seconds()/sequential.Seconds()),
			ms(cpu), ms(cpu / fanoutSteps), fmt.Sprintf("%.1f", writes/fanoutSteps)})
		b.ReportMetric(wall.Seconds(), "s/"+strings.ReplaceAll(s.name, " ", "-"))
	}
	b.StopTimer()
	report(b, time.Now().Format(time.DateTime)+"; longhaul dev as a child process\n\n", set.out, t)
}

// fanoutSkills writes the benchmark's agent and skill to a folder for
// LONGHAUL_SKILLS_DIR: an agentic agent whose one skill is a look-up, an
// HTTP tool at url/lookup.
func fanoutSkills(b *testing.B, url string) string {
	dir := b.TempDir()
	files := map[string]string{
		"fanbench.md": "---\nagent: fanbench\ndescription: Looks facts up, several at once\nmode: agentic\nskills: [lookup]\n---\nYou look facts up.\n",
		"lookup.md": "---\nskill: lookup\ndescription: Looks one fact up\ntools: [slow_lookup]\nhttp_tools:\n" +
			"  - name: slow_lookup\n    description: Looks up fact n\n    url: " + url + "/lookup\n    query: {n: \"{n}\"}\n" +
			"    parameters: {type: object, properties: {n: {type: integer}}, required: [n]}\n    timeout: 5m\n---\nLook facts up.\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// fanoutPlan is the planner's answer for shape s.
func fanoutPlan(s planShape) map[string]any {
	steps := make([]map[string]any, 0, fanoutSteps+1)
	all := make([]int, 0, fanoutSteps)
	for i := 1; i <= fanoutSteps; i++ {
		st := map[string]any{"kind": "tool", "target": "slow_lookup", "title": fmt.Sprintf("Look up fact %d", i),
			"arguments": map[string]any{"n": i}, "success": "the fact"}
		if s.needs != nil {
			st["depends_on"] = s.needs(i)
		}
		steps = append(steps, st)
		all = append(all, i)
	}
	answer := map[string]any{"kind": "completion", "title": "Answer", "input": "the six facts", "success": "all six"}
	if s.needs != nil {
		answer["depends_on"] = all
	}
	return map[string]any{"goal": "Six facts", "steps": append(steps, answer)}
}
