package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/memory"
	"github.com/longhaul-dev/longhaul/internal/testing/memorytest"
	"github.com/longhaul-dev/longhaul/internal/testing/pglite"
)

// BenchmarkMemoryRecall measures the search of a recall (the store's part;
// the embedding call before it costs the same at any size) for one user
// with 1k, 10k and 100k memories, on SQLite (exact search in Go) and on
// pgvector's HNSW index (PGlite, as make test-deps installs it), and prints
// p50 / p99 per size. LONGHAUL_BENCH_MEMORIES sets the sizes,
// LONGHAUL_BENCH_MEMORY_DIM the vector length (default 768, that of
// nomic-embed-text), LONGHAUL_BENCH_MEMORY_BACKENDS the backends
// (sqlite,pgvector).
func BenchmarkMemoryRecall(b *testing.B) {
	sizes := intsEnv(b, "LONGHAUL_BENCH_MEMORIES", []int{1000, 10000, 100000})
	dim := 768
	if d := intsEnv(b, "LONGHAUL_BENCH_MEMORY_DIM", nil); len(d) == 1 {
		dim = d[0]
	}
	backends := []string{"sqlite", "pgvector"}
	if v := os.Getenv("LONGHAUL_BENCH_MEMORY_BACKENDS"); v != "" {
		backends = strings.Split(v, ",")
	}
	var rows []string
	for _, be := range backends {
		for _, n := range sizes {
			load, p50, p99, found := recallAt(b, be, n, dim)
			rows = append(rows, fmt.Sprintf("| %s | %d | %d | %s | %s / %s | %d |",
				be, n, dim, load.Round(time.Millisecond), p50.Round(10*time.Microsecond), p99.Round(10*time.Microsecond), found))
		}
	}
	table := "| backend | memories | dim | load | search p50 / p99 | found (k=5, ≥0.6) |\n|---|---|---|---|---|---|\n" + strings.Join(rows, "\n") + "\n"
	fmt.Print("\n" + table)
	if out := os.Getenv("LONGHAUL_BENCH_OUT"); out != "" {
		f, err := os.OpenFile(out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprint(f, "\n"+table)
			f.Close()
		}
	}
}

// recallAt loads n memories of one user (and as many of another, which a
// search must not see) into a fresh store and times searches whose query
// is close (cosine 0.8) to one of them.
func recallAt(b *testing.B, backend string, n, dim int) (load, p50, p99 time.Duration, found int) {
	ctx := context.Background()
	url, serial, stop := benchDatabase(b, backend)
	defer stop()
	var opts []memory.Option
	if serial {
		opts = append(opts, memory.WithMaxConns(1))
	}
	s, err := memory.Open(ctx, url, opts...)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	rng := rand.New(rand.NewPCG(uint64(n), uint64(dim)))
	vecs := make([][]float32, n)
	start := time.Now()
	for _, user := range []string{"bench/user", "bench/other"} {
		const batch = 2000
		for i := 0; i < n; i += batch {
			var ms []memory.Memory
			for j := i; j < min(i+batch, n); j++ {
				v := randomVector(rng, dim)
				if user == "bench/user" {
					vecs[j] = v
				}
				ms = append(ms, memory.Memory{User: user, Text: fmt.Sprintf("fact %d of %s", j, user), Vector: v})
			}
			if err := s.(memory.Importer).Import(ctx, ms); err != nil {
				b.Fatal(err)
			}
		}
	}
	load = time.Since(start)
	samples := 50
	if backend == "sqlite" && n >= 100000 {
		samples = 20
	}
	var times []time.Duration
	for i := range samples {
		q := memorytest.Similar(vecs[(i*7919)%n], 0.8, strconv.Itoa(i))
		t := time.Now()
		got, err := s.Search(ctx, "bench/user", q, 5, 0.6)
		times = append(times, time.Since(t))
		if err != nil {
			b.Fatal(err)
		}
		found += len(got)
	}
	slices.Sort(times)
	return load, times[len(times)/2], times[(len(times)*99)/100], found / samples
}

func randomVector(rng *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

func intsEnv(b *testing.B, name string, def []int) []int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			b.Fatalf("%s: %q is not a list of positive numbers", name, v)
		}
		out = append(out, n)
	}
	return out
}

// benchDatabase returns the URL of a fresh database of the backend for one
// benchmark ("sqlite": a file in b's temporary directory; "pgvector":
// PGlite with pgvector, which stop stops), and whether it serves one
// connection at a time (PGlite: give the store a pool of one).
func benchDatabase(b *testing.B, backend string) (url string, serial bool, stop func()) {
	switch backend {
	case "sqlite":
		return "sqlite://" + filepath.Join(b.TempDir(), "longhaul.db"), false, func() {}
	case "pgvector":
		srv, err := pglite.Start(context.Background())
		if err != nil {
			b.Fatalf("pglite: %v", err)
		}
		return srv.URL, true, func() { srv.Close() }
	}
	b.Fatalf("unknown backend %q", backend)
	return "", false, nil
}
