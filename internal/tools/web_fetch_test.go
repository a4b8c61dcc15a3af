package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/longhaul-dev/longhaul/internal/safehttp"
)

// testSite serves fixed responses by path.
type testSite struct {
	*httptest.Server
	userAgent atomic.Value
	accept    atomic.Value
	hits      atomic.Int32
}

type page struct {
	contentType string // "-" sends no Content-Type at all
	status      int
	body        string
	redirect    string
}

func newTestSite(t *testing.T, pages map[string]page) *testSite {
	t.Helper()
	s := &testSite{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		s.userAgent.Store(r.Header.Get("User-Agent"))
		s.accept.Store(r.Header.Get("Accept"))
		p, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if p.redirect != "" {
			http.Redirect(w, r, p.redirect, http.StatusFound)
			return
		}
		if p.contentType == "-" {
			w.Header()["Content-Type"] = nil
		} else {
			w.Header().Set("Content-Type", p.contentType)
		}
		if p.status != 0 {
			w.WriteHeader(p.status)
		}
		fmt.Fprint(w, p.body)
	}))
	t.Cleanup(s.Close)
	return s
}

// testFetch is a web_fetch tool that may reach loopback test servers.
func testFetch(opts WebFetchOptions) *WebFetch {
	opts.HTTP.AllowPrivate = true
	return NewWebFetch(opts)
}

// checkContains fails t unless got, a call's what, contains each of want
// and none of absent.
func checkContains(t *testing.T, what, got string, want, absent []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s =\n%s\nwant it to contain %q", what, got, w)
		}
	}
	for _, a := range absent {
		if strings.Contains(got, a) {
			t.Errorf("%s =\n%s\nwant no %q", what, got, a)
		}
	}
}

func fetchArgs(u string, maxChars int) json.RawMessage {
	m := map[string]any{"url": u}
	if maxChars > 0 {
		m["max_chars"] = maxChars
	}
	b, _ := json.Marshal(m)
	return b
}

const articleHTML = `<!doctype html>
<html><head><title>Longhaul  Docs</title>
<script>document.write("tracking code")</script>
<style>body { color: red }</style></head>
<body>
<nav><a href="/">Home</a> <a href="/blog">Blog</a></nav>
<h1>Durable agents</h1>
<p>Agents survive <b>restarts</b>. Read the <a href="/guide/start">getting started guide</a>
or the <a href="https://temporal.io/docs">Temporal docs</a>.</p>
<h2>Features</h2>
<ul><li>Retries</li><li>Timeouts</li></ul>
<script>alert("dropped")</script>
<footer>© 2026 Longhaul</footer>
</body></html>`

