package memory_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul/internal/memory"
	"github.com/longhaul-dev/longhaul/internal/testing/memorytest"
)

// hashEmbedder embeds each text as memorytest.Vector does: the same text
// always the same vector, different texts unrelated ones.
type hashEmbedder struct{}

var _ memory.Embedder = hashEmbedder{}

func (hashEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = vec(t)
	}
	return out, nil
}

// TestMaxPerUser holds a user to Max memories on each backend: a save
// beyond it evicts the least recently saved or updated one, a restated
// fact counts as updated when it is restated, and another user's
// memories are not touched.
func TestMaxPerUser(t *testing.T) {
	for _, be := range memorytest.Backends {
		t.Run(be.Name, func(t *testing.T) {
			be.Ready(t)
			// Each save a second after the one before, so "least recently"
			// never ties.
			var tick atomic.Int64
			base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			opts := []memory.Option{memory.WithClock(func() time.Time { return base.Add(time.Duration(tick.Add(1)) * time.Second) })}
			if be.Serial {
				opts = append(opts, memory.WithMaxConns(1))
			}
			s, err := memory.Open(t.Context(), be.Fresh(t), opts...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			svc := &memory.Service{Store: s, Embedder: hashEmbedder{}, Max: 3}
			remember := func(user string, texts ...string) {
				t.Helper()
				if _, err := svc.Remember(t.Context(), user, "c1", "run-1", texts); err != nil {
					t.Fatalf("Remember(%s, %q): %v", user, texts, err)
				}
			}
			list := func(user string) []string {
				t.Helper()
				ms, _, err := s.List(t.Context(), user, memory.Page{Limit: 100})
				if err != nil {
					t.Fatal(err)
				}
				return texts(ms)
			}

			remember("bob", "Bob keeps bees.", "Bob rows on Sundays.")
			remember("alice", "Alice lives in Lyon.", "Alice is vegetarian.", "Alice plays the cello.")
			if diff := cmp.Diff([]string{"Alice plays the cello.", "Alice is vegetarian.", "Alice lives in Lyon."}, list("alice")); diff != "" {
				t.Fatalf("at the cap (-want +got):\n%s", diff)
			}
			// Restated, the oldest becomes the most recent; the next new
			// fact then evicts the one saved second.
			remember("alice", "Alice lives in Lyon.")
			remember("alice", "Alice has a cat named Pim.")
			if diff := cmp.Diff([]string{"Alice has a cat named Pim.", "Alice lives in Lyon.", "Alice plays the cello."}, list("alice")); diff != "" {
				t.Errorf("after eviction (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"Bob rows on Sundays.", "Bob keeps bees."}, list("bob")); diff != "" {
				t.Errorf("bob's memories (-want +got):\n%s", diff)
			}
			if n, err := s.Trim(t.Context(), "alice", 0); err != nil || n != 0 {
				t.Errorf("Trim(alice, 0) = %d, %v; want nothing deleted", n, err)
			}
		})
	}
}
