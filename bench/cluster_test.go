//go:build linux

package bench

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/longhaul-dev/longhaul/internal/testing/composetest"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/proctest"
	"github.com/longhaul-dev/longhaul/internal/testing/storetest"
)

// clusterAPIs is how many `longhaul api` processes the cluster runs; the
// clients spread their streams over them.
const clusterAPIs = 2

// BenchmarkCluster runs the concurrent streams of BenchmarkEngine against
// the scaled-out shape instead of `longhaul dev`: temporal-server on
// PostgreSQL, Debian's nats-server, `longhaul setup`, one, two and then
// four `longhaul worker`s and two `longhaul api`s, each a child process,
// and prints per configuration and level the turns per second, TTFT, the
// CPU time per turn and the peak memory of every process (see the package
// comment). It runs
// only when LONGHAUL_BENCH_CLUSTER is set (make bench-cluster sets it):
// building Temporal and running the cluster take minutes make bench need
// not spend.
func BenchmarkCluster(b *testing.B) {
	if on, _ := strconv.ParseBool(os.Getenv("LONGHAUL_BENCH_CLUSTER")); !on {
		b.Skip("LONGHAUL_BENCH_CLUSTER=1 runs the cluster benchmark (make bench-cluster)")
	}
	pg := storetest.PostgresURL()
	if pg == "" {
		b.Fatal("LONGHAUL_TEST_POSTGRES_URL is not set: make bench-cluster runs the benchmark under test/postgres/with-postgres.sh, a throwaway PostgreSQL")
	}
	set := loadSettings(b, 100, 500, 1000)
	workerCounts := positiveList(b, "LONGHAUL_BENCH_WORKERS", 1, 2, 4)
	modes := clusterArrivals(b)
	model := llmtest.New(b)
	model.On(llmtest.LastUserContains(streamPrompt(streamLength)), llmtest.Text(streamAnswer(streamLength), llmtest.ChunkDelay(tokenDelay)))
	model.SetDefault(llmtest.Text(shortAnswer))
	// The builds first (a cold one takes minutes), then the cluster.
	bin := binary(b)
	bindir, schema := proctest.TemporalBinaries(b)
	load0 := loadAverage()
	cl := startCluster(b, bin, bindir, schema, pg, model.URL())
	cl.slots = slices.Max(workerCounts)
	b.ResetTimer()

	run := 0
	var rows, rest, mem [][]string
	for _, workers := range workerCounts {
		for len(cl.workers) < workers {
			cl.startWorker()
		}
		rest = append(rest, cl.atRest(workers))
		for _, n := range set.levels {
			for _, mode := range modes {
				run++
				row, peaks := cl.level(fmt.Sprintf("c%d-%d", run, workers), workers, n, mode.name, mode.interval(n))
				rows, mem = append(rows, row), append(mem, peaks)
			}
		}
	}
	b.StopTimer()

	procs := []string{"Temporal", "PostgreSQL"}
	for i := range cl.slots {
		procs = append(procs, fmt.Sprintf("worker %d", i+1))
	}
	for i := range clusterAPIs {
		procs = append(procs, fmt.Sprintf("API %d", i+1))
	}
	procs = append(procs, "NATS")
	var out strings.Builder // the report's head
	fmt.Fprintf(&out, "%s on %s/%s, %d CPUs, bench built with %s; load average %s at the start, %s at the end (other work shares the machine; the benchmark process runs the model and the clients)\n\n",
		time.Now().Format(time.DateTime), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), load0, loadAverage())
	fmt.Fprintf(&out, "temporal-server %s on PostgreSQL (%s), %s history shards, persistence maxConns %s (visibility %s); nats-server %s; %s as worker and api processes, %d APIs\n\n",
		cl.temporalVersion, cl.pgVersion, cl.shards, cl.maxConns, cl.visMaxConns, cl.natsVersion, bin, clusterAPIs)
	tables := []table{
		{
			title: "the cluster at rest: CPU ms per second of each process, PostgreSQL connections",
			head:  append(append([]string{"workers"}, procs...), "PG connections (temporal + visibility + longhaul)"),
			rows:  rest,
		},
		{
			title: fmt.Sprintf("concurrent streaming chats through the cluster, 20 tok/s for %v each, spread over %d APIs; steady: one every %v/N; 100/s: one every %v; CPU ms per completed turn of each process", streamLength, clusterAPIs, streamLength, arrivalRate),
			head: append(append([]string{"workers", "streams", "arrival", "ok", "errors", "turns/s", "TTFT p50 ms", "TTFT p99 ms", "duration p99 s"},
				procs...), "CPU ms/turn, all", "PG connections, peak (temporal + visibility + longhaul)"),
			rows: rows,
		},
		{
			title: "peak resident memory of each process over each level, MB (PostgreSQL's is its settings': shared_buffers and work_mem per connection)",
			head:  append([]string{"workers", "streams", "arrival"}, slices.DeleteFunc(slices.Clone(procs), func(p string) bool { return p == "PostgreSQL" })...),
			rows:  mem,
		},
	}
	report(b, out.String(), set.out, tables...)
}

