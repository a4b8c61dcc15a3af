package tools

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// jsonServer answers every request with status and body as JSON.
func jsonServer(t *testing.T, status int, body string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestHTTPToolResultTemplate(t *testing.T) {
	const list = `{"page":1,"totalPages":3,"results":[
		{"id":931285,"mediaType":"movie","title":"Mortal Kombat II","releaseDate":"2026-05-15","overview":"Round two. k-secret-1"},
		{"id":1396,"mediaType":"tv","name":"Breaking Bad","firstAirDate":"2008-01-20"},
		{"id":17419,"mediaType":"person"}]}`
	tmpl := `{{- $kind := default "all" (arg "kind") -}}
{{- range .results}}{{if or (eq $kind "all") (eq .mediaType $kind)}}{{if ne .mediaType "person"}}
- {{default .name .title}}{{with .releaseDate}} ({{trunc 4 .}}){{end}} [tmdb:{{.id}}]{{with .overview}} {{ellipsis 9 .}}{{end}}{{end}}{{end}}{{end}}
{{- with .missing}}never{{end}}
page {{.page}} of {{.totalPages}}`
	tests := []struct {
		name, body, tmpl, args string
		status                 int
		want                   string
	}{
		{"filtered by an argument", list, tmpl, `{"kind":"movie"}`, 200,
			"- Mortal Kombat II (2026) [tmdb:931285] Round tw…\npage 1 of 3"},
		{"all kinds, absent argument", list, tmpl, `{}`, 200,
			"- Mortal Kombat II (2026) [tmdb:931285] Round tw…\n- Breaking Bad [tmdb:1396]\npage 1 of 3"},
		{"integers stay exact, zero is false", `{"id":9007199254740993,"n":0,"f":2.5}`, `[tmdb:{{.id}}]{{with .n}} never{{end}} {{.f}}{{if eq .id 9007199254740993}} eq{{end}}`, `{}`, 200, "[tmdb:9007199254740993] 2.5 eq"},
		{"a status other than 200 on a first line", `{"id":7,"status":2}`, `request #{{.id}}{{if eq .status 2}} approved{{end}}, {{json (arg "m")}}`, `{"m":{"a":[1]}}`, 201,
			"HTTP 201 Created\n\nrequest #7 approved, {\"a\":[1]}"},
		{"secrets scrubbed", `{"echo":"k-secret-1"}`, `{{.echo}}`, `{}`, 200, "${KEY}"},
		{"not JSON: the body, with why", `plain`, `{{.x}}`, `{}`, 200, "[the tool's result template failed (the response is not JSON: invalid character 'p' looking for beginning of value); the response follows as it came]\n\nplain"},
		{"failing template: the body, with why", `{"a":"x"}`, `{{index .a 5}}`, `{}`, 200, "[the tool's result template failed (template: api_call:1:2: executing \"api_call\" at <index .a 5>: error calling index: cannot index slice/array with type string); the response follows as it came]\n\n{\n \"a\": \"x\"\n}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := jsonServer(t, tt.status, tt.body)
			tool := newTestHTTPTool(t, HTTPToolDef{Method: "GET", URL: "${BASE}/x", Query: map[string]string{}, Headers: map[string]string{"X-Key": "${KEY}"},
				Parameters: props("kind", "m"), Result: tt.tmpl}, map[string]string{"BASE": srv.URL, "KEY": "k-secret-1"})
			res, err := callHTTPTool(t, tool, "", tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if tt.name == "failing template: the body, with why" {
				if !strings.HasPrefix(res.Content, "[the tool's result template failed (") || !strings.HasSuffix(res.Content, "the response follows as it came]\n\n{\n \"a\": \"x\"\n}") {
					t.Errorf("content = %q", res.Content)
				}
				return
			}
			if res.Content != tt.want {
				t.Errorf("content = %q, want %q", res.Content, tt.want)
			}
		})
	}
}

func TestHTTPToolResultBounded(t *testing.T) {
	srv := jsonServer(t, 200, `{"n":[`+strings.Repeat(`"ééééééééé",`, 5000)+`"x"]}`)
	tool := newTestHTTPTool(t, HTTPToolDef{Method: "GET", URL: "${BASE}/x", Parameters: props(), Result: `{{range .n}}{{.}}{{end}}`}, map[string]string{"BASE": srv.URL})
	res, err := callHTTPTool(t, tool, "", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	const note = "\n\n[truncated: the result was longer than 32768 bytes]"
	if !strings.HasSuffix(res.Content, note) || len(res.Content)-len(note) > MaxResultBytes || strings.ContainsRune(res.Content, '\uFFFD') {
		t.Errorf("content of %d bytes ends %q", len(res.Content), res.Content[max(0, len(res.Content)-80):])
	}
}

func TestHTTPToolResultChecked(t *testing.T) {
	def := HTTPToolDef{Name: "t", Description: "d", Method: "GET", URL: "https://x.test/", Timeout: 1, MaxResponseBytes: 1,
		Parameters: props(), Result: "{{.a", RequiresEnv: []string{"OK_1", "1BAD"}}
	problems := def.Check()
	var msgs []string
	for _, p := range problems {
		if !errors.Is(p, ErrBadHTTPTool) {
			t.Errorf("problem %v is not ErrBadHTTPTool", p)
		}
		msgs = append(msgs, p.Error())
	}
	got := strings.Join(msgs, "\n")
	for _, want := range []string{"result is not a valid Go text/template", `requires_env: "1BAD" is not an environment variable name`} {
		if !strings.Contains(got, want) {
			t.Errorf("problems %q lack %q", got, want)
		}
	}
	if strings.Contains(got, "OK_1") {
		t.Errorf("a valid name is reported: %q", got)
	}
	if _, err := NewHTTPTool(&def, HTTPToolOptions{}); err == nil || !strings.Contains(err.Error(), "result") {
		t.Errorf("NewHTTPTool = %v, want the result template's error", err)
	}
}

// TestHTTPToolResultREADME runs the result template of docs/tools.md's
// shop_search example.
func TestHTTPToolResultREADME(t *testing.T) {
	const tmpl = `{{range .items}}- {{.name}} [sku:{{.sku}}] {{.price}} {{with .stock}}in stock{{else}}sold out{{end}}
{{else}}Nothing found for {{arg "query"}}.{{end}}
`
	for body, want := range map[string]string{
		`{"items":[{"name":"Kettle","sku":"K-1","price":24.5,"stock":3},{"name":"Mug","sku":"M-2","price":6,"stock":0}]}`: "- Kettle [sku:K-1] 24.5 in stock\n- Mug [sku:M-2] 6 sold out",
		`{"items":[]}`: "Nothing found for tea.",
	} {
		srv := jsonServer(t, 200, body)
		tool := newTestHTTPTool(t, HTTPToolDef{Method: "GET", URL: "${SHOP_URL}/api/products", Query: map[string]string{"q": "{query}"},
			Parameters: props("query"), Result: tmpl}, map[string]string{"SHOP_URL": srv.URL})
		res, err := callHTTPTool(t, tool, "", `{"query":"tea"}`)
		if err != nil || res.Content != want {
			t.Errorf("content %q (%v), want %q", res.Content, err, want)
		}
	}
}