func TestWebFetchContent(t *testing.T) {
	site := newTestSite(t, map[string]page{
		"/article":  {contentType: "text/html; charset=utf-8", body: articleHTML},
		"/xhtml":    {contentType: "application/xhtml+xml", body: `<html xmlns="http://www.w3.org/1999/xhtml"><head><title>X</title></head><body><p>xhtml body</p></body></html>`},
		"/notes":    {contentType: "text/plain; charset=utf-8", body: "  line one\nline two  \n"},
		"/readme":   {contentType: "text/markdown", body: "# Readme\n\n- item"},
		"/data":     {contentType: "application/json", body: `{"answer": 42}`},
		"/problem":  {contentType: "application/problem+json", body: `{"title": "nope"}`},
		"/csv":      {contentType: "text/csv", body: "a,b\n1,2"},
		"/latin1":   {contentType: "text/plain; charset=iso-8859-1", body: "caf\xe9"},
		"/cp1252":   {contentType: "text/html", body: `<html><head><meta charset="windows-1252"><title>Caf` + "\xe9" + `</title></head><body><p>na` + "\xefve" + `</p></body></html>`},
		"/sniffed":  {contentType: "-", body: "<html><head><title>Sniffed</title></head><body><p>no header</p></body></html>"},
		"/empty":    {contentType: "text/html", body: "<html><body><script>only()</script></body></html>"},
		"/old":      {redirect: "/notes"},
		"/untitled": {contentType: "text/html", body: "<p>just text</p>"},
		"/xml":      {contentType: "application/xml", body: `<?xml version="1.0"?><note>hi</note>`},
		"/feed":     {contentType: "application/rss+xml; charset=utf-8", body: `<rss><channel><title>Feed</title></channel></rss>`},
		"/textxml":  {contentType: "text/xml", body: `<a>b</a>`},
		"/sniffxml": {contentType: "-", body: `<?xml version="1.0"?><doc>sniffed xml</doc>`},
	})
	host := strings.TrimPrefix(site.URL, "http://")
	tests := []struct {
		path   string
		want   []string
		absent []string
		first  string // the first line
	}{
		{
			path:  "/article",
			first: "Title: Longhaul Docs",
			want: []string{
				"URL: " + site.URL + "/article\n",
				"# Durable agents",
				"Agents survive **restarts**. Read the [getting started guide](" + site.URL + "/guide/start) or the [Temporal docs](https://temporal.io/docs).",
				"## Features",
				"- Retries\n- Timeouts",
			},
			absent: []string{"tracking code", "dropped", "color: red", "Home", "Blog", "© 2026", "Content-Type"},
		},
		{path: "/xhtml", first: "Title: X", want: []string{"xhtml body"}},
		{path: "/notes", first: "URL: " + site.URL + "/notes", want: []string{"Content-Type: text/plain\n\nline one\nline two"}},
		{path: "/readme", want: []string{"Content-Type: text/markdown", "# Readme\n\n- item"}},
		{path: "/data", want: []string{"Content-Type: application/json", `{"answer": 42}`}},
		{path: "/problem", want: []string{`{"title": "nope"}`}},
		{path: "/csv", want: []string{"a,b\n1,2"}},
		{path: "/latin1", want: []string{"café"}},
		{path: "/cp1252", first: "Title: Café", want: []string{"naïve"}},
		{path: "/sniffed", first: "Title: Sniffed", want: []string{"no header"}},
		{path: "/empty", want: []string{"(the page has no readable text)"}, absent: []string{"only()"}},
		{path: "/old", want: []string{"URL: " + site.URL + "/notes", "line one"}},
		{path: "/untitled", first: "URL: " + site.URL + "/untitled", want: []string{"just text"}},
		{path: "/xml", want: []string{"Content-Type: application/xml\n", `<note>hi</note>`}},
		{path: "/feed", want: []string{"Content-Type: application/rss+xml\n", "<title>Feed</title>"}},
		{path: "/textxml", want: []string{"Content-Type: text/xml\n", "<a>b</a>"}},
		{path: "/sniffxml", want: []string{"Content-Type: text/xml\n", "<doc>sniffed xml</doc>"}},
	}
	tool := testFetch(WebFetchOptions{})
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			res, err := tool.Call(context.Background(), Call{ID: "c1", Arguments: fetchArgs(site.URL+tt.path, 0)})
			if err != nil {
				t.Fatalf("Call error = %v", err)
			}
			checkContains(t, "Content", res.Content, tt.want, tt.absent)
			if first, _, _ := strings.Cut(res.Content, "\n"); tt.first != "" && first != tt.first {
				t.Errorf("first line = %q, want %q", first, tt.first)
			}
			if res.Truncated {
				t.Error("Truncated = true")
			}
			if res.Target != host {
				t.Errorf("Target = %q, want %q", res.Target, host)
			}
		})
	}
	if ua, _ := site.userAgent.Load().(string); ua != DefaultUserAgent {
		t.Errorf("User-Agent = %q, want %q", ua, DefaultUserAgent)
	}
	accept, _ := site.accept.Load().(string)
	for _, typ := range []string{"text/html", "text/plain", "application/json"} {
		if !strings.Contains(accept, typ) {
			t.Errorf("Accept = %q, want it to include %s", accept, typ)
		}
	}
}

