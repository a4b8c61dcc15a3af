package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// htRequest is what an httpToolServer received.
type htRequest struct {
	Method  string
	Path    string // escaped
	Query   string // raw
	Header  http.Header
	Body    string
	Counter int
}

// httpToolServer records every request and answers with handle, or with
// 200 and "{}" when handle is nil.
type httpToolServer struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []htRequest
}

func newHTTPToolServer(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, body string)) *httpToolServer {
	t.Helper()
	s := &httpToolServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.reqs = append(s.reqs, htRequest{
			Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery,
			Header: r.Header.Clone(), Body: string(body),
		})
		s.mu.Unlock()
		if handle == nil {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, "{}")
			return
		}
		handle(w, r, string(body))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *httpToolServer) requests() []htRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]htRequest(nil), s.reqs...)
}

func (s *httpToolServer) last(t *testing.T) htRequest {
	t.Helper()
	reqs := s.requests()
	if len(reqs) == 0 {
		t.Fatal("the server received no request")
	}
	return reqs[len(reqs)-1]
}

// envLookup returns a LookupEnv over vars.
func envLookup(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

// props returns an object schema whose properties are the given names,
// each of any type.
func props(names ...string) map[string]any {
	p := map[string]any{}
	for _, n := range names {
		p[n] = map[string]any{}
	}
	return map[string]any{"type": "object", "properties": p}
}

func newTestHTTPTool(t *testing.T, def HTTPToolDef, env map[string]string) *HTTPTool {
	t.Helper()
	if def.Name == "" {
		def.Name = "api_call"
	}
	if def.Description == "" {
		def.Description = "Calls the test API"
	}
	tool, err := NewHTTPTool(&def, HTTPToolOptions{LookupEnv: envLookup(env)})
	if err != nil {
		t.Fatalf("NewHTTPTool: %v", err)
	}
	return tool
}

func callHTTPTool(t *testing.T, tool *HTTPTool, key, args string) (Result, error) {
	t.Helper()
	return tool.Call(context.Background(), Call{ID: "call_1", IdempotencyKey: key, Arguments: json.RawMessage(args)})
}

func TestHTTPToolRequestMapping(t *testing.T) {
	srv := newHTTPToolServer(t, nil)
	env := map[string]string{"BASE": srv.URL, "API_KEY": "k-123456"}
	tests := []struct {
		name       string
		def        HTTPToolDef
		args       string
		wantMethod string
		wantPath   string
		wantQuery  string
		wantBody   string // JSON, compared as values; "" means no body
		wantHeader map[string]string
	}{
		{
			name:       "GET: path argument escaped, the others as query parameters",
			def:        HTTPToolDef{Method: "GET", URL: "${BASE}/items/{id}", Parameters: props("id", "q", "n", "tags", "flag", "obj", "none")},
			args:       `{"id": "a b/c?d", "q": "x y", "n": 12345678901234567890, "tags": ["a", "b"], "flag": true, "obj": {"k": 1}, "none": null}`,
			wantMethod: "GET",
			wantPath:   "/items/a%20b%2Fc%3Fd",
			wantQuery:  "flag=true&n=12345678901234567890&obj=%7B%22k%22%3A1%7D&q=x+y&tags=a&tags=b",
		},
		{
			name:       "GET: declared query only, exact placeholders omitted when absent",
			def:        HTTPToolDef{URL: srv.URL + "/search", Query: map[string]string{"q": "{q}", "lang": "en", "page": "p{page}", "limit": "{limit}", "key": "${API_KEY}"}, Parameters: props("q", "page", "limit", "other")},
			args:       `{"q": "x&y", "other": "not sent"}`,
			wantMethod: "GET",
			wantPath:   "/search",
			wantQuery:  "key=k-123456&lang=en&page=p&q=x%26y",
		},
		{
			name:       "GET: placeholders in the url's query are query-escaped",
			def:        HTTPToolDef{URL: "${BASE}/search?term={term}&limit=10", Parameters: props("term")},
			args:       `{"term": "a&b=c d"}`,
			wantMethod: "GET",
			wantPath:   "/search",
			wantQuery:  "term=a%26b%3Dc+d&limit=10",
		},
		{
			name:       "DELETE: unnamed arguments as query parameters",
			def:        HTTPToolDef{Method: "DELETE", URL: "${BASE}/items/{id}", Parameters: props("id", "force")},
			args:       `{"id": 7, "force": true}`,
			wantMethod: "DELETE",
			wantPath:   "/items/7",
			wantQuery:  "force=true",
		},
		{
			name:       "POST without body: unnamed arguments as the JSON body",
			def:        HTTPToolDef{Method: "POST", URL: "${BASE}/api/v1/request/{kind}", Query: map[string]string{"lang": "en"}, Parameters: props("kind", "mediaId", "note")},
			args:       `{"kind": "tv", "mediaId": 12345678901234567890, "note": "<b>&</b>"}`,
			wantMethod: "POST",
			wantPath:   "/api/v1/request/tv",
			wantQuery:  "lang=en",
			wantBody:   `{"mediaId": 12345678901234567890, "note": "<b>&</b>"}`,
			wantHeader: map[string]string{"Content-Type": "application/json"},
		},
		{
			name: "POST with a body template",
			def: HTTPToolDef{Method: "POST", URL: "${BASE}/request", Parameters: props("mediaId", "mediaType", "tags", "note"),
				Body: map[string]any{
					"mediaId": "{mediaId}",
					"kind":    "{mediaType}-x",
					"nested":  map[string]any{"list": []any{"{mediaId}", "{note}", "lit"}, "tags": "{tags}"},
					"note":    "{note}",
					"literal": true,
					"escaped": "{{mediaId}",
					"key":     "${API_KEY}",
					"n":       float64(2),
				}},
			args:       `{"mediaId": 42, "mediaType": "tv", "tags": ["a", 1]}`,
			wantMethod: "POST",
			wantPath:   "/request",
			wantBody:   `{"mediaId": 42, "kind": "tv-x", "nested": {"list": [42, "lit"], "tags": ["a", 1]}, "literal": true, "escaped": "{mediaId}", "key": "k-123456", "n": 2}`,
			wantHeader: map[string]string{"Content-Type": "application/json"},
		},
		{
			name:       "PUT without arguments sends an empty object",
			def:        HTTPToolDef{Method: "PUT", URL: "${BASE}/touch"},
			args:       `{}`,
			wantMethod: "PUT",
			wantPath:   "/touch",
			wantBody:   `{}`,
		},
		{
			name: "headers are templates; an empty one is not sent; a declared Content-Type wins",
			def: HTTPToolDef{Method: "PATCH", URL: "${BASE}/t", Parameters: props("tenant", "trace", "v"),
				Headers: map[string]string{"X-Tenant": "t-{tenant}", "X-Trace": "{trace}", "Content-Type": "application/merge-patch+json", "x-api-key": "${API_KEY}"}},
			args:       `{"tenant": "acme", "v": 1}`,
			wantMethod: "PATCH",
			wantPath:   "/t",
			wantBody:   `{"v": 1}`,
			wantHeader: map[string]string{"X-Tenant": "t-acme", "X-Trace": "", "Content-Type": "application/merge-patch+json", "X-Api-Key": "k-123456"},
		},
		{
			name:       "GET with no arguments at all",
			def:        HTTPToolDef{URL: "${BASE}/status"},
			args:       ``,
			wantMethod: "GET",
			wantPath:   "/status",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tool := newTestHTTPTool(t, tt.def, env)
			if _, err := callHTTPTool(t, tool, "wf/call_1", tt.args); err != nil {
				t.Fatalf("Call: %v", err)
			}
			got := srv.last(t)
			if got.Method != tt.wantMethod || got.Path != tt.wantPath || got.Query != tt.wantQuery {
				t.Errorf("request = %s %s ? %s\nwant      %s %s ? %s", got.Method, got.Path, got.Query, tt.wantMethod, tt.wantPath, tt.wantQuery)
			}
			switch {
			case tt.wantBody == "" && got.Body != "":
				t.Errorf("body = %s, want none", got.Body)
			case tt.wantBody != "":
				var want, gotV any
				if err := json.Unmarshal([]byte(tt.wantBody), &want); err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal([]byte(got.Body), &gotV); err != nil {
					t.Fatalf("body %q is not JSON: %v", got.Body, err)
				}
				if diff := cmp.Diff(want, gotV); diff != "" {
					t.Errorf("body (-want +got):\n%s\nraw: %s", diff, got.Body)
				}
				if strings.Contains(tt.wantBody, "12345678901234567890") && !strings.Contains(got.Body, "12345678901234567890") {
					t.Errorf("body %s lost the precision of a large number", got.Body)
				}
			}
			for k, v := range tt.wantHeader {
				if g := got.Header.Get(k); g != v {
					t.Errorf("header %s = %q, want %q", k, g, v)
				}
			}
			if _, ok := got.Header["X-Trace"]; ok {
				t.Error("an empty header was sent")
			}
		})
	}
}

