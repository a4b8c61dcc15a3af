package usercreds

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/internal/testing/storetest"
	"golang.org/x/oauth2"
)

// TestRefreshRotationAndRefusal: two calls of one user refreshing at once
// both succeed under refresh-token rotation (the second takes the tokens the
// first stored), and a refresh the authorization server refuses forgets the
// tokens: the user is not connected any more.
func TestRefreshRotationAndRefusal(t *testing.T) {
	var mu sync.Mutex
	valid := map[string]bool{"r1": true}
	n := 0
	tokenURL := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		rt := r.PostForm.Get("refresh_token")
		if !valid[rt] {
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant"})
			return
		}
		delete(valid, rt)
		n++
		next := "r" + strings.Repeat("x", n)
		valid[next] = true
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "a" + next, "refresh_token": next, "expires_in": 30, "token_type": "Bearer"})
	}))
	t.Cleanup(tokenURL.Close)
	st := storetest.SQLiteStore(t)
	box, _ := NewBox(strings.Repeat("ab", KeySize))
	s := &Service{Store: st.(store.Credentials), Box: box, PublicURL: "http://x", Servers: map[string]Server{"srv": {URL: "http://x/mcp"}}}
	c := client{ClientID: "c", TokenURL: tokenURL.URL, AuthStyle: oauth2.AuthStyleInParams}
	if err := s.put(t.Context(), "u", kindOAuth, "srv", connection{Token: &oauth2.Token{AccessToken: "a0", RefreshToken: "r1", Expiry: time.Now().Add(30 * time.Second)}, Client: c}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 2 {
		ts, err := s.TokenSource(t.Context(), "u", "srv")
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			if tok, err := ts.Token(); err != nil || tok.AccessToken == "a0" {
				t.Errorf("concurrent refresh: %v, %v", tok, err)
			}
		})
	}
	wg.Wait()
	if _, err := s.TokenSource(t.Context(), "u", "srv"); err != nil {
		t.Fatalf("after concurrent refreshes the user is not connected: %v", err)
	}
	mu.Lock()
	clear(valid) // the grant is revoked at the server
	mu.Unlock()
	ts, _ := s.TokenSource(t.Context(), "u", "srv")
	if _, err := ts.Token(); !errors.Is(err, ErrNotConnected) {
		t.Fatalf("refused refresh: %v, want ErrNotConnected", err)
	}
	if _, err := s.TokenSource(t.Context(), "u", "srv"); !errors.Is(err, ErrNotConnected) {
		t.Errorf("after a refused refresh: %v, want ErrNotConnected", err)
	}
}
