package api_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

var bobKey = map[string]string{"Authorization": "Bearer sk-bob"}

// TestEmbeddingsModelAllowList passes on only the embedding models the
// operator allows: another is a 404 that never reaches the endpoint, "*"
// allows any, and none allowed turns the route off.
func TestEmbeddingsModelAllowList(t *testing.T) {
	model := llmtest.New(t)
	for _, tc := range []struct {
		name    string
		models  []string
		model   string
		status  int
		message string
	}{
		{"allowed", []string{"nomic-embed-text"}, "nomic-embed-text", 200, ""},
		{"another model", []string{"nomic-embed-text"}, "gpt-4o", 404, `"gpt-4o" is not an embedding model of this server; allowed: nomic-embed-text (LONGHAUL_EMBED_MODELS)`},
		{"any", []string{"*"}, "gpt-4o", 200, ""},
		{"none allowed", nil, "nomic-embed-text", 404, "embeddings are not enabled on this server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := embeddingsAPI(t, api.Upstream{BaseURL: model.URL()}, func(c *api.Config) { c.EmbeddingsPolicy.Models = tc.models })
			before := len(model.EmbeddingRequests())
			resp := doAt(t, base, "POST", "/v1/embeddings", fmt.Sprintf(`{"model":%q,"input":"a"}`, tc.model), annKey)
			if resp.StatusCode != tc.status {
				b, _ := io.ReadAll(resp.Body)
				t.Fatalf("status %d %s, want %d", resp.StatusCode, b, tc.status)
			}
			reached := len(model.EmbeddingRequests()) > before
			if tc.status != 200 {
				if e := decode[wire.ErrorBody](t, resp); !strings.Contains(e.Error.Message, tc.message) {
					t.Errorf("error %+v, want a message with %q", e.Error, tc.message)
				}
				if reached {
					t.Error("a refused request reached the endpoint")
				}
			} else if !reached {
				t.Error("an allowed request did not reach the endpoint")
			}
		})
	}
}

// statusOf sends req in the background; the channel gets the status of
// its answer, 0 when it got none.
func statusOf(req *http.Request) <-chan int {
	status := make(chan int, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			status <- 0
			return
		}
		resp.Body.Close()
		status <- resp.StatusCode
	}()
	return status
}

// TestEmbeddingsPerPrincipal holds a principal to its embeddings requests in
// flight: one more is a 429 with Retry-After, another principal is not held
// back, and an answered request frees its place.
func TestEmbeddingsPerPrincipal(t *testing.T) {
	arrived, release := make(chan string, 4), make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		arrived <- string(b)
		<-release
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5]}],"model":"m"}`)
	}))
	t.Cleanup(up.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	base := embeddingsAPI(t, api.Upstream{BaseURL: up.URL + "/v1"}, func(c *api.Config) { c.EmbeddingsPolicy.PerPrincipal = 1 })
	body := `{"model":"m","input":"a"}`

	hers, his := embeddingsRequest(t, base, body, annKey), embeddingsRequest(t, base, body, bobKey)
	first := statusOf(hers)
	<-arrived // her first request is in flight

	again, second := embeddingsRequest(t, base, body, annKey), make(chan *http.Response, 1)
	go func() {
		resp, err := http.DefaultClient.Do(again)
		if err != nil {
			resp = &http.Response{StatusCode: 0, Body: http.NoBody}
		}
		second <- resp
	}()
	var resp *http.Response
	select {
	case resp = <-second:
		defer resp.Body.Close()
	case <-arrived:
		close(release)
		t.Fatal("her second request reached the endpoint while her first was in flight")
	}
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("her second request = %d (Retry-After %q) %s, want 429", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	if e := decode[wire.ErrorBody](t, resp); !strings.Contains(e.Error.Message, "LONGHAUL_MAX_EMBEDDINGS") {
		t.Errorf("error %+v", e.Error)
	}

	bobs := statusOf(his)
	<-arrived // bob's reached the endpoint while hers is in flight
	close(release)
	if got := <-first; got != 200 {
		t.Fatalf("her first request = %d", got)
	}
	if got := <-bobs; got != 200 {
		t.Fatalf("bob's request = %d", got)
	}
	// Hers was answered: her place is free again.
	if resp := doAt(t, base, "POST", "/v1/embeddings", body, annKey); resp.StatusCode != 200 {
		t.Fatalf("her next request = %d", resp.StatusCode)
	}
}

func embeddingsRequest(t *testing.T, base, body string, headers map[string]string) *http.Request {
	t.Helper()
	req, err := http.NewRequest("POST", base+"/v1/embeddings", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return req
}

// TestEmbeddingsAnswerCap refuses an endpoint's answer over the cap with a
// 502 that says why, whether the endpoint declares its length or streams
// without end: no more than the cap is read.
func TestEmbeddingsAnswerCap(t *testing.T) {
	const limit = 64 << 10
	sent := make(chan int64, 1)
	endless := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		chunk := []byte(strings.Repeat("0.125,", 1024))
		var n int64
		defer func() { sent <- n }()
		_, _ = io.WriteString(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[`)
		// Stops when the API hangs up, or after 64 MiB (an API that read
		// it all would answer 200 with it).
		for n < 64<<20 {
			k, err := w.Write(chunk)
			n += int64(k)
			if err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
		_, _ = io.WriteString(w, `1]}],"model":"m"}`)
	}))
	t.Cleanup(endless.Close)
	declared := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", fmt.Sprint(limit+1))
		_, _ = io.WriteString(w, strings.Repeat(" ", limit+1))
	}))
	t.Cleanup(declared.Close)
	within := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"object":"list","data":[],"model":"m"}`+strings.Repeat(" ", limit-40))
	}))
	t.Cleanup(within.Close)

	for _, tc := range []struct {
		name   string
		url    string
		status int
	}{
		{"endless", endless.URL, 502},
		{"declared too long", declared.URL, 502},
		{"within the cap", within.URL, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := embeddingsAPI(t, api.Upstream{BaseURL: tc.url + "/v1"}, func(c *api.Config) { c.EmbeddingsPolicy.MaxAnswer = limit })
			resp := doAt(t, base, "POST", "/v1/embeddings", `{"model":"m","input":"a"}`, annKey)
			if resp.StatusCode != tc.status {
				b, _ := io.ReadAll(resp.Body)
				t.Fatalf("status %d %.200s, want %d", resp.StatusCode, b, tc.status)
			}
			if tc.status == 502 {
				if e := decode[wire.ErrorBody](t, resp); !strings.Contains(e.Error.Message, "larger than 64 KiB") || !strings.Contains(e.Error.Message, "LONGHAUL_MAX_EMBEDDINGS_BYTES") {
					t.Errorf("error %+v", e.Error)
				}
			}
		})
	}
	if n := <-sent; n >= 64<<20 {
		t.Errorf("the endpoint sent all %d bytes: the API read past the cap", n)
	}
}