// clutteredArticle is a page whose main content readability must find
// among navigation, a sidebar, share buttons and comments.
var clutteredArticle = `<!doctype html>
<html><head><title>How durable agents work | Longhaul Blog</title>
<meta name="author" content="Ann Writer">
<meta property="article:published_time" content="2026-03-01T10:00:00Z">
</head><body>
<header><div class="menu"><a href="/">Home</a> <a href="/pricing">Pricing</a> <a href="/login">Log in</a></div></header>
<div class="sidebar"><h3>Popular posts</h3><ul><li><a href="/p/1">Ten tips for caching</a></li><li><a href="/p/2">Why we love queues</a></li></ul></div>
<article>
<h1>How durable agents work</h1>
<p>A durable agent keeps its state in workflow history, so that a crash of the worker loses nothing.
Each call to the model is an activity, and each tool call is another one; Temporal retries them
when they fail and records their results once they succeed, which makes the whole conversation
replayable from the beginning.</p>
<p>Tools that touch the network are the dangerous part. A model can be talked into fetching an
internal address, so every request goes through a guard that checks the address after DNS
resolution. Read <a href="/docs/safety">the safety notes</a> for the details of that guard.</p>
<h2>What survives a restart</h2>
<ul><li>The messages of the conversation</li><li>The results of finished tool calls</li></ul>
<p>Everything else is recomputed when the workflow replays, which is cheap because nothing is
called again: the recorded results are used instead of new calls to the model or the tools.</p>
</article>
<div class="share social"><a href="https://twitter.example/share">Share on social</a></div>
<div id="comments" class="comments"><p>First comment! Great post, thanks.</p></div>
<footer>© 2026 Longhaul · <a href="/imprint">Imprint</a></footer>
</body></html>`

func TestWebFetchReadability(t *testing.T) {
	site := newTestSite(t, map[string]page{"/post": {contentType: "text/html; charset=utf-8", body: clutteredArticle}})
	res, err := testFetch(WebFetchOptions{}).Call(context.Background(), Call{Arguments: fetchArgs(site.URL+"/post", 0)})
	if err != nil {
		t.Fatal(err)
	}
	wantHeader := "Title: How durable agents work | Longhaul Blog\nURL: " + site.URL + "/post\nAuthor: Ann Writer\nPublished: 2026-03-01\n\n"
	if !strings.HasPrefix(res.Content, wantHeader) {
		t.Errorf("Content =\n%s\nwant it to start with\n%s", res.Content, wantHeader)
	}
	for _, want := range []string{
		"A durable agent keeps its state in workflow history",
		"Read [the safety notes](" + site.URL + "/docs/safety) for the details",
		"## What survives a restart",
		"- The messages of the conversation\n- The results of finished tool calls",
		"the recorded results are used instead",
	} {
		if !strings.Contains(res.Content, want) {
			t.Errorf("Content =\n%s\nwant it to contain %q", res.Content, want)
		}
	}
	for _, clutter := range []string{"Pricing", "Log in", "Popular posts", "Ten tips", "Share on social", "First comment", "Imprint", "© 2026"} {
		if strings.Contains(res.Content, clutter) {
			t.Errorf("Content =\n%s\nwant no %q", res.Content, clutter)
		}
	}
}