func TestHTTPToolSecretsNeverLeak(t *testing.T) {
	const key, token = "sk-live-SECRET-1234", "tok/en+with&chars"
	env := map[string]string{"API_KEY": key, "TOKEN": token}
	// The server echoes the request's headers and URL, like a debugging
	// endpoint or an overly helpful error page.
	echo := func(status int) func(w http.ResponseWriter, r *http.Request, body string) {
		return func(w http.ResponseWriter, r *http.Request, body string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_ = json.NewEncoder(w).Encode(map[string]any{"headers": r.Header, "url": r.URL.String(), "body": body})
		}
	}
	def := func(base string) HTTPToolDef {
		return HTTPToolDef{
			Method:     "POST",
			URL:        base + "/v1/{path}?api_key=${API_KEY}",
			Headers:    map[string]string{"X-Api-Key": "${API_KEY}", "Authorization": "Bearer ${TOKEN}", "X-Note": "{note}"},
			Query:      map[string]string{"q": "{q}"},
			Body:       map[string]any{"text": "{text}", "also": "say {text}"},
			Parameters: props("path", "note", "q", "text"),
		}
	}
	// A prompt-injected model puts variable references in every argument.
	injected := `{"path": "${API_KEY}", "note": "${TOKEN}", "q": "${API_KEY}", "text": "${API_KEY} $${TOKEN}"}`
	leaks := func(t *testing.T, what, s string) {
		t.Helper()
		for _, secret := range []string{key, token, url.QueryEscape(token), url.PathEscape(key)} {
			if strings.Contains(s, secret) {
				t.Errorf("%s leaks a secret:\n%s", what, s)
			}
		}
	}

	t.Run("expanded in the request, not in the result or target", func(t *testing.T) {
		srv := newHTTPToolServer(t, echo(http.StatusOK))
		tool := newTestHTTPTool(t, def(srv.URL), env)
		res, err := callHTTPTool(t, tool, "k1", injected)
		if err != nil {
			t.Fatalf("Call: %v", err)
		}
		got := srv.last(t)
		if got.Header.Get("X-Api-Key") != key || got.Header.Get("Authorization") != "Bearer "+token {
			t.Errorf("declared secrets not sent: X-Api-Key %q, Authorization %q", got.Header.Get("X-Api-Key"), got.Header.Get("Authorization"))
		}
		q, _ := url.ParseQuery(got.Query)
		if q.Get("api_key") != key {
			t.Errorf("api_key = %q, want the secret", q.Get("api_key"))
		}
		// The injected references arrive as the text the model wrote.
		if got.Path != "/v1/$%7BAPI_KEY%7D" {
			t.Errorf("path = %q, want the argument escaped and not expanded", got.Path)
		}
		if q.Get("q") != "${API_KEY}" || got.Header.Get("X-Note") != "${TOKEN}" {
			t.Errorf("q = %q, X-Note = %q: want the arguments as written", q.Get("q"), got.Header.Get("X-Note"))
		}
		var body map[string]string
		if err := json.Unmarshal([]byte(got.Body), &body); err != nil {
			t.Fatal(err)
		}
		if want := map[string]string{"text": "${API_KEY} $${TOKEN}", "also": "say ${API_KEY} $${TOKEN}"}; !cmp.Equal(body, want) {
			t.Errorf("body = %v, want %v", body, want)
		}
		leaks(t, "content", res.Content)
		leaks(t, "target", res.Target)
		leaks(t, "Target()", tool.Target(json.RawMessage(injected)))
		if !strings.Contains(res.Content, "Bearer ${TOKEN}") {
			t.Errorf("content does not show ${TOKEN} where the echoed secret was:\n%s", res.Content)
		}
	})

	t.Run("error echoing the request", func(t *testing.T) {
		srv := newHTTPToolServer(t, echo(http.StatusBadRequest))
		tool := newTestHTTPTool(t, def(srv.URL), env)
		_, err := callHTTPTool(t, tool, "k1", `{"path": "x", "text": "t"}`)
		if err == nil {
			t.Fatal("no error")
		}
		leaks(t, "error", err.Error())
		if !strings.Contains(err.Error(), "${API_KEY}") || !strings.Contains(err.Error(), "HTTP 400 Bad Request") {
			t.Errorf("error = %v, want the status and the echoed body redacted", err)
		}
		if !errors.Is(err, ErrPermanent) {
			t.Errorf("error %v does not wrap ErrPermanent", err)
		}
		for e := errors.Unwrap(err); e != nil; e = errors.Unwrap(e) {
			leaks(t, "a cause", e.Error())
		}
	})

	t.Run("network error", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		base := srv.URL
		srv.Close() // nothing listens any more
		tool := newTestHTTPTool(t, def(base), env)
		_, err := callHTTPTool(t, tool, "k1", `{"path": "x"}`)
		if err == nil {
			t.Fatal("no error")
		}
		leaks(t, "error", err.Error())
		if errors.Is(err, ErrPermanent) {
			t.Errorf("network error %v is permanent, want retryable", err)
		}
	})

	t.Run("missing variable names the variable only", func(t *testing.T) {
		tool := newTestHTTPTool(t, def("http://127.0.0.1:1"), map[string]string{"API_KEY": key})
		_, err := callHTTPTool(t, tool, "k1", `{"path": "x"}`)
		if !errors.Is(err, ErrMissingEnv) || !strings.Contains(err.Error(), `"TOKEN"`) {
			t.Errorf("error = %v, want ErrMissingEnv naming TOKEN", err)
		}
		leaks(t, "error", err.Error())
	})
}

