package api_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/api"
)

// TestZeroCopyPrincipalOutlivesRequest: a principal's name read from
// fiber's zero-copy header buffer must not stay a key of the per-principal
// count (here the embeddings one, the same counter as the streams') after
// its request ended: fasthttp reuses the buffer for the connection's next
// request, which would rename ann's place to whoever came next, and ann
// would get a place more than her limit. Overlapping requests on raw
// keep-alive connections, whose header layout is the same.
func TestZeroCopyPrincipalOutlivesRequest(t *testing.T) {
	var mu sync.Mutex
	releases := map[string]chan struct{}{}
	arrived := make(chan string, 8)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Input string `json:"input"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		rel := releases[body.Input]
		mu.Unlock()
		arrived <- body.Input
		if rel != nil {
			<-rel
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5]}],"model":"m"}`)
	}))
	t.Cleanup(up.Close)
	hold := func(id string) chan struct{} {
		ch := make(chan struct{})
		mu.Lock()
		releases[id] = ch
		mu.Unlock()
		return ch
	}
	var held []chan struct{}
	t.Cleanup(func() {
		for _, ch := range held {
			select {
			case <-ch:
			default:
				close(ch)
			}
		}
	})
	// No keys: the user header names the principal (as behind a proxy key).
	base := embeddingsAPI(t, api.Upstream{BaseURL: up.URL + "/v1"}, func(c *api.Config) {
		c.Keys = nil
		c.EmbeddingsPolicy.PerPrincipal = 2
	})
	addr := strings.TrimPrefix(base, "http://")
	type conn struct {
		net.Conn
		r *bufio.Reader
	}
	dial := func() conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		return conn{c, bufio.NewReader(c)}
	}
	// send writes a request of user with input id; the same layout each
	// time, so a user's name lies where the one before's did.
	send := func(c conn, user, id string) {
		t.Helper()
		body := fmt.Sprintf(`{"model":"m","input":%q}`, id)
		req := "POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-OpenWebUI-User-Id: " + user +
			"\r\nContent-Length: " + fmt.Sprint(len(body)) + "\r\n\r\n" + body
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
	}
	status := func(c conn) int {
		t.Helper()
		resp, err := http.ReadResponse(c.r, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	wait := func(id string) {
		t.Helper()
		if got := <-arrived; got != id {
			t.Fatalf("%s reached the endpoint, want %s", got, id)
		}
	}

	c1, c2, c3, c4 := dial(), dial(), dial(), dial()
	r1 := hold("a1")
	held = append(held, r1, hold("a2"), hold("b1"), hold("a3"), hold("a4"))
	send(c1, "ann", "a1")
	wait("a1")
	send(c2, "ann", "a2")
	wait("a2") // ann holds her two places
	close(r1)
	if s := status(c1); s != 200 {
		t.Fatalf("a1 = %d", s)
	}
	// c1's buffer now holds bob, where ann's name was read.
	send(c1, "bob", "b1")
	wait("b1")
	send(c3, "ann", "a3")
	wait("a3") // her second place again (a2 and a3)
	send(c4, "ann", "a4")
	done := make(chan int, 1)
	go func() { done <- status(c4) }()
	select {
	case s := <-done:
		if s != http.StatusTooManyRequests {
			t.Fatalf("ann's third request at once = %d, want 429", s)
		}
	case id := <-arrived:
		t.Fatalf("ann's third request at once (%s) reached the endpoint: her place was renamed by the next request's header", id)
	}
}
