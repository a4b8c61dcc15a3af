// Package memorytest gives tests empty databases of each memory backend:
// SQLite and PostgreSQL as internal/store/storetest gives them (the local
// PostgreSQL has no pgvector, so it is the exact-search path), and PGlite
// with pgvector, started once per test binary as a child process (see
// internal/pglite). It also builds vectors of a chosen similarity.
package memorytest

import (
	"context"
	"errors"
	"math"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/pglite"
	"github.com/longhaul-dev/longhaul/internal/testing/storetest"
)

// Backend is one database a test runs against, as storetest's are.
type Backend struct {
	storetest.Backend
	// Serial says the database serves one connection at a time (PGlite):
	// its tests must not run in parallel, and a store on it needs a pool
	// of one (memory.WithMaxConns(1)).
	Serial bool
}

// Backends are SQLite, PostgreSQL (exact search) and PGlite with pgvector.
var Backends = []Backend{
	{Backend: storetest.Backends[0]},
	{Backend: storetest.Backends[1]},
	{Backend: storetest.Backend{Name: "pgvector", Ready: PGliteReady, Fresh: PGliteFresh}, Serial: true},
}

var (
	pgliteOnce   sync.Once
	pgliteServer *pglite.Server
	pgliteErr    error
)

// PGlite starts the shared PGlite server the first time it is asked for,
// with pgvector created in its public schema. Main (the TestMain of the
// package that uses it) stops it.
func PGlite() (*pglite.Server, error) {
	pgliteOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		pgliteServer, pgliteErr = pglite.Start(ctx)
		if pgliteErr != nil {
			return
		}
		pgliteErr = admin(pgliteServer.URL, `CREATE EXTENSION IF NOT EXISTS vector`)
	})
	return pgliteServer, pgliteErr
}

// Main runs a package's tests, stops the shared PGlite server if they
// started one, and exits with the tests' code: a package whose tests use
// PGlite makes it its TestMain.
func Main(m *testing.M) {
	code := m.Run()
	if pgliteServer != nil {
		pgliteServer.Close()
	}
	os.Exit(code)
}

// PGliteReady skips the test when PGlite is not installed, or fails it
// when CI is set; a server that does not start fails it.
func PGliteReady(t testing.TB) {
	t.Helper()
	_, err := PGlite()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "" && errors.Is(err, pglite.ErrUnavailable) {
		t.Skipf("skipping pgvector tests: %v", err)
	}
	t.Fatalf("PGlite with pgvector: %v", err)
}

// PGliteFresh empties the shared PGlite (drops the memories table) and
// returns its URL.
func PGliteFresh(t testing.TB) string { return PGliteWithout(t, "memories") }

// PGliteWithout drops tables from the shared PGlite and returns its URL:
// the Fresh of a store on PGlite whose tables they are. PGlite is one
// session, so a connection's startup parameters (a search_path of its
// own) do not apply: tests on it run one at a time on the public schema,
// and start from an empty one.
func PGliteWithout(t testing.TB, tables ...string) string {
	t.Helper()
	srv, err := PGlite()
	if err != nil {
		t.Fatalf("PGlite: %v", err)
	}
	drops := make([]string, len(tables))
	for i, tb := range tables {
		drops[i] = "DROP TABLE IF EXISTS " + tb + " CASCADE"
	}
	if err := admin(srv.URL, drops...); err != nil {
		t.Fatalf("empty PGlite: %v", err)
	}
	return srv.URL
}

func admin(u string, statements ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return storetest.Exec(ctx, u, statements...)
}

// Vector returns the unit vector llmtest's embeddings endpoint answers for
// text, with dim dimensions.
func Vector(text string, dim int) []float32 { return llmtest.Embed(text, dim) }

// Similar returns a unit vector whose cosine similarity with base is cos,
// leaning towards noise's vector for the rest.
func Similar(base []float32, cos float64, noise string) []float32 {
	u := unit(base)
	w := llmtest.Embed("noise:"+noise, len(base))
	// Gram-Schmidt: the part of w orthogonal to u, made unit.
	var d float64
	for i := range u {
		d += u[i] * float64(w[i])
	}
	o := make([]float64, len(u))
	for i := range u {
		o[i] = float64(w[i]) - d*u[i]
	}
	o = unit64(o)
	s := math.Sqrt(1 - cos*cos)
	out := make([]float32, len(u))
	for i := range u {
		out[i] = float32(cos*u[i] + s*o[i])
	}
	return out
}

func unit(v []float32) []float64 {
	f := make([]float64, len(v))
	for i, x := range v {
		f[i] = float64(x)
	}
	return unit64(f)
}

func unit64(v []float64) []float64 {
	var n float64
	for _, x := range v {
		n += x * x
	}
	n = math.Sqrt(n)
	for i := range v {
		v[i] /= n
	}
	return v
}
