// How an HTTP tool fails: statuses, redirects, timeouts, bad arguments,
// other hosts; and how it is declared and registered.

package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestHTTPToolStatusErrors(t *testing.T) {
	tests := []struct {
		status    int
		permanent bool
	}{
		{400, true}, {401, true}, {404, true}, {422, true},
		{408, false}, {429, false}, {500, false}, {503, false},
	}
	long := strings.Repeat("x", 2000)
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.status), func(t *testing.T) {
			srv := newHTTPToolServer(t, func(w http.ResponseWriter, r *http.Request, _ string) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tt.status)
				fmt.Fprintf(w, "{\n  \"message\": \"no such movie\",\n  \"detail\": %q\n}", long)
			})
			tool := newTestHTTPTool(t, HTTPToolDef{URL: srv.URL + "/movie/{id}", Parameters: props("id")}, nil)
			_, err := callHTTPTool(t, tool, "k", `{"id": 603}`)
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			wantStart := fmt.Sprintf(`api_call: GET 127.0.0.1:%s/movie/603: HTTP %d %s: {"message":"no such movie","detail":"xxx`, srv.URL[strings.LastIndex(srv.URL, ":")+1:], tt.status, http.StatusText(tt.status))
			if !strings.HasPrefix(msg, wantStart) {
				t.Errorf("error = %.200s\nwant prefix %s", msg, wantStart)
			}
			if len(msg) > 700 {
				t.Errorf("error is %d bytes long, want the body cut to about %d characters", len(msg), httpErrorExcerpt)
			}
			if !errors.Is(err, ErrHTTPStatus) {
				t.Errorf("error does not wrap ErrHTTPStatus")
			}
			if got := errors.Is(err, ErrPermanent); got != tt.permanent {
				t.Errorf("errors.Is(err, ErrPermanent) = %v, want %v", got, tt.permanent)
			}
		})
	}
}

func TestHTTPToolRedirects(t *testing.T) {
	other := newHTTPToolServer(t, nil)
	var srv *httpToolServer
	srv = newHTTPToolServer(t, func(w http.ResponseWriter, r *http.Request, _ string) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL+"/x", http.StatusFound)
		case "/moved":
			http.Redirect(w, r, "/here", http.StatusTemporaryRedirect)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		default:
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "arrived")
		}
	})
	tool := newTestHTTPTool(t, HTTPToolDef{URL: srv.URL + "/{p}", Parameters: props("p")}, nil)

	res, err := callHTTPTool(t, tool, "k", `{"p": "moved"}`)
	if err != nil || res.Content != "arrived" {
		t.Errorf("same-host redirect: %q, %v; want it followed", res.Content, err)
	}

	_, err = callHTTPTool(t, tool, "k", `{"p": "away"}`)
	if err == nil || !errors.Is(err, ErrPermanent) || !strings.Contains(err.Error(), "redirects to") {
		t.Errorf("redirect to another host: error %v, want a permanent refusal", err)
	}
	if n := len(other.requests()); n != 0 {
		t.Errorf("the other host received %d requests", n)
	}

	before := len(srv.requests())
	_, err = callHTTPTool(t, tool, "k", `{"p": "loop"}`)
	if err == nil || !strings.Contains(err.Error(), "more than 5 redirects") {
		t.Errorf("redirect loop: error %v, want too many redirects", err)
	}
	if n := len(srv.requests()) - before; n != HTTPToolMaxRedirects+1 {
		t.Errorf("redirect loop sent %d requests, want %d", n, HTTPToolMaxRedirects+1)
	}

	// A POST body is sent again on a 307.
	post := newTestHTTPTool(t, HTTPToolDef{Method: "POST", URL: srv.URL + "/moved", Parameters: props("a")}, nil)
	if _, err := callHTTPTool(t, post, "k", `{"a": 1}`); err != nil {
		t.Fatalf("POST: %v", err)
	}
	if got := srv.last(t); got.Path != "/here" || got.Body != `{"a":1}` || got.Header.Get("Idempotency-Key") != "k" {
		t.Errorf("after a 307: %s body %q key %q", got.Path, got.Body, got.Header.Get("Idempotency-Key"))
	}
}

