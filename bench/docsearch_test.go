package bench

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/docstore"
	"github.com/longhaul-dev/longhaul/internal/testing/memorytest"
)

// BenchmarkDocSearch measures the document store's search (the store's
// part; embedding the query costs the same whatever the store): it loads
// LONGHAUL_BENCH_DOC_CHUNKS chunks (default 3,000 of about 800 tokens,
// ≈ 2,400 pages of 500 tokens at OpenAI's default overlap of 400) with
// vectors of LONGHAUL_BENCH_DOC_DIM dimensions (768) into SQLite and into
// pgvector (PGlite), and prints the load time, vector and hybrid query
// latency p50 / p99, and recall@10 of each store's vector ranking against
// exact search over the same vectors (computed here, in the benchmark).
// Then it measures SQLite's exact-search ceiling: vector query latency at
// LONGHAUL_BENCH_DOC_CEILING chunks (default 10000,100000; short texts).
func BenchmarkDocSearch(b *testing.B) {
	n := 3000
	if v := intsEnv(b, "LONGHAUL_BENCH_DOC_CHUNKS", nil); len(v) == 1 {
		n = v[0]
	}
	dim := 768
	if v := intsEnv(b, "LONGHAUL_BENCH_DOC_DIM", nil); len(v) == 1 {
		dim = v[0]
	}
	backends := []string{"sqlite", "pgvector"}
	if v := os.Getenv("LONGHAUL_BENCH_DOC_BACKENDS"); v != "" {
		backends = strings.Split(v, ",")
	}
	ceiling := []int{10000, 100000}
	if v := os.Getenv("LONGHAUL_BENCH_DOC_CEILING"); v == "0" {
		ceiling = nil
	} else if v != "" {
		ceiling = intsEnv(b, "LONGHAUL_BENCH_DOC_CEILING", nil)
	}
	corpus := newCorpus(n, dim, true)
	var out strings.Builder
	fmt.Fprintf(&out, "\n| backend | chunks | dim | load | vector p50 / p99 | hybrid p50 / p99 | recall@10 vs exact |\n|---|---|---|---|---|---|---|\n")
	for _, be := range backends {
		r := docSearchAt(b, be, corpus, 100)
		fmt.Fprintf(&out, "| %s | %d | %d | %s | %s / %s | %s / %s | %.3f |\n", r.backend, n, dim, r.load.Round(time.Millisecond),
			r.vector[0], r.vector[1], r.hybrid[0], r.hybrid[1], r.recall)
	}
	if len(ceiling) > 0 {
		fmt.Fprintf(&out, "\n| exact search (sqlite) | dim | load | vector p50 / p99 |\n|---|---|---|---|\n")
		for _, size := range ceiling {
			r := docSearchAt(b, "sqlite", newCorpus(size, dim, false), 20)
			fmt.Fprintf(&out, "| %d chunks | %d | %s | %s / %s |\n", size, dim, r.load.Round(time.Millisecond), r.vector[0], r.vector[1])
		}
	}
	fmt.Print(out.String())
	if path := os.Getenv("LONGHAUL_BENCH_OUT"); path != "" {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprint(f, out.String())
			f.Close()
		}
	}
}

// corpus is the generated documents: files of chunksPerFile chunks, each
// a text and a vector. Vectors lean towards one of a few topics (as
// embeddings of real text cluster), each chunk's text draws from a
// vocabulary with Zipf-like frequencies.
type corpus struct {
	dim     int
	texts   []string
	vectors [][]float32
}

const chunksPerFile = 100

func newCorpus(n, dim int, long bool) *corpus {
	rng := rand.New(rand.NewPCG(uint64(n), uint64(dim)))
	const topics = 40
	centers := make([][]float32, topics)
	for i := range centers {
		centers[i] = gaussian(rng, dim, 1)
	}
	vocab := make([]string, 20000)
	for i := range vocab {
		vocab[i] = word(rng)
	}
	zipf := rand.NewZipf(rand.New(rand.NewPCG(uint64(n), 7)), 1.1, 1, uint64(len(vocab)-1))
	c := &corpus{dim: dim, texts: make([]string, n), vectors: make([][]float32, n)}
	var sb strings.Builder
	for i := range n {
		v := gaussian(rng, dim, 0.8)
		center := centers[rng.IntN(topics)]
		for j := range v {
			v[j] += center[j]
		}
		c.vectors[i] = v
		sb.Reset()
		if long {
			// ~600 words, about 800 tokens.
			for w := range 600 {
				if w > 0 {
					sb.WriteByte(' ')
				}
				sb.WriteString(vocab[zipf.Uint64()])
			}
		} else {
			fmt.Fprintf(&sb, "chunk %d %s %s", i, vocab[zipf.Uint64()], vocab[zipf.Uint64()])
		}
		c.texts[i] = sb.String()
	}
	return c
}

func gaussian(rng *rand.Rand, dim int, scale float64) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(rng.NormFloat64() * scale)
	}
	return v
}

