package store_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/store"
	_ "modernc.org/sqlite" // the database/sql driver testOldSchema makes a file with
)

func TestOpenErrors(t *testing.T) {
	tests := []struct {
		url  string
		want string // in the error
	}{
		{"", "want sqlite:// or postgres://"},
		{"mysql://user:hunter2@db/longhaul", "want sqlite:// or postgres://"},
		{"/var/lib/longhaul.db", "want sqlite:// or postgres://"},
		{"sqlite://", "no file path"},
		{"sqlite://x.db?mode=ro", "query parameters"},
		{"sqlite://:memory:", "plain file path"},
		{"postgres://user:hunter2@localhost:notaport/db", "invalid postgres URL"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			s, err := store.Open(t.Context(), tt.url)
			if err == nil {
				s.Close()
				t.Fatalf("Open(%q) succeeded, want an error", tt.url)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Open(%q) error = %q, want it to contain %q", tt.url, err, tt.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("Open(%q) error %q shows the password", tt.url, err)
			}
		})
	}
}

func TestPostgresUnreachable(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	// Port 1 on loopback: nothing listens, the connection is refused at once.
	s, err := store.Open(ctx, "postgres://user:hunter2@127.0.0.1:1/db?sslmode=disable&connect_timeout=2")
	if err == nil {
		s.Close()
		t.Fatal("Open of an unreachable PostgreSQL succeeded")
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error %q shows the password", err)
	}
}

func TestSQLiteRelativePath(t *testing.T) {
	t.Chdir(t.TempDir())
	s := open(t, "sqlite://nested/dir/longhaul.db")
	put(t, s, store.Blob{Run: "run-1", Kind: "tool_output", Name: "call_1", Data: []byte("x")})
	if _, err := os.Stat(filepath.Join("nested", "dir", "longhaul.db")); err != nil {
		t.Errorf("database file: %v", err)
	}
	// WAL mode leaves a -wal file beside the database while it is open.
	if _, err := os.Stat(filepath.Join("nested", "dir", "longhaul.db-wal")); err != nil {
		t.Errorf("WAL file: %v", err)
	}
}