func TestHTTPToolTimeout(t *testing.T) {
	srv := newHTTPToolServer(t, func(w http.ResponseWriter, r *http.Request, _ string) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	tool := newTestHTTPTool(t, HTTPToolDef{URL: srv.URL + "/slow", Timeout: 100 * time.Millisecond}, nil)

	start := time.Now()
	_, err := callHTTPTool(t, tool, "k", `{}`)
	if elapsed := time.Since(start); elapsed > 3*time.Second {
		t.Errorf("call took %s, want about 100ms", elapsed)
	}
	if err == nil || !strings.Contains(err.Error(), "timed out after 100ms") {
		t.Errorf("error = %v, want a timeout", err)
	}
	if errors.Is(err, ErrPermanent) {
		t.Error("a timeout is permanent, want retryable")
	}

	// The caller's cancellation is reported as such.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	tool = newTestHTTPTool(t, HTTPToolDef{URL: srv.URL + "/slow", Timeout: 10 * time.Second}, nil)
	_, err = tool.Call(ctx, Call{Arguments: json.RawMessage(`{}`)})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want context.Canceled", err)
	}
}

func TestHTTPToolArgumentErrors(t *testing.T) {
	srv := newHTTPToolServer(t, nil)
	tool := newTestHTTPTool(t, HTTPToolDef{URL: srv.URL + "/items/{id}", Headers: map[string]string{"X-Note": "{note}"}, Parameters: props("id", "note")}, nil)
	tests := []struct{ name, args, want string }{
		{"missing path argument", `{}`, `argument "id" is needed for the url path`},
		{"dot-dot", `{"id": ".."}`, `argument "id" must not be ".."`},
		{"header injection", `{"id": 1, "note": "a\r\nX-Evil: 1"}`, "header X-Note would hold a line break"},
		{"not an object", `[1]`, "arguments must be a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := callHTTPTool(t, tool, "k", tt.args)
			if !errors.Is(err, ErrInvalidArguments) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want ErrInvalidArguments with %q", err, tt.want)
			}
		})
	}
	if n := len(srv.requests()); n != 0 {
		t.Errorf("%d requests sent, want none", n)
	}
}

// TestHTTPToolRefusesAnotherHost checks the last line of defence: even if
// a template let an argument reach the host, the call is refused.
func TestHTTPToolRefusesAnotherHost(t *testing.T) {
	srv := newHTTPToolServer(t, nil)
	tool := newTestHTTPTool(t, HTTPToolDef{URL: srv.URL + "/{p}", Parameters: props("p")}, nil)
	// Pretend the parser let the placeholder into the origin.
	tool.rest = []TemplatePart{{Kind: TemplateArg, Text: "p"}, {Kind: TemplateLiteral, Text: "/x"}}
	_, err := callHTTPTool(t, tool, "k", `{"p": "@example.com"}`)
	if !errors.Is(err, ErrPermanent) || !strings.Contains(err.Error(), "differs") {
		t.Errorf("error = %v, want a permanent refusal", err)
	}
	if n := len(srv.requests()); n != 0 {
		t.Errorf("%d requests sent, want none", n)
	}
}

func TestHTTPToolTarget(t *testing.T) {
	tests := []struct {
		url, method, args, want string
	}{
		{"https://api.example.com/v1/items/{id}?key=${KEY}", "POST", `{"id": "a b"}`, "POST api.example.com/v1/items/a%20b"},
		{"${BASE}/movie/{id}", "", `{"id": 603}`, "GET /movie/603"},
		{"${BASE}/movie/{id}", "", `not json`, "GET /movie/{id}"},
		{"https://api.example.com/k/${KEY}/status", "DELETE", `{}`, "DELETE api.example.com/k/${KEY}/status"},
		{"https://user:pw@api.example.com:8443", "GET", `{}`, "GET api.example.com:8443"},
	}
	for _, tt := range tests {
		tool := newTestHTTPTool(t, HTTPToolDef{URL: tt.url, Method: tt.method, Parameters: props("id")}, map[string]string{"KEY": "secret"})
		if got := tool.Target(json.RawMessage(tt.args)); got != tt.want {
			t.Errorf("Target(%s) for %s = %q, want %q", tt.args, tt.url, got, tt.want)
		}
	}
}

