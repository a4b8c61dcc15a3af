package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"

	"github.com/longhaul-dev/longhaul/internal/metrics"
)

// Sampling rates of the block and mutex profiles while LONGHAUL_PPROF_ADDR
// is set: a blocking event of every 10 µs of waiting on average, and one
// contended mutex in 100 (runtime.SetBlockProfileRate,
// runtime.SetMutexProfileFraction). Both cost a little on every blocking
// event, so they are off unless profiling is.
const (
	blockProfileRate     = 10_000 // ns
	mutexProfileFraction = 100
)

// startPprof serves Go's profiles (net/http/pprof: /debug/pprof/profile,
// block, mutex, heap, goroutine, …) on addr until ctx ends, for an
// operator or `make bench` (LONGHAUL_BENCH_PROFILE) to read. They carry no
// request data but are unauthenticated and cost CPU while taken: the
// address should be a loopback one, and a warning says so when it is not.
// It returns the address bound.
func startPprof(ctx context.Context, addr string, log *slog.Logger) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("LONGHAUL_PPROF_ADDR %s: %w", addr, err)
	}
	if host, _, _ := net.SplitHostPort(ln.Addr().String()); !isLoopback(host) {
		log.Warn("LONGHAUL_PPROF_ADDR is not a loopback address: anyone who reaches it can profile this process", "addr", ln.Addr().String())
	}
	runtime.SetBlockProfileRate(blockProfileRate)
	runtime.SetMutexProfileFraction(mutexProfileFraction)
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	metrics.ServeOn(ctx, ln, mux, "pprof", log)
	return ln.Addr().String(), nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
