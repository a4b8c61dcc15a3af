package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/proctest"
)

// ceilingSpan is how long each level of BenchmarkCeiling sends turns.
const ceilingSpan = 30 * time.Second

// BenchmarkCeiling finds the engine's ceiling in turns a second, not
// streams: at each level of LONGHAUL_BENCH_CLIENTS (default 16, 64),
// that many clients send short, non-streamed turns back to back for 30 s
// through `longhaul dev` (the child process BenchmarkEngine runs, with the
// same settings, so LONGHAUL_EMBEDDED_DATABASE_URL puts its Temporal on
// PostgreSQL), and it prints the turns completed a second, their latency,
// errors, and the child's CPU per turn and peak memory. A turn costs the
// same start, workflow tasks and activity as a streamed one, without the
// streaming: past the level where turns a second stop rising, only
// latency grows.
func BenchmarkCeiling(b *testing.B) {
	model := llmtest.New(b)
	model.SetDefault(llmtest.Text(shortAnswer))
	bin := binary(b)
	lh := startChild(b, bin, model.URL())
	engineURL := lh.url + "/v1/chat/completions"
	store, pg := "SQLite (temporal.db)", 0
	if u := os.Getenv("LONGHAUL_EMBEDDED_DATABASE_URL"); u != "" {
		store, pg = "PostgreSQL (LONGHAUL_EMBEDDED_DATABASE_URL)", postmaster(u)
	}
	// The store's own CPU, when it is a PostgreSQL on this machine: the
	// postmaster and its backends.
	pgCPU := func() time.Duration {
		if pg == 0 {
			return 0
		}
		d, _ := proctest.TreeCPU(pg)
		return d
	}
	t := table{
		title: fmt.Sprintf("short turns back to back for %v, embedded Temporal on %s", ceilingSpan, store),
		head: []string{"clients", "turns", "errors", "turns/s", "latency p50 ms", "latency p99 ms", "CPU s", "CPU ms/turn",
			"PostgreSQL CPU ms/turn", "peak RSS MB"},
	}
	b.ResetTimer()
	for _, n := range positiveList(b, "LONGHAUL_BENCH_CLIENTS", 16, 64) {
		var lat stats
		var errs int
		var wall, pgUsed time.Duration
		cpu, peak := lh.measure(b, func() {
			pg0 := pgCPU()
			// The profile covers the span's first 20 s, so the last
			// turns' tail, when fewer clients are left, stays out of it.
			profiled := lh.profile(b, fmt.Sprint("ceiling-", n), ceilingSpan-10*time.Second)
			lat, errs, wall = backToBack(n, engineURL, fmt.Sprint("ceiling-", n))
			pgUsed = pgCPU() - pg0
			profiled()
		})
		perSec := float64(len(lat)) / wall.Seconds()
		perTurn := func(d time.Duration) string { return fmt.Sprintf("%.0f", msf(d)/float64(max(1, len(lat)))) }
		pgCol := "—"
		if pg != 0 {
			pgCol = perTurn(pgUsed)
		}
		t.rows = append(t.rows, []string{strconv.Itoa(n), strconv.Itoa(len(lat)), strconv.Itoa(errs), fmt.Sprintf("%.1f", perSec),
			ms(lat.pct(.5)), ms(lat.pct(.99)), secs(cpu), perTurn(cpu), pgCol, strconv.FormatInt(peak>>20, 10)})
		b.ReportMetric(perSec, fmt.Sprintf("clients%d-turns/s", n))
		b.ReportMetric(float64(errs), fmt.Sprintf("clients%d-errors", n))
		lh.check(b)
	}
	b.StopTimer()
	head := fmt.Sprintf("%s on %s/%s, %d CPUs; longhaul dev as a child process (%s)\n\n",
		time.Now().Format(time.DateTime), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), bin)
	report(b, head, os.Getenv("LONGHAUL_BENCH_OUT"), t)
}

// backToBack has n clients send short turns to url, each as soon as its
// last one answered, for ceilingSpan, and returns the completed turns'
// latencies, the errors and the time it took (the last turns end after
// the span).
func backToBack(n int, url, prefix string) (lat stats, errs int, wall time.Duration) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(ceilingSpan)
	for c := range n {
		wg.Go(func() {
			for i := 0; time.Now().Before(deadline); i++ {
				d, err := nonStream(context.Background(), url, chatBody("naked", false, fmt.Sprintf("%s-%d-%d", prefix, c, i)))
				mu.Lock()
				if err != nil {
					errs++
				} else {
					lat = append(lat, d)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return lat, errs, time.Since(start)
}