func TestNewHTTPToolErrors(t *testing.T) {
	tests := []struct {
		name string
		def  HTTPToolDef
		want string
	}{
		{"argument in the host", HTTPToolDef{Name: "t", URL: "https://{host}/x", Parameters: props("host")}, "placeholder {host} is in the scheme, host or port"},
		{"argument in the port", HTTPToolDef{Name: "t", URL: "https://h:{port}/x", Parameters: props("port")}, "placeholder {port} is in the scheme, host or port"},
		{"argument right after a variable", HTTPToolDef{Name: "t", URL: "${BASE}{path}", Parameters: props("path")}, "placeholder {path} is in the scheme, host or port"},
		{"unknown placeholder", HTTPToolDef{Name: "t", URL: "https://h/{id}", Parameters: props("ID")}, "url: placeholder {id} names no property"},
		{"unknown placeholder in the body", HTTPToolDef{Name: "t", URL: "https://h/", Body: map[string]any{"a": []any{"{x}"}}}, "body.a[0]: placeholder {x}"},
		{"bad variable", HTTPToolDef{Name: "t", URL: "https://h/", Headers: map[string]string{"A": "${1}"}}, "headers.A:"},
		{"bad method", HTTPToolDef{Name: "t", URL: "https://h/", Method: "TRACE"}, `method "TRACE"`},
		{"bad name", HTTPToolDef{Name: "a b", URL: "https://h/"}, "invalid name"},
		{"no origin", HTTPToolDef{Name: "t", URL: "/x"}, "has no scheme and host"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewHTTPTool(&tt.def, HTTPToolOptions{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestHTTPToolInRegistry(t *testing.T) {
	tool := newTestHTTPTool(t, HTTPToolDef{
		Name: "media_request", URL: "https://media.example/api/v1/request", Method: "POST",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"mediaId": map[string]any{"type": "integer"}}, "required": []any{"mediaId"}},
	}, nil)
	r, err := NewRegistry(tool)
	if err != nil {
		t.Fatalf("NewRegistry: %v", err)
	}
	if err := r.Validate("media_request", json.RawMessage(`{"mediaId": "x"}`)); !errors.Is(err, ErrInvalidArguments) {
		t.Errorf("Validate = %v, want ErrInvalidArguments", err)
	}
}

// TestHTTPToolParametersClosedByDefault: an argument the skill file does
// not declare is refused by the registry's validation, so it is never
// forwarded; a file that opens its schema with additionalProperties keeps
// it open. The model is shown the closed schema.
func TestHTTPToolParametersClosedByDefault(t *testing.T) {
	params := func(extra ...any) map[string]any {
		m := map[string]any{"type": "object", "properties": map[string]any{"mediaId": map[string]any{"type": "integer"}}}
		if len(extra) == 1 {
			m["additionalProperties"] = extra[0]
		}
		return m
	}
	closed := newTestHTTPTool(t, HTTPToolDef{Name: "closed", URL: "https://media.example/a", Parameters: params()}, nil)
	open := newTestHTTPTool(t, HTTPToolDef{Name: "open", URL: "https://media.example/b", Parameters: params(true)}, nil)
	none := newTestHTTPTool(t, HTTPToolDef{Name: "none", URL: "https://media.example/c"}, nil)
	r, err := NewRegistry(closed, open, none)
	if err != nil {
		t.Fatalf("NewRegistry: %v", err)
	}
	extra := json.RawMessage(`{"mediaId": 1, "deleteAll": true}`)
	if err := r.Validate("closed", extra); !errors.Is(err, ErrInvalidArguments) || !strings.Contains(err.Error(), "deleteAll") {
		t.Errorf("closed: Validate = %v, want ErrInvalidArguments naming deleteAll", err)
	}
	if err := r.Validate("none", json.RawMessage(`{"x": 1}`)); !errors.Is(err, ErrInvalidArguments) {
		t.Errorf("no parameters: Validate = %v, want ErrInvalidArguments", err)
	}
	if err := r.Validate("open", extra); err != nil {
		t.Errorf("open: Validate = %v, want nil", err)
	}
	var shown map[string]any
	if err := json.Unmarshal(closed.Parameters(), &shown); err != nil || shown["additionalProperties"] != false {
		t.Errorf("the model is shown %s, want additionalProperties false", closed.Parameters())
	}
}