// cluster is the scaled-out deployment under measurement, each program a
// child process (internal/testing/proctest): Temporal, NATS, workers and
// APIs.
type cluster struct {
	b        *testing.B
	bin      string
	logs     string
	env      []string // every longhaul process's
	adminURL string   // the test PostgreSQL, to watch pg_stat_activity
	dbs      []string // Temporal's, its visibility's and Longhaul's database

	temporal, nats *proctest.Proc
	workers        []*proctest.Proc
	// slots is the most workers the benchmark runs: the tables' columns.
	slots int
	// postgres is the test PostgreSQL's postmaster when it runs on this
	// machine (0 otherwise): its CPU, and its backends', is measured too.
	postgres int
	apis     []*proctest.Proc
	apiURLs  []string

	temporalVersion, pgVersion, natsVersion string
	shards, maxConns, visMaxConns           string
}

// startCluster starts the cluster on the test PostgreSQL at pgURL, with one
// worker: Temporal's databases set up with temporal-sql-tool as the
// temporal-schema service of docker-compose.yml does, temporal-server with
// the temporal service's environment (its history shards, its dynamic
// config), the namespace, NATS, `longhaul setup`, a worker and the APIs.
// Its databases have names of their own, dropped when the benchmark ends.
func startCluster(b *testing.B, bin, bindir, schema, pgURL, modelURL string) *cluster {
	b.Helper()
	pg, err := url.Parse(pgURL)
	if err != nil {
		b.Fatal(err)
	}
	keep, _ := strconv.ParseBool(os.Getenv("LONGHAUL_BENCH_KEEP"))
	logs, err := os.MkdirTemp("", "longhaul-bench-cluster-")
	if err != nil {
		b.Fatal(err)
	}
	cl := &cluster{b: b, bin: bin, logs: logs, adminURL: pgURL}
	b.Cleanup(func() {
		if b.Failed() || keep {
			b.Logf("kept the logs of the cluster's processes: %s", logs)
			return
		}
		os.RemoveAll(logs)
	})
	if m := regexp.MustCompile(`@(v[^/]+)`).FindStringSubmatch(schema); m != nil {
		cl.temporalVersion = m[1]
	} else if out, err := exec.Command(filepath.Join(bindir, "temporal-server"), "--version").Output(); err == nil {
		cl.temporalVersion = strings.TrimSpace(string(out))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// The databases, dropped (after the processes, which cleanups kill
	// first) when the benchmark ends.
	suffix := make([]byte, 4)
	rand.Read(suffix)
	prefix := "lhbench_" + hex.EncodeToString(suffix)
	cl.dbs = []string{prefix + "_temporal", prefix + "_visibility", prefix + "_longhaul"}
	b.Cleanup(func() {
		for _, db := range cl.dbs {
			if err := cl.admin("DROP DATABASE IF EXISTS " + pgx.Identifier{db}.Sanitize() + " WITH (FORCE)"); err != nil {
				b.Errorf("drop database %s: %v", db, err)
			}
		}
	})
	if err := cl.admin("CREATE DATABASE " + pgx.Identifier{cl.dbs[2]}.Sanitize()); err != nil {
		b.Fatal(err)
	}
	if err := cl.adminQuery(func(c *pgx.Conn) error {
		return c.QueryRow(ctx, "SHOW server_version").Scan(&cl.pgVersion)
	}); err != nil {
		b.Fatal(err)
	}
	cl.postgres = cl.postmaster()
	user := pg.User.Username()
	password, _ := pg.User.Password()

	// temporal-schema's script (docker-compose.yml), on the benchmark's
	// databases: temporal-sql-tool reads its connection from SQL_*
	// (tools/sql/main.go).
	sqlEnv := []string{"PATH=/usr/bin:/bin", "HOME=" + b.TempDir(), "SQL_PLUGIN=postgres12", "SQL_HOST=" + pg.Hostname(), "SQL_PORT=" + pg.Port(),
		"SQL_USER=" + user, "SQL_PASSWORD=" + password}
	for _, s := range []struct{ db, dir string }{{cl.dbs[0], "temporal"}, {cl.dbs[1], "visibility"}} {
		for _, args := range [][]string{
			{"--db", s.db, "create"},
			{"--db", s.db, "setup-schema", "-v", "0.0"},
			{"--db", s.db, "update-schema", "-d", filepath.Join(schema, "postgresql", "v12", s.dir, "versioned")},
		} {
			p := proctest.Start(b, "temporal-sql-tool", filepath.Join(bindir, "temporal-sql-tool"), cl.log("temporal-schema"), sqlEnv, args...)
			if err := p.Wait(ctx); err != nil {
				cl.fatal(fmt.Errorf("temporal-sql-tool %s: %w", strings.Join(args, " "), err))
			}
		}
	}

	// temporal: the temporal service's environment, as test/stack gives it
	// to temporal-server, with the benchmark's database, names and
	// addresses. The server renders its embedded template from it
	// (common/config/config_template_embedded.yaml at v1.32.1: DBNAME and
	// VISIBILITY_DBNAME name the databases, lines 106 and 132; maxConns is
	// SQL_MAX_CONNS, default 20, and SQL_VIS_MAX_CONNS, default 10).
	svc := composetest.Service(b, composetest.Load(b, composetest.UserEnv(b)), "temporal")
	env := composetest.Env(svc)
	env["POSTGRES_SEEDS"], env["DB_PORT"], env["POSTGRES_USER"], env["POSTGRES_PWD"] = pg.Hostname(), pg.Port(), user, password
	env["DBNAME"], env["VISIBILITY_DBNAME"] = cl.dbs[0], cl.dbs[1]
	env["BIND_ON_IP"] = "127.0.0.1"
	if dc, ok := composetest.HostPath(svc, env["DYNAMIC_CONFIG_FILE_PATH"]); ok {
		env["DYNAMIC_CONFIG_FILE_PATH"] = dc
	} else {
		b.Fatalf("the temporal service's dynamic config %q is not on a bind mount", env["DYNAMIC_CONFIG_FILE_PATH"])
	}
	for _, k := range []string{
		"FRONTEND_GRPC_PORT", "FRONTEND_HTTP_PORT", "FRONTEND_MEMBERSHIP_PORT", "INTERNAL_FRONTEND_HTTP_PORT",
		"INTERNAL_FRONTEND_GRPC_PORT", "INTERNAL_FRONTEND_MEMBERSHIP_PORT",
		"HISTORY_GRPC_PORT", "HISTORY_MEMBERSHIP_PORT", "MATCHING_GRPC_PORT", "MATCHING_MEMBERSHIP_PORT",
		"WORKER_GRPC_PORT", "WORKER_MEMBERSHIP_PORT",
	} {
		_, port, _ := net.SplitHostPort(freeAddr(b))
		env[k] = port
	}
	cl.shards = cmp.Or(env["NUM_HISTORY_SHARDS"], "4 (the template's default)")
	cl.maxConns = cmp.Or(env["SQL_MAX_CONNS"], "20")
	cl.visMaxConns = cmp.Or(env["SQL_VIS_MAX_CONNS"], "10")
	frontend := "127.0.0.1:" + env["FRONTEND_GRPC_PORT"]
	tenv := []string{"PATH=/usr/bin:/bin", "HOME=" + b.TempDir()}
	for k, v := range env {
		tenv = append(tenv, k+"="+v)
	}
	cl.temporal = proctest.StartIn(b, b.TempDir(), "temporal", filepath.Join(bindir, "temporal-server"), cl.log("temporal"), tenv, "start")
	if err := proctest.CreateNamespace(ctx, frontend, "default", 24*time.Hour); err != nil {
		cl.fatal(err)
	}

	natsAddr, natsMon := freeAddr(b), freeAddr(b)
	natsBin := proctest.NATSBinary(b)
	if out, err := exec.Command(natsBin, "--version").Output(); err == nil {
		cl.natsVersion = strings.TrimSpace(strings.TrimPrefix(string(out), "nats-server: "))
	}
	if cl.nats, err = proctest.StartNATS(b, natsBin, cl.log("nats"), []string{"PATH=/usr/bin:/bin"}, natsAddr, natsMon); err != nil {
		b.Fatal(err)
	}
	if err := cl.nats.WaitReady(ctx); err != nil {
		cl.fatal(err)
	}

	storeURL := *pg
	storeURL.Path = "/" + cl.dbs[2]
	// exec keeps the last of duplicate variables: the benchmark's own
	// settings win over the inherited ones.
	cl.env = append(os.Environ(),
		"LONGHAUL_DATA_DIR="+b.TempDir(),
		"LONGHAUL_TEMPORAL_ADDRESS="+frontend,
		"LONGHAUL_TEMPORAL_NAMESPACE=default",
		"LONGHAUL_NATS_URL=nats://"+natsAddr,
		"LONGHAUL_DATABASE_URL="+storeURL.String(),
		"LONGHAUL_LLM_BASE_URL="+modelURL,
		"LONGHAUL_LLM_MODEL=llmtest",
		// The scripted model has no window (the tests of windows set one).
		"LONGHAUL_LLM_CONTEXT=llmtest=16777216",
		"LONGHAUL_API_KEYS=",
		"LONGHAUL_LOG_LEVEL=warn",
		"LONGHAUL_METRICS_ADDR=off",
		// One anonymous principal makes every request (see startChild).
		"LONGHAUL_MAX_RUNS=0",
		"LONGHAUL_MAX_STREAMS=0",
	)
	setup := proctest.Start(b, "setup", bin, cl.log("setup"), cl.env, "setup")
	if err := setup.Wait(ctx); err != nil {
		cl.fatal(fmt.Errorf("longhaul setup: %w", err))
	}
	cl.startWorker()
	for i := range clusterAPIs {
		name := fmt.Sprintf("api-%d", i+1)
		p, addr, err := proctest.ServeAPI(ctx, b, name, bin, cl.log(name), cl.env, "", func() string { return freeAddr(b) })
		cl.apis = append(cl.apis, p)
		cl.apiURLs = append(cl.apiURLs, "http://"+addr+"/v1/chat/completions")
		if err != nil {
			cl.fatal(err)
		}
	}
	return cl
}

// startWorker starts one more `longhaul worker` and waits until it says it
// runs.
func (cl *cluster) startWorker() {
	cl.b.Helper()
	name := fmt.Sprintf("worker-%d", len(cl.workers)+1)
	p := proctest.StartWorker(cl.b, name, cl.bin, cl.log(name), cl.env)
	cl.workers = append(cl.workers, p)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := p.WaitReady(ctx); err != nil {
		cl.fatal(err)
	}
}

// atRest is a row of the at-rest table: each process's CPU use over 5 s
// with nothing to do, and the PostgreSQL connections open meanwhile.
func (cl *cluster) atRest(workers int) []string {
	cl.settle()
	w := cl.watchConnections()
	c0 := cl.cpus()
	time.Sleep(5 * time.Second)
	c1 := cl.cpus()
	row := []string{strconv.Itoa(workers)}
	for i, p := range cl.procs() {
		if p.empty() {
			row = append(row, "—")
			continue
		}
		row = append(row, fmt.Sprintf("%.0f", msf(c1[i]-c0[i])/5))
	}
	return append(row, w.stop())
}

// level runs one level of concurrent streams spread over the APIs and
// returns its row.
func (cl *cluster) level(prefix string, workers, n int, mode string, interval time.Duration) (row, peaks []string) {
	cl.b.Helper()
	cl.settle()
	w := cl.watchConnections()
	for _, p := range cl.procs() {
		if p.proc != nil {
			if err := proctest.ResetPeak(p.proc.Cmd.Process.Pid); err != nil {
				cl.fatal(err)
			}
		}
	}
	c0 := cl.cpus()
	start := time.Now()
	r := streams(cl.apiURLs, prefix, n, interval)
	wall := time.Since(start)
	c1 := cl.cpus()
	conns := w.stop()
	peaks = []string{strconv.Itoa(workers), strconv.Itoa(n), mode}
	for _, p := range cl.procs() {
		switch {
		case p.pg:
			// Its memory is its settings', and shared between its
			// processes: the title says so.
		case p.proc == nil:
			peaks = append(peaks, "—")
		default:
			rss, err := proctest.PeakRSS(p.proc.Cmd.Process.Pid)
			if err != nil {
				cl.fatal(err)
			}
			peaks = append(peaks, strconv.FormatInt(rss>>20, 10))
		}
	}
	fmt.Fprintf(os.Stderr, "bench: %d workers, %d %s streams: %d ok, %d errors in %.1f s\n", workers, n, mode, len(r.ttft), r.errors, wall.Seconds())
	if r.errors > 0 {
		cl.b.Logf("%d workers, %d %s streams: %d errors: %s", workers, n, mode, r.errors, r.summary())
	}
	ok := len(r.ttft)
	row = []string{strconv.Itoa(workers), strconv.Itoa(n), mode, strconv.Itoa(ok), strconv.Itoa(r.errors),
		fmt.Sprintf("%.1f", float64(ok)/wall.Seconds()), ms(r.ttft.pct(.5)), ms(r.ttft.pct(.99)), secs(r.total.pct(.99))}
	var all time.Duration
	for i, p := range cl.procs() {
		if p.empty() {
			row = append(row, "—")
			continue
		}
		all += c1[i] - c0[i]
		row = append(row, perTurn(c1[i]-c0[i], ok))
	}
	row = append(row, perTurn(all, ok), conns)
	key := fmt.Sprintf("w%d-%s%d-", workers, strings.ReplaceAll(mode, "/", ""), n)
	cl.b.ReportMetric(float64(r.errors), key+"errors")
	cl.b.ReportMetric(msf(r.ttft.pct(.99)), key+"ttft-p99-ms")
	cl.b.ReportMetric(float64(ok)/wall.Seconds(), key+"turns/s")
	if ok > 0 {
		cl.b.ReportMetric(msf(all)/float64(ok), key+"cpu-ms/turn")
	}
	return row, peaks
}

// perTurn is d per turn of ok, in milliseconds.
func perTurn(d time.Duration, ok int) string {
	if ok == 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f", msf(d)/float64(ok))
}

// log is the path of a process's log.
func (cl *cluster) log(name string) string { return filepath.Join(cl.logs, name+".log") }

// check fails the benchmark when a process has exited by itself.
func (cl *cluster) check() {
	cl.b.Helper()
	var ps []*proctest.Proc
	for _, p := range cl.procs() {
		if p.proc != nil {
			ps = append(ps, p.proc)
		}
	}
	if err := proctest.ExitedByThemselves(ps...); err != nil {
		cl.fatal(err)
	}
}

// fatal fails the benchmark with err and the end of every process's log.
func (cl *cluster) fatal(err error) {
	cl.b.Helper()
	cl.b.Fatalf("%v%s", err, proctest.TailAll(cl.logs, 30))
}

// admin runs one statement on the test PostgreSQL.
func (cl *cluster) admin(sql string) error {
	return cl.adminQuery(func(c *pgx.Conn) error {
		_, err := c.Exec(context.Background(), sql)
		return err
	})
}

func (cl *cluster) adminQuery(f func(*pgx.Conn) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, cl.adminURL)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	return f(c)
}

// loadAverage is the machine's 1, 5 and 15 minute load averages.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " / ")
}