func TestHTTPToolIdempotencyKey(t *testing.T) {
	srv := newHTTPToolServer(t, nil)
	tool := newTestHTTPTool(t, HTTPToolDef{Method: "POST", URL: srv.URL + "/x"}, nil)
	for range 2 {
		if _, err := callHTTPTool(t, tool, "wf-1/call_7", `{}`); err != nil {
			t.Fatalf("Call: %v", err)
		}
	}
	reqs := srv.requests()
	for i, r := range reqs {
		if got := r.Header.Get("Idempotency-Key"); got != "wf-1/call_7" {
			t.Errorf("request %d: Idempotency-Key = %q, want %q", i, got, "wf-1/call_7")
		}
		if got := r.Header.Get("User-Agent"); got != HTTPToolUserAgent {
			t.Errorf("request %d: User-Agent = %q, want %q", i, got, HTTPToolUserAgent)
		}
	}
}

// TestHTTPToolRetriesApplyOnce simulates an activity retried after its
// response was lost: a service that honours Idempotency-Key applies the
// effect once however often the same call is sent.
func TestHTTPToolRetriesApplyOnce(t *testing.T) {
	var mu sync.Mutex
	effects := 0
	seen := map[string]string{} // key -> the answer first given
	srv := newHTTPToolServer(t, func(w http.ResponseWriter, r *http.Request, body string) {
		mu.Lock()
		defer mu.Unlock()
		key := r.Header.Get("Idempotency-Key")
		answer, ok := seen[key]
		if !ok {
			effects++
			answer = fmt.Sprintf(`{"request":%d}`, effects)
			seen[key] = answer
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, answer)
	})
	tool := newTestHTTPTool(t, HTTPToolDef{Method: "POST", URL: srv.URL + "/request", Parameters: props("mediaId")}, nil)
	var contents []string
	for range 3 {
		res, err := callHTTPTool(t, tool, "wf-9/call_1", `{"mediaId": 603}`)
		if err != nil {
			t.Fatalf("Call: %v", err)
		}
		contents = append(contents, res.Content)
	}
	if effects != 1 {
		t.Errorf("effects = %d after 3 calls with one key, want 1", effects)
	}
	if contents[0] != contents[1] || contents[1] != contents[2] {
		t.Errorf("answers differ: %q", contents)
	}
	if _, err := callHTTPTool(t, tool, "wf-9/call_2", `{"mediaId": 603}`); err != nil {
		t.Fatalf("Call: %v", err)
	}
	if effects != 2 {
		t.Errorf("effects = %d after a call with a new key, want 2", effects)
	}
}

