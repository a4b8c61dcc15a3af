package devserver_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/devserver"
	"github.com/longhaul-dev/longhaul/internal/testing/storetest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
)

// freshDatabase names a database on the test PostgreSQL that does not
// exist yet, and drops it and its visibility twin when the test ends.
func freshDatabase(t *testing.T) string {
	t.Helper()
	storetest.Ready(t)
	b := make([]byte, 6)
	rand.Read(b)
	name := "lh_temporal_" + hex.EncodeToString(b)
	u, err := url.Parse(storetest.PostgresURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, db := range []string{name, name + "_visibility"} {
			// WITH (FORCE) ends the pool's idle connections (PostgreSQL 13+).
			if err := storetest.Exec(ctx, storetest.PostgresURL(), "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)"); err != nil {
				t.Errorf("drop database %s: %v", db, err)
			}
		}
	})
	u.Path = "/" + name
	return u.String()
}

// TestPostgresStoreKeepsRunsAcrossRestarts starts the server on a
// PostgreSQL database that does not exist yet (so it creates both
// databases and their schemas), runs a workflow, stops it, starts it
// again on the same database (the schemas are already there: nothing is
// applied twice) and finds the run, its result and the search attribute.
// Nothing goes to the data directory but the log.
func TestPostgresStoreKeepsRunsAcrossRestarts(t *testing.T) {
	dbURL := freshDatabase(t)
	dir, addr := t.TempDir(), testenv.FreeAddr(t)
	s := start(t, devserver.Options{DataDir: dir, DatabaseURL: dbURL, FrontendAddr: addr, Retention: 2 * time.Hour})
	greetThrough(t, addr, "greet-pg")
	s.Stop()
	if _, err := os.Stat(filepath.Join(dir, devserver.DBFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s in the data directory (%v): the PostgreSQL store should keep everything", devserver.DBFile, err)
	}

	s = start(t, devserver.Options{DataDir: dir, DatabaseURL: dbURL, FrontendAddr: addr})
	defer s.Stop()
	// The retention the first start set; visibility answers from the
	// second database.
	stillThere(t, addr, "greet-pg", 2*time.Hour)
}

// TestPostgresStoreBadURL: a URL that is not a PostgreSQL database, or a
// server that is not there, stops the start with a message that says so,
// and never shows the password.
func TestPostgresStoreBadURL(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"mysql://u:secret@127.0.0.1/temporal", "must be postgres://"},
		{"postgres://u:secret@127.0.0.1:1/", "names no database"},
		{"postgres://u:secret@" + testenv.FreeAddr(t) + "/temporal?connect_timeout=5", "database temporal: connect: "},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := devserver.Start(ctx, devserver.Options{
			DataDir: t.TempDir(), DatabaseURL: tc.url, FrontendAddr: testenv.FreeAddr(t), Namespaces: []string{"default"},
		})
		cancel()
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: err = %v, want one saying %q without the password", tc.url, err, tc.want)
		}
	}
}
