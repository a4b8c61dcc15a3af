package tools

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestHTTPToolUserSecret covers ${user.secret:NAME}: the calling user's own
// value goes in the header, scrubbed from what the service echoes; another
// user without it gets how to set it, and no request is sent.
func TestHTTPToolUserSecret(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("X-Api-Key"))
		mu.Unlock()
		fmt.Fprintf(w, "echo %s", r.Header.Get("X-Api-Key"))
	}))
	t.Cleanup(srv.Close)
	secrets := map[string]string{"alice/SHOP": "alice-key-0123456789"}
	opts := HTTPToolOptions{UserSecret: func(_ context.Context, user, name string) (string, error) {
		if v, ok := secrets[user+"/"+name]; ok {
			return v, nil
		}
		return "", ErrNoUserSecret
	}}
	def := HTTPToolDef{Name: "shop", URL: srv.URL + "/key", Headers: map[string]string{"X-Api-Key": "${user.secret:SHOP}"}}
	tool, err := NewHTTPTool(&def, opts)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tool.Call(t.Context(), Call{User: "alice", Arguments: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.Content, "alice-key") || !strings.Contains(res.Content, "${user.secret:SHOP}") {
		t.Errorf("alice's result %q: want the echoed secret scrubbed", res.Content)
	}
	res, err = tool.Call(t.Context(), Call{User: "bob", Arguments: []byte(`{}`)})
	if err != nil || !strings.Contains(res.Content, "MISSING SECRET") || !strings.Contains(res.Content, "PUT /v1/secrets/SHOP") {
		t.Errorf("bob's result %q, %v: want how to set the secret", res.Content, err)
	}
	mu.Lock()
	if len(got) != 1 || got[0] != "alice-key-0123456789" {
		t.Errorf("the service received %q, want alice's key once", got)
	}
	mu.Unlock()

	// Only in headers, and only with per-user secrets on.
	inQuery := HTTPToolDef{Name: "q", URL: srv.URL, Query: map[string]string{"k": "${user.secret:SHOP}"}}
	if _, err := NewHTTPTool(&inQuery, opts); err == nil || !strings.Contains(err.Error(), "only stand in the headers") {
		t.Errorf("a user secret in the query: %v", err)
	}
	if _, err := NewHTTPTool(&def, HTTPToolOptions{}); err == nil || !strings.Contains(err.Error(), "LONGHAUL_TOKEN_KEY") {
		t.Errorf("without per-user secrets: %v", err)
	}
	failing := HTTPToolOptions{UserSecret: func(context.Context, string, string) (string, error) { return "", errors.New("store down") }}
	tool, _ = NewHTTPTool(&def, failing)
	if _, err := tool.Call(t.Context(), Call{User: "alice", Arguments: []byte(`{}`)}); err == nil {
		t.Error("a store failure is no error")
	}
}
