package tools

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/internal/redact"
)

// FuzzHTTPToolURL gives a declared HTTP tool the arguments a model might
// send, whatever they are, and checks the URL it would call: the scheme,
// host, port and user are the operator's, the path argument stays one
// path segment, and the query argument stays one query value.
func FuzzHTTPToolURL(f *testing.F) {
	for _, s := range []string{
		`{"id":"42","q":"mortal kombat"}`,
		`{"id":"../admin","q":"x"}`,
		`{"id":"..","q":""}`,
		`{"id":"a/b?c#d","q":"&x=1#f"}`,
		`{"id":"@evil.test","q":"x"}`,
		`{"id":"%2e%2e","q":"%00"}`,
		`{"id":"x","q":"y","extra":"z"}`,
		`{"id":7,"q":[1,2]}`,
		`{"id":{"a":1}}`,
		`[]`, `null`, `{`,
	} {
		f.Add([]byte(s))
	}
	def := HTTPToolDef{
		Name:        "lookup",
		Description: "Looks an item up",
		Method:      "GET",
		URL:         "https://${HOST}/v1/items/{id}?q={q}",
		Parameters:  map[string]any{"type": "object", "properties": map[string]any{"id": map[string]any{}, "q": map[string]any{}}},
	}
	tool, err := NewHTTPTool(&def, HTTPToolOptions{LookupEnv: envLookup(map[string]string{"HOST": "api.example.test:8443"})})
	if err != nil {
		f.Fatal(err)
	}
	env, err := tool.expandEnv()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		args, err := decodeHTTPArgs(raw)
		if err != nil {
			return
		}
		tool.target(args)
		u, err := tool.buildURL(&callState{args: args, env: env, scrub: redact.NewSecrets(env)})
		if err != nil {
			if !strings.Contains(err.Error(), "argument") && !strings.Contains(err.Error(), "refusing") && !strings.Contains(err.Error(), "does not parse") {
				t.Fatalf("unexpected error: %v", err)
			}
			return
		}
		if u.Scheme != "https" || u.Host != "api.example.test:8443" || u.User != nil || u.Fragment != "" {
			t.Fatalf("args %s reached %s", raw, u)
		}
		seg, ok := strings.CutPrefix(u.EscapedPath(), "/v1/items/")
		if !ok || strings.Contains(seg, "/") {
			t.Fatalf("args %s left their path segment: %s", raw, u.EscapedPath())
		}
		id, err := url.PathUnescape(seg)
		if err != nil || id != argString(args["id"]) {
			t.Fatalf("path segment %q is not the argument %q (%v)", seg, argString(args["id"]), err)
		}
		q := u.Query()
		if len(q) != 1 || len(q["q"]) != 1 || q.Get("q") != argString(args["q"]) {
			t.Fatalf("args %s became query %q", raw, u.RawQuery)
		}
	})
}

// FuzzHTTPToolArgs checks what reaches the tool of any argument JSON: an
// object, or a refusal naming the problem.
func FuzzHTTPToolArgs(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"a":1,"a":2}`, `"x"`, ``, `{"a":1}{}`, `{"a":1e400}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		args, err := decodeHTTPArgs(raw)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if args == nil {
			t.Fatalf("%q decoded to nil arguments", raw)
		}
		if _, err := json.Marshal(args); err != nil {
			t.Fatalf("arguments %q do not encode again: %v", raw, err)
		}
	})
}

// FuzzHTMLPageText renders any page web_fetch might receive: it must not
// fail, and the text must grow with the page, not faster, whatever its
// nesting.
func FuzzHTMLPageText(f *testing.F) {
	for _, s := range []string{
		articleHTML, clutteredArticle, "", "<p>x", "<plaintext><b>",
		strings.Repeat("<blockquote>q", 40), strings.Repeat("<ul><li>q", 40),
		strings.Repeat("<table><tr><td>q", 40), strings.Repeat("<div>", 600) + "deep",
		`<a href="javascript:x">js</a><a href="#t">t</a><a href="x"><img src=i></a>`,
	} {
		f.Add([]byte(s))
	}
	base, _ := url.Parse("https://e.test/")
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := htmlPageText(data, base)
		if err != nil {
			t.Fatalf("htmlPageText(%q) error = %v", data, err)
		}
		if n := len(p.Text); n > 64*len(data) {
			t.Fatalf("htmlPageText(%q) gave %d bytes of text", data, n)
		}
	})
}