func TestHTTPToolResponses(t *testing.T) {
	tests := []struct {
		name          string
		status        int
		contentType   string
		body          string
		want          string
		wantTruncated bool
	}{
		{"json is indented", 200, "application/json; charset=utf-8", `{"a":[1,2],"b":{"c":"d"}}`, "{\n \"a\": [\n  1,\n  2\n ],\n \"b\": {\n  \"c\": \"d\"\n }\n}", false},
		{"invalid json as is", 200, "application/json", `{"a":`, `{"a":`, false},
		{"problem+json is json", 200, "application/problem+json", `{"a":1}`, "{\n \"a\": 1\n}", false},
		{"text", 200, "text/plain", "hello\nworld", "hello\nworld", false},
		{"untyped json", 200, "", `[1]`, "[\n 1\n]", false},
		{"binary", 200, "image/png", "\x89PNG\r\n\x1a\n0123", "[image/png, 12 bytes]", false},
		{"created", 201, "application/json", `{"id":5}`, "HTTP 201 Created\n\n{\n \"id\": 5\n}", false},
		{"no content", 204, "", "", "HTTP 204 No Content", false},
		{"empty 200", 200, "application/json", "", "HTTP 200 OK", false},
		{"truncated", 200, "text/plain", strings.Repeat("abcdefghij", 10), "abcdefghijabcdefghijabcdefghijabcdefghij\n\n[truncated: the response was larger than 40 bytes; only the first 40 bytes were read]", true},
		{"truncated json as text", 200, "application/json", `{"items":["aaaaaaaaaa","bbbbbbbbbb","cccccccccc"]}`, `{"items":["aaaaaaaaaa","bbbbbbbbbb","ccc` + "\n\n[truncated: the response was larger than 40 bytes; only the first 40 bytes were read]", true},
		{"truncated in a rune", 200, "text/plain", strings.Repeat("a", 39) + "é", strings.Repeat("a", 39) + "\n\n[truncated: the response was larger than 40 bytes; only the first 40 bytes were read]", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newHTTPToolServer(t, func(w http.ResponseWriter, r *http.Request, _ string) {
				if tt.contentType != "" {
					w.Header().Set("Content-Type", tt.contentType)
				} else {
					w.Header()["Content-Type"] = nil
				}
				w.WriteHeader(tt.status)
				fmt.Fprint(w, tt.body)
			})
			tool := newTestHTTPTool(t, HTTPToolDef{URL: srv.URL + "/x", MaxResponseBytes: 40}, nil)
			res, err := callHTTPTool(t, tool, "k", `{}`)
			if err != nil {
				t.Fatalf("Call: %v", err)
			}
			if res.Content != tt.want || res.Truncated != tt.wantTruncated {
				t.Errorf("Content = %q, Truncated = %v\nwant      %q, %v", res.Content, res.Truncated, tt.want, tt.wantTruncated)
			}
		})
	}
}

func TestHTTPToolTruncationDoesNotLeakPartOfASecret(t *testing.T) {
	const secret = "SECRETVALUE-0123456789"
	srv := newHTTPToolServer(t, func(w http.ResponseWriter, r *http.Request, _ string) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "key: "+r.Header.Get("X-Api-Key"))
	})
	tool := newTestHTTPTool(t, HTTPToolDef{URL: srv.URL + "/x", MaxResponseBytes: 15, Headers: map[string]string{"X-Api-Key": "${KEY}"}},
		map[string]string{"KEY": secret})
	res, err := callHTTPTool(t, tool, "k", `{}`)
	if err != nil {
		t.Fatalf("Call: %v", err)
	}
	if strings.Contains(res.Content, secret[:5]) || !strings.HasPrefix(res.Content, "key: ${KEY}") {
		t.Errorf("content %q shows the start of the secret", res.Content)
	}
}
