package store_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul/internal/store"
)

// TestCredentials is the credential store's conformance suite: the same cases on
// SQLite and on PostgreSQL.
func TestCredentials(t *testing.T) { conformance(t, credentialCases) }

var credentialCases = []conformanceCase{
	{"credentials per user", testCredentials},
	{"credential delete is single-use", testCredentialSingleUse},
}

// kept returns s as the part of the store T is (store.Credentials,
// store.Webhooks, …), which every backend implements.
func kept[T any](t *testing.T, s store.Store) T {
	t.Helper()
	k, ok := s.(T)
	if !ok {
		var want T
		t.Fatalf("%T is not a %T", s, &want)
	}
	return k
}

func testCredentials(t *testing.T, u string) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := now
	cs := kept[store.Credentials](t, open(t, u, store.WithClock(func() time.Time { return clock })))
	ctx := t.Context()
	put := func(c store.Credential) {
		t.Helper()
		if err := cs.PutCredential(ctx, c); err != nil {
			t.Fatalf("PutCredential: %v", err)
		}
	}
	put(store.Credential{User: "alice", Kind: "oauth", Name: "github", Data: []byte("sealed-1")})
	put(store.Credential{User: "alice", Kind: "secret", Name: "SEERR", Data: []byte("s")})
	put(store.Credential{User: "bob", Kind: "oauth", Name: "github", Data: []byte("bob's")})
	clock = now.Add(time.Minute)
	put(store.Credential{User: "alice", Kind: "oauth", Name: "github", Data: []byte("sealed-2")}) // replaces

	got, err := cs.GetCredential(ctx, "alice", "oauth", "github")
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Data) != "sealed-2" || !got.UpdatedAt.Equal(clock) {
		t.Errorf("GetCredential = %q at %v, want sealed-2 at %v", got.Data, got.UpdatedAt, clock)
	}
	if _, err := cs.GetCredential(ctx, "carol", "oauth", "github"); !errors.Is(err, store.ErrNoCredential) {
		t.Errorf("another user's GetCredential: %v, want ErrNoCredential", err)
	}
	list, err := cs.ListCredentials(ctx, "alice", "oauth")
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Credential{{User: "alice", Kind: "oauth", Name: "github", UpdatedAt: clock}}
	if d := cmp.Diff(want, list); d != "" {
		t.Errorf("ListCredentials (-want +got):\n%s", d)
	}
	if n, err := cs.DeleteCredentialsBefore(ctx, "oauth", now.Add(time.Second)); err != nil || n != 1 {
		t.Errorf("DeleteCredentialsBefore = %d, %v; want bob's one", n, err)
	}
	if n, err := cs.DeleteUserCredentials(ctx, "alice"); err != nil || n != 2 {
		t.Errorf("DeleteUserCredentials = %d, %v; want 2", n, err)
	}
	if list, _ := cs.ListCredentials(ctx, "alice", "secret"); len(list) != 0 {
		t.Errorf("after DeleteUserCredentials: %v", list)
	}
	if err := cs.PutCredential(ctx, store.Credential{User: "x", Kind: "", Name: "n"}); err == nil {
		t.Error("PutCredential without a kind: no error")
	}
}

func testCredentialSingleUse(t *testing.T, u string) {
	cs := kept[store.Credentials](t, open(t, u))
	ctx := t.Context()
	if err := cs.PutCredential(ctx, store.Credential{Kind: "oauth_state", Name: "h"}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for range 8 {
		wg.Go(func() {
			ok, err := cs.DeleteCredential(ctx, "", "oauth_state", "h")
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				won++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if won != 1 {
		t.Errorf("%d deletes reported the state, want exactly 1", won)
	}
}