func TestWebFetchErrors(t *testing.T) {
	site := newTestSite(t, map[string]page{
		"/image":    {contentType: "image/png", body: "\x89PNG\r\n\x1a\n"},
		"/pdf":      {contentType: "application/pdf", body: "%PDF-1.4"},
		"/sniffpdf": {contentType: "-", body: "%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj"},
		"/svg":      {contentType: "image/svg+xml", body: "<svg/>"},
		"/zip":      {contentType: "application/zip", body: "PK\x03\x04"},
		"/video":    {contentType: "video/mp4", body: "...."},
		"/binary":   {contentType: "-", body: "\x00\x01\x02\x03binary"},
		"/broken":   {contentType: "text/html", status: http.StatusInternalServerError, body: "oops"},
		"/loop":     {redirect: "/loop"},
		"/to-file":  {redirect: "file:///etc/passwd"},
	})
	tests := []struct {
		path    string
		wantErr error
		want    string
	}{
		{"/image", ErrUnsupportedContentType, `"image/png"`},
		{"/pdf", ErrUnsupportedContentType, `unsupported content type "application/pdf": only HTML, XHTML, text, JSON and XML can be read`},
		{"/sniffpdf", ErrUnsupportedContentType, `"application/pdf"`},
		{"/svg", ErrUnsupportedContentType, `"image/svg+xml"`},
		{"/zip", ErrUnsupportedContentType, `"application/zip"`},
		{"/video", ErrUnsupportedContentType, `"video/mp4"`},
		{"/binary", ErrUnsupportedContentType, `"application/octet-stream"`},
		{"/missing", ErrHTTPStatus, "404 Not Found"},
		{"/broken", ErrHTTPStatus, "500 Internal Server Error"},
		{"/loop", safehttp.ErrTooManyRedirects, "too many redirects: stopped after 5"},
		{"/to-file", safehttp.ErrBlocked, `scheme "file" is not allowed`},
	}
	tool := testFetch(WebFetchOptions{})
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			_, err := tool.Call(context.Background(), Call{Arguments: fetchArgs(site.URL+tt.path, 0)})
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Call error = %v, want %v", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestWebFetchTruncation(t *testing.T) {
	long := strings.Repeat("abcdefghi ", 500) // 5000 characters
	site := newTestSite(t, map[string]page{
		"/long": {contentType: "text/plain", body: long},
		"/html": {contentType: "text/html", body: "<title>Big</title><p>" + long + "</p>"},
		"/utf8": {contentType: "text/plain", body: strings.Repeat("é", 100)},
	})
	tests := []struct {
		name          string
		opts          WebFetchOptions
		path          string
		maxChars      int
		want          []string
		wantTruncated bool
		maxTextRunes  int
	}{
		{
			name: "max_chars", path: "/long", maxChars: 100,
			want:          []string{"\n\n[truncated: page was 4999 characters]"},
			wantTruncated: true, maxTextRunes: 100,
		},
		{
			name: "default max chars from options", opts: WebFetchOptions{MaxChars: 50}, path: "/long",
			want:          []string{"[truncated: page was 4999 characters]"},
			wantTruncated: true, maxTextRunes: 50,
		},
		{
			name: "max_chars beyond the page", path: "/long", maxChars: 10000,
			wantTruncated: false, maxTextRunes: 5000,
		},
		{
			name: "body byte cap", opts: WebFetchOptions{MaxBodyBytes: 1000}, path: "/long",
			want:          []string{"\n\n[truncated: the response was larger than 1000 bytes; only the first 1000 bytes were read]"},
			wantTruncated: true, maxTextRunes: 1000,
		},
		{
			name: "both caps", opts: WebFetchOptions{MaxBodyBytes: 1000}, path: "/html", maxChars: 200,
			want:          []string{"Title: Big", "[truncated: page was more than", "only the first 1000 bytes of the response were read]"},
			wantTruncated: true, maxTextRunes: 200,
		},
		{
			name: "cut inside a multi-byte character", opts: WebFetchOptions{MaxBodyBytes: 51}, path: "/utf8",
			want:          []string{"[truncated: the response was larger than 51 bytes"},
			wantTruncated: true, maxTextRunes: 25,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := testFetch(tt.opts).Call(context.Background(), Call{Arguments: fetchArgs(site.URL+tt.path, tt.maxChars)})
			if err != nil {
				t.Fatalf("Call error = %v", err)
			}
			if res.Truncated != tt.wantTruncated {
				t.Errorf("Truncated = %v, want %v", res.Truncated, tt.wantTruncated)
			}
			checkContains(t, "Content", res.Content, tt.want, nil)
			_, text, _ := strings.Cut(res.Content, "\n\n")
			text, _, _ = strings.Cut(text, "\n\n[truncated")
			if n := len([]rune(text)); n > tt.maxTextRunes {
				t.Errorf("page text has %d characters, want at most %d", n, tt.maxTextRunes)
			}
			if !utf8.ValidString(res.Content) || strings.ContainsRune(res.Content, utf8.RuneError) {
				t.Errorf("Content %q is not valid UTF-8", res.Content)
			}
		})
	}
}