func word(rng *rand.Rand) string {
	const letters = "abcdefghijklmnopqrstuvwxyz"
	b := make([]byte, 3+rng.IntN(7))
	for i := range b {
		b[i] = letters[rng.IntN(len(letters))]
	}
	return string(b)
}

type docResult struct {
	backend        string
	load           time.Duration
	vector, hybrid [2]time.Duration
	recall         float64
}

// docSearchAt loads c into a fresh store of the backend and times
// samples vector and hybrid searches (queries near a chunk's vector, with
// three of its words); recall@10 compares each vector search's chunks with
// the exact top 10.
func docSearchAt(b *testing.B, backend string, c *corpus, samples int) docResult {
	ctx := context.Background()
	url, serial, stop := benchDatabase(b, backend)
	defer stop()
	var opts []docstore.Option
	if serial {
		opts = append(opts, docstore.WithMaxConns(1))
	}
	s, err := docstore.Open(ctx, url, opts...)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const owner = "bench/user"
	start := time.Now()
	vs, err := s.CreateVectorStore(ctx, docstore.VectorStore{Owner: owner, Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	type ref struct {
		file  string
		index int
	}
	refs := make([]ref, len(c.texts))
	for i := 0; i < len(c.texts); i += chunksPerFile {
		f, err := s.PutFile(ctx, docstore.File{Owner: owner, Filename: fmt.Sprintf("doc%05d.txt", i/chunksPerFile), Purpose: "assistants"}, bytes.NewReader(nil))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.AttachFile(ctx, docstore.VectorStoreFile{Owner: owner, VectorStoreID: vs.ID, FileID: f.ID}); err != nil {
			b.Fatal(err)
		}
		var chunks []docstore.Chunk
		for j := i; j < min(i+chunksPerFile, len(c.texts)); j++ {
			chunks = append(chunks, docstore.Chunk{VectorStoreID: vs.ID, FileID: f.ID, Index: j - i, Text: c.texts[j], Tokens: 800, Vector: c.vectors[j]})
			refs[j] = ref{f.ID, j - i}
		}
		if err := s.PutChunks(ctx, owner, chunks); err != nil {
			b.Fatal(err)
		}
		if err := s.SetStatus(ctx, owner, vs.ID, f.ID, docstore.StatusCompleted, nil); err != nil {
			b.Fatal(err)
		}
	}
	res := docResult{backend: s.Backend(), load: time.Since(start)}
	unit := make([][]float32, len(c.vectors))
	for i, v := range c.vectors {
		unit[i] = unitVector(v)
	}
	var vtimes, htimes []time.Duration
	var recall float64
	for i := range samples {
		target := (i * 7919) % len(c.texts)
		qv := memorytest.Similar(c.vectors[target], 0.8, strconv.Itoa(i))
		words := strings.Fields(c.texts[target])
		text := strings.Join(words[len(words)-3:], " ")
		t := time.Now()
		hits, err := s.Search(ctx, docstore.Query{Owner: owner, VectorStoreIDs: []string{vs.ID}, Vector: qv, Mode: "vector", K: 10})
		vtimes = append(vtimes, time.Since(t))
		if err != nil {
			b.Fatal(err)
		}
		// The exact top 10 by cosine, over the same vectors.
		q := unitVector(qv)
		order := make([]int, len(unit))
		scores := make([]float64, len(unit))
		for j, v := range unit {
			order[j] = j
			for d := range q {
				scores[j] += float64(q[d]) * float64(v[d])
			}
		}
		slices.SortFunc(order, func(a, b int) int { return cmp.Compare(scores[b], scores[a]) })
		exact := map[ref]bool{}
		for _, j := range order[:min(10, len(order))] {
			exact[refs[j]] = true
		}
		got := 0
		for _, h := range hits {
			if exact[ref{h.FileID, h.Index}] {
				got++
			}
		}
		recall += float64(got) / float64(len(exact))
		if len(c.texts[target]) > 100 {
			t = time.Now()
			if _, err := s.Search(ctx, docstore.Query{Owner: owner, VectorStoreIDs: []string{vs.ID}, Text: text, Vector: qv, K: 10}); err != nil {
				b.Fatal(err)
			}
			htimes = append(htimes, time.Since(t))
		}
	}
	res.vector = percentiles(vtimes)
	res.hybrid = percentiles(htimes)
	res.recall = recall / float64(samples)
	return res
}

func unitVector(v []float32) []float32 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	n = math.Sqrt(n)
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(float64(x) / n)
	}
	return out
}

// percentiles returns p50 and p99, rounded for a table.
func percentiles(ts []time.Duration) [2]time.Duration {
	if len(ts) == 0 {
		return [2]time.Duration{}
	}
	slices.Sort(ts)
	r := func(d time.Duration) time.Duration {
		if d > 10*time.Millisecond {
			return d.Round(time.Millisecond)
		}
		return d.Round(10 * time.Microsecond)
	}
	return [2]time.Duration{r(ts[len(ts)/2]), r(ts[(len(ts)*99)/100])}
}
