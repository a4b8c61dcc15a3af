package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"text/tabwriter"
	"time"

	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/internal/tools"
	"github.com/longhaul-dev/longhaul/internal/wire"
	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/protobuf/proto"
)

// notes is a tool whose every answer is a page of notes, so each turn adds
// a few kilobytes to the conversation, as reading the web does.
type notes struct{}

func (notes) Name() string        { return "notes" }
func (notes) Description() string { return "Reads a page of notes" }
func (notes) Parameters() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"page":{"type":"integer"}},"required":["page"]}`)
}
func (notes) Call(_ context.Context, c tools.Call) (tools.Result, error) {
	return tools.Result{Content: strings.Repeat("A line of notes about the subject. ", 60) + string(c.Arguments)}, nil
}

// BenchmarkLongRun runs one research run of LONGHAUL_BENCH_TURNS (default
// 200) tool turns through the runs API and prints the history bytes each
// turn adds, in bands of turns, across the executions the run continued as
// new into: flat bands mean history is bounded however long the run goes.
func BenchmarkLongRun(b *testing.B) {
	turns := 200
	if v := os.Getenv("LONGHAUL_BENCH_TURNS"); v != "" {
		fmt.Sscan(v, &turns)
	}
	layer := fstest.MapFS{
		"reading.md":  {Data: []byte("---\nskill: reading\ndescription: Reads notes\ntools: [notes]\n---\nRead the notes.\n")},
		"longhaul.md": {Data: []byte(fmt.Sprintf("---\nagent: longhaul\ndescription: Reads for a long time\nmode: chat\nmax_turns: %d\nskills: [reading]\n---\nYou read.\n", turns+5))},
	}
	env := testenv.Start(b, testenv.Options{
		Layers: []fs.FS{layer}, Tools: []tools.Tool{notes{}},
		API: api.Config{HistoryLimit: 1000, RequestTimeout: time.Minute},
	})
	// The model reads one page per turn, saying a sentence about it, until
	// it has read them all.
	env.Model.SetDefault(llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		read := len(r.ToolResults())
		if read >= turns {
			return llmtest.Text(fmt.Sprintf("I read %d pages.", read))
		}
		return llmtest.ToolCalls(llmtest.ToolCall{Name: "notes", Arguments: fmt.Sprintf(`{"page":%d}`, read+1)}).
			WithText(fmt.Sprintf("Page %d next.", read+1))
	}))
	b.ResetTimer()
	start := time.Now()
	body, _ := json.Marshal(map[string]any{"agent": "longhaul", "input": "Read every page of the notes."})
	resp, err := httpClient.Post(env.URL+"/v1/runs", "application/json", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	var created wire.RunCreated
	json.NewDecoder(resp.Body).Decode(&created)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		b.Fatalf("POST /v1/runs: %d", resp.StatusCode)
	}
	ctx := context.Background()
	var res contract.AgentResult
	if err := env.Client.GetWorkflow(ctx, created.ID, "").Get(ctx, &res); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	if want := fmt.Sprintf("I read %d pages.", turns); res.Content != want {
		b.Fatalf("answer %q, want %q", res.Content, want)
	}

	// Every execution of the run, oldest first, and the bytes of history
	// each model turn added (a turn starts when its model call is
	// scheduled; an execution's start belongs to its first turn).
	list, err := env.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: fmt.Sprintf("WorkflowId = '%s'", created.ID)})
	if err != nil {
		b.Fatal(err)
	}
	execs := list.GetExecutions()
	slices.SortFunc(execs, func(x, y *workflowpb.WorkflowExecutionInfo) int {
		return x.GetStartTime().AsTime().Compare(y.GetStartTime().AsTime())
	})
	var perTurn []int
	var historyBytes, historyEvents int
	var execLines []string
	for _, e := range execs {
		it := env.Client.GetWorkflowHistory(ctx, created.ID, e.GetExecution().GetRunId(), false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		size, n, first := 0, 0, len(perTurn)
		pending := 0
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				b.Fatal(err)
			}
			s := proto.Size(ev)
			size += s
			n++
			if isModelCall(ev) {
				perTurn = append(perTurn, pending)
				pending = 0
			}
			if len(perTurn) == first {
				pending += s // before the execution's first turn
				continue
			}
			perTurn[len(perTurn)-1] += s + pending
			pending = 0
		}
		historyBytes += size
		historyEvents += n
		execLines = append(execLines, fmt.Sprintf("%d turns, %d events, %d KB", len(perTurn)-first, n, size>>10))
	}

	fmt.Printf("\nlong run: %d model turns in %.1f s; %d executions (continue-as-new past 1000 events); %d history events, %d KB in all\n",
		len(perTurn), elapsed.Seconds(), len(execs), historyEvents, historyBytes>>10)
	for i, l := range execLines {
		fmt.Printf("  execution %d: %s\n", i+1, l)
	}
	out := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(out, "turns\thistory bytes per turn: median\tmean\tmax\t")
	band := max(len(perTurn)/10, 1)
	var medians []int
	for lo := 0; lo < len(perTurn); lo += band {
		hi := min(lo+band, len(perTurn))
		v := slices.Clone(perTurn[lo:hi])
		slices.Sort(v)
		medians = append(medians, v[len(v)/2])
		fmt.Fprintf(out, "%d-%d\t%d\t%d\t%d\t\n", lo+1, hi, v[len(v)/2], mean(v), v[len(v)-1])
	}
	out.Flush()
	fmt.Println("(max: a turn that continued as new carries its execution's event archive; the last turn carries the result)")
	if len(medians) >= 3 {
		b.ReportMetric(float64(medians[1]), "bytes/turn-early")
		b.ReportMetric(float64(medians[len(medians)-2]), "bytes/turn-late")
	}
}

func mean(v []int) int {
	s := 0
	for _, x := range v {
		s += x
	}
	return s / max(len(v), 1)
}

// isModelCall reports whether ev schedules a model call.
func isModelCall(ev *historypb.HistoryEvent) bool {
	a := ev.GetActivityTaskScheduledEventAttributes()
	return a != nil && a.GetActivityType().GetName() == "ChatCompletion"
}
