// Package storetest gives tests empty databases of each store backend:
// a SQLite file in the test's directory, and a schema of its own on the
// test PostgreSQL, LONGHAUL_TEST_POSTGRES_URL. make test sets it to a
// throwaway PostgreSQL (test/postgres/with-postgres.sh); without it the
// PostgreSQL half is skipped, or fails when CI is set. No PostgreSQL the
// machine happens to run is used. Tests of the store and of what uses it
// run against both the same way.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/longhaul-dev/longhaul/internal/redact"
)

// Backend is one database a test runs against.
type Backend struct {
	Name string
	// Ready skips or fails the test when the database cannot be used.
	Ready func(t testing.TB)
	// Fresh returns the URL of an empty database no other test uses
	// (SQLite's and PostgreSQL's are removed when the test ends).
	Fresh func(t testing.TB) string
}

// Backends are SQLite and PostgreSQL, in that order.
var Backends = []Backend{
	{
		Name:  "sqlite",
		Ready: func(testing.TB) {},
		Fresh: func(t testing.TB) string {
			// An absolute path: the URL is sqlite:///tmp/….
			return "sqlite://" + filepath.Join(t.TempDir(), "data", "longhaul.db")
		},
	},
	{Name: "postgres", Ready: Ready, Fresh: postgresFresh},
}

// Each runs f as a subtest of t per backend, named for it, with the URL of
// a fresh database of it.
func Each(t *testing.T, f func(t *testing.T, u string)) {
	for _, be := range Backends {
		t.Run(be.Name, func(t *testing.T) {
			be.Ready(t)
			f(t, be.Fresh(t))
		})
	}
}

// PostgresURL is the test server, LONGHAUL_TEST_POSTGRES_URL, or "" when
// it is not set; its database must exist and allow CREATE SCHEMA.
func PostgresURL() string {
	return os.Getenv("LONGHAUL_TEST_POSTGRES_URL")
}

// errNoURL is why the PostgreSQL tests cannot run without a URL.
var errNoURL = errors.New("LONGHAUL_TEST_POSTGRES_URL is not set (make test sets it to a throwaway PostgreSQL: test/postgres/with-postgres.sh go test ...)")

var postgresPing = sync.OnceValue(func() error {
	if PostgresURL() == "" {
		return errNoURL
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, PostgresURL())
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return conn.Ping(ctx)
})

// Ready fails the test when the test PostgreSQL is not set or
// unreachable and CI is set, and skips it otherwise, so a laptop without
// PostgreSQL still runs the SQLite half.
func Ready(t testing.TB) {
	t.Helper()
	err := postgresPing()
	if err == nil {
		return
	}
	if errors.Is(err, errNoURL) {
		if os.Getenv("CI") != "" {
			t.Fatalf("the PostgreSQL tests cannot run and CI is set: %v", err)
		}
		t.Skipf("skipping PostgreSQL tests: %v; with CI set this fails instead", err)
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("PostgreSQL at %s is unreachable and CI is set, so the PostgreSQL store cannot be tested: %v",
			redact.URLs(PostgresURL()), err)
	}
	t.Skipf("skipping PostgreSQL tests: %s is unreachable (%v); set LONGHAUL_TEST_POSTGRES_URL to a reachable database (with CI set this fails instead)",
		redact.URLs(PostgresURL()), err)
}

// postgresFresh creates a schema lh_test_<random>, drops it when the test
// ends, and returns the test URL with search_path set to it, so parallel
// tests and parallel runs never see each other's tables.
func postgresFresh(t testing.TB) string {
	t.Helper()
	b := make([]byte, 8)
	rand.Read(b)
	schema := "lh_test_" + hex.EncodeToString(b)
	admin := func(sql string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return Exec(ctx, PostgresURL(), sql)
	}
	if err := admin("CREATE SCHEMA " + schema); err != nil {
		t.Fatalf("create schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		if err := admin("DROP SCHEMA IF EXISTS " + schema + " CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(PostgresURL())
	if err != nil {
		t.Fatalf("parse LONGHAUL_TEST_POSTGRES_URL: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// Exec runs statements, in order, on a connection of their own to the
// PostgreSQL database u names.
func Exec(ctx context.Context, u string, statements ...string) error {
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for _, s := range statements {
		if _, err := conn.Exec(ctx, s); err != nil {
			return err
		}
	}
	return nil
}
