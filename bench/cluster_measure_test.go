//go:build linux

package bench

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/longhaul-dev/longhaul/internal/testing/proctest"
)

// What BenchmarkCluster measures of its cluster: each process's CPU time,
// PostgreSQL's with its backends, and PostgreSQL's connections.

// measured is one column of the tables: a child process, PostgreSQL's
// process tree, or an empty worker slot (neither).
type measured struct {
	proc     *proctest.Proc
	postgres int
	pg       bool // PostgreSQL's column, even when postgres is 0
}

func (m measured) empty() bool { return m.proc == nil && m.postgres == 0 }

func (m measured) cpu() (time.Duration, error) {
	switch {
	case m.proc != nil:
		return m.proc.CPU()
	case m.postgres != 0:
		return proctest.TreeCPU(m.postgres)
	}
	return 0, nil
}

// procs are the measured processes, in the tables' order: Temporal,
// PostgreSQL (empty when it is not on this machine), the worker slots
// (empty when not running), the APIs, NATS.
func (cl *cluster) procs() []measured {
	ps := []measured{{proc: cl.temporal}, {postgres: cl.postgres, pg: true}}
	for i := range cl.slots {
		var w measured
		if i < len(cl.workers) {
			w.proc = cl.workers[i]
		}
		ps = append(ps, w)
	}
	for _, p := range cl.apis {
		ps = append(ps, measured{proc: p})
	}
	return append(ps, measured{proc: cl.nats})
}

// cpus is the CPU time each of procs has used so far (0 for an empty
// one).
func (cl *cluster) cpus() []time.Duration {
	cl.b.Helper()
	cl.check()
	var out []time.Duration
	for _, p := range cl.procs() {
		d, err := p.cpu()
		if err != nil {
			cl.fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// settle waits until the cluster as a whole is nearly idle.
func (cl *cluster) settle() {
	proctest.Settle(func() (time.Duration, error) {
		var sum time.Duration
		for _, p := range cl.procs() {
			d, err := p.cpu()
			if err != nil {
				return 0, err
			}
			sum += d
		}
		return sum, nil
	})
}

// connWatch polls pg_stat_activity for the connections to the cluster's
// databases until stopped, and keeps the peak.
type connWatch struct {
	stopc chan struct{}
	done  chan struct{}
	// peak and err are the watch's, read once done is closed.
	peak []int // per database of cl.dbs, at the moment of the highest total
	err  error
}

// watchConnections starts watching, every 250 ms.
func (cl *cluster) watchConnections() *connWatch {
	w := &connWatch{stopc: make(chan struct{}), done: make(chan struct{}), peak: make([]int, len(cl.dbs))}
	go func() {
		defer close(w.done)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		conn, err := pgx.Connect(ctx, cl.adminURL)
		if err != nil {
			w.err = err
			return
		}
		defer conn.Close(ctx)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			counts := make([]int, len(cl.dbs))
			rows, err := conn.Query(ctx, `SELECT datname, count(*) FROM pg_stat_activity WHERE datname = ANY($1) GROUP BY datname`, cl.dbs)
			if err != nil {
				w.err = err
				return
			}
			for rows.Next() {
				var db string
				var n int
				if err := rows.Scan(&db, &n); err == nil {
					counts[slices.Index(cl.dbs, db)] = n
				}
			}
			rows.Close()
			if sum(counts) > sum(w.peak) {
				w.peak = counts
			}
			select {
			case <-w.stopc:
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

// stop ends the watch and returns the peak as "total (temporal +
// visibility + longhaul)".
func (w *connWatch) stop() string {
	close(w.stopc)
	<-w.done
	if w.err != nil {
		return "error: " + w.err.Error()
	}
	return fmt.Sprintf("%d (%d + %d + %d)", sum(w.peak), w.peak[0], w.peak[1], w.peak[2])
}

func sum(xs []int) int {
	s := 0
	for _, x := range xs {
		s += x
	}
	return s
}

// postmaster is the test PostgreSQL's postmaster process when it runs on
// this machine, found as the parent of its checkpointer (a backend
// pg_stat_activity lists with its pid); 0 when it is elsewhere, or it
// cannot be told.
func (cl *cluster) postmaster() int { return postmaster(cl.adminURL) }

// postmaster is the process id of the PostgreSQL server the URL names
// when it runs on this machine (the parent of its checkpointer), or 0.
func postmaster(url string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		return 0
	}
	defer c.Close(context.Background())
	var pid int
	if err := c.QueryRow(ctx, `SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'`).Scan(&pid); err != nil {
		return 0
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0 // not on this machine
	}
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// clusterArrival is one way BenchmarkCluster's streams arrive.
type clusterArrival struct {
	name     string
	interval func(n int) time.Duration
}

// clusterArrivals are LONGHAUL_BENCH_ARRIVALS' (default 100/s, the rate
// of the targets): steady (one every streamLength/n), burst (all
// at once) and 100/s (one every arrivalRate).
func clusterArrivals(b *testing.B) []clusterArrival {
	b.Helper()
	known := map[string]func(int) time.Duration{
		"steady": func(n int) time.Duration { return streamLength / time.Duration(n) },
		"burst":  func(int) time.Duration { return 0 },
		"100/s":  func(int) time.Duration { return arrivalRate },
	}
	var out []clusterArrival
	for name := range strings.SplitSeq(cmp.Or(os.Getenv("LONGHAUL_BENCH_ARRIVALS"), "100/s"), ",") {
		name = strings.TrimSpace(name)
		f, ok := known[name]
		if !ok {
			b.Fatalf("LONGHAUL_BENCH_ARRIVALS: %q is none of steady, burst, 100/s", name)
		}
		out = append(out, clusterArrival{name, f})
	}
	return out
}
