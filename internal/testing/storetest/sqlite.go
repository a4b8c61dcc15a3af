package storetest

import (
	"path/filepath"
	"testing"

	"github.com/longhaul-dev/longhaul/internal/store"
)

// SQLiteStore opens an empty store (blobs, conversations, credentials,
// webhooks, …) on a SQLite file in the test's directory, closed when the
// test ends: for the tests of what uses a store rather than of the store.
func SQLiteStore(t testing.TB, opts ...store.Option) store.Store {
	t.Helper()
	st, err := store.Open(t.Context(), "sqlite://"+filepath.Join(t.TempDir(), "store.db"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}
