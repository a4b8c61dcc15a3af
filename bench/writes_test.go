//go:build linux

package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"

	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
)

// writeTurns is how many turns of each kind BenchmarkWrites averages over.
const writeTurns = 20

// BenchmarkWrites counts what one chat turn costs the embedded Temporal's
// persistence, from the server itself: `longhaul dev` as a child process
// serves the server's own Prometheus metrics (LONGHAUL_EMBEDDED_METRICS_ADDR),
// whose persistence_requests and visibility_persistence_requests counters
// are keyed by operation (common/metrics/metric_defs.go:1657-1672 at
// v1.32.1). It reads them around 20 sequential short turns and then 20
// concurrent 10-s streamed turns, subtracts what the idle server does over
// the same time (timers, queues, scavengers), and prints the requests per
// turn by operation beside each kind of turn's history events and bytes.
func BenchmarkWrites(b *testing.B) {
	set := loadSettings(b)
	model := llmtest.New(b)
	model.On(llmtest.LastUserContains(streamPrompt(streamLength)), llmtest.Text(streamAnswer(streamLength), llmtest.ChunkDelay(tokenDelay)))
	model.SetDefault(llmtest.Text(shortAnswer))
	metricsAddr := freeAddr(b)
	b.Setenv("LONGHAUL_EMBEDDED_METRICS_ADDR", metricsAddr)
	metricsURL := "http://" + metricsAddr + "/metrics"
	bin := binary(b)
	lh := startChild(b, bin, model.URL())
	tc := lh.temporalClient(b)
	engineURL := lh.url + "/v1/chat/completions"
	ctx, cancel := context.WithTimeout(context.Background(), 4*requestTimeout)
	defer cancel()
	// One turn first: the first run of a namespace and task queue writes
	// what later ones do not (task queue metadata, caches filled).
	if _, err := nonStream(ctx, engineURL, chatBody("naked", false, "warm")); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()

	idle := lh.countRequests(b, metricsURL, func() { time.Sleep(5 * time.Second) })
	var shortRun string
	short := lh.countRequests(b, metricsURL, func() {
		for i := range writeTurns {
			resp, cancel, err := post(ctx, engineURL, chatBody("naked", false, fmt.Sprint("writes ", i)))
			if err != nil {
				lh.fatal(b, err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			cancel()
			if resp.StatusCode != http.StatusOK {
				lh.fatal(b, fmt.Errorf("short turn: status %d", resp.StatusCode))
			}
			shortRun = resp.Header.Get(api.HeaderRunID)
		}
	})
	streamed := lh.countRequests(b, metricsURL, func() {
		if r := streams([]string{engineURL}, "writes", writeTurns, 0); r.errors > 0 {
			lh.fatal(b, fmt.Errorf("%d of %d streamed turns failed: %s", r.errors, writeTurns, r.summary()))
		}
	})
	b.StopTimer()

	t := table{
		title: fmt.Sprintf("Temporal persistence requests per turn, by operation (average of %d turns each, less the idle server's over the same time)", writeTurns),
		head:  []string{"store", "operation", "kind", "short answer, not streamed", fmt.Sprintf("%v streamed answer", streamLength)},
	}
	shortPer, streamPer := short.perTurn(idle), streamed.perTurn(idle)
	keys := slices.Collect(maps.Keys(shortPer))
	for k := range streamPer {
		if _, ok := shortPer[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(x, y requestKey) int {
		return cmp.Or(cmp.Compare(x.store, y.store), cmp.Compare(x.operation, y.operation))
	})
	sums := map[string]*[2]float64{"read": {}, "write": {}}
	for _, k := range keys {
		s, st := shortPer[k], streamPer[k]
		if s < 0.05 && st < 0.05 {
			continue // the idle server's own work, not the turn's
		}
		kind := k.kind()
		sums[kind][0] += s
		sums[kind][1] += st
		t.rows = append(t.rows, []string{k.store, k.operation, kind, fmt.Sprintf("%.1f", s), fmt.Sprintf("%.1f", st)})
	}
	for _, kind := range []string{"write", "read"} {
		t.rows = append(t.rows, []string{"all", "", kind + "s", fmt.Sprintf("%.1f", sums[kind][0]), fmt.Sprintf("%.1f", sums[kind][1])})
		b.ReportMetric(sums[kind][0], kind+"s/short-turn")
		b.ReportMetric(sums[kind][1], kind+"s/streamed-turn")
	}

	hist := table{title: "history per turn", head: []string{"turn", "events", "bytes"}}
	for _, h := range []struct{ name, id string }{
		{"short answer, not streamed", shortRun},
		{fmt.Sprintf("%v streamed answer", streamLength), chatRunID("writes-0")},
	} {
		events, size, _, err := historyEvents(ctx, tc, h.id)
		if err != nil {
			lh.fatal(b, err)
		}
		hist.rows = append(hist.rows, []string{h.name, strconv.Itoa(events), strconv.Itoa(size)})
	}
	head := fmt.Sprintf("%s; longhaul dev as a child process (%s), the embedded Temporal's own metrics\n\n", time.Now().Format(time.DateTime), bin)
	report(b, head, set.out, t, hist)
}

// requestKey is one counter of the server's persistence requests.
type requestKey struct{ store, operation string }

// kind is "read" for the operations that only read (Get…, Read…, List…)
// and "write" for the others. On SQL a Create- or UpdateWorkflowExecution
// that adds history events appends them first and then writes the
// mutable state in a transaction (common/persistence/sql/execution.go:
// 64-70 and 339-351 at v1.32.1): two writes counted as one request.
func (k requestKey) kind() string {
	for _, p := range []string{"Get", "Read", "List"} {
		if strings.HasPrefix(k.operation, p) {
			return "read"
		}
	}
	return "write"
}

// requestCounts are the persistence requests of one stretch, by counter,
// and how long it took.
type requestCounts struct {
	n    map[requestKey]float64
	took time.Duration
}

// perTurn is c per turn of writeTurns, less what the idle server did over
// the same time.
func (c requestCounts) perTurn(idle requestCounts) map[requestKey]float64 {
	out := map[requestKey]float64{}
	for k, v := range c.n {
		v -= idle.n[k] * c.took.Seconds() / idle.took.Seconds()
		out[k] = max(v, 0) / writeTurns
	}
	return out
}

// countRequests reads the server's request counters before and after f,
// and returns their growth.
func (c *child) countRequests(b *testing.B, url string, f func()) requestCounts {
	b.Helper()
	c.settle()
	before := c.requestCounters(b, url)
	start := time.Now()
	f()
	// What a turn leaves to do after its answer (the run's last workflow
	// task, visibility) is the turn's too.
	c.settle()
	took := time.Since(start)
	after := c.requestCounters(b, url)
	out := requestCounts{n: map[requestKey]float64{}, took: took}
	for k, v := range after {
		out.n[k] = v - before[k]
	}
	return out
}

// requestCounters scrapes the server's persistence_requests_total and
// visibility_persistence_requests_total, summed by operation.
func (c *child) requestCounters(b *testing.B, url string) map[requestKey]float64 {
	b.Helper()
	resp, err := httpClient.Get(url)
	if err != nil {
		c.fatal(b, err)
	}
	defer resp.Body.Close()
	var parser expfmt.TextParser
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		c.fatal(b, fmt.Errorf("the embedded Temporal's metrics: %w", err))
	}
	out := map[requestKey]float64{}
	for name, store := range map[string]string{"persistence_requests_total": "persistence", "visibility_persistence_requests_total": "visibility"} {
		fam := families[name]
		if fam == nil {
			continue
		}
		for _, m := range fam.GetMetric() {
			op := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "operation" {
					op = l.GetValue()
				}
			}
			out[requestKey{store, op}] += m.GetCounter().GetValue()
		}
	}
	return out
}
