package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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
			for _, w := range tt.want {
				if !strings.Contains(res.Content, w) {
					t.Errorf("Content =\n%s\nwant it to contain %q", res.Content, w)
				}
			}
			for _, a := range tt.absent {
				if strings.Contains(res.Content, a) {
					t.Errorf("Content =\n%s\nwant no %q", res.Content, a)
				}
			}
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
			for _, w := range tt.want {
				if !strings.Contains(res.Content, w) {
					t.Errorf("Content = %q, want it to contain %q", res.Content, w)
				}
			}
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

// TestWebFetchRefusesSSRF makes real web_fetch calls through the real
// safehttp guard. The only destination let through is the redirecting
// test server (by its exact address, safehttp.Options.AllowAddrs); every
// other destination meets the production policy, and is refused before
// any connection is made.
func TestWebFetchRefusesSSRF(t *testing.T) {
	var secretHits atomic.Int32
	secret := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secretHits.Add(1)
		fmt.Fprint(w, "internal secret")
	}))
	defer secret.Close()
	secretPort := secret.Listener.Addr().(*net.TCPAddr).Port

	site := newTestSite(t, map[string]page{
		"/ok":          {contentType: "text/plain", body: "public page"},
		"/to-private":  {redirect: "http://10.0.0.1/"},
		"/to-metadata": {redirect: "http://169.254.169.254/latest/meta-data/"},
		"/to-loopback": {redirect: "http://127.0.0.1/admin"},
		"/to-v6":       {redirect: "http://[::1]/"},
		"/to-name":     {redirect: "http://localhost/"},
		"/to-secret":   {redirect: secret.URL + "/"},
		"/to-port":     {redirect: "http://example.com:8080/"},
		"/to-file":     {redirect: "file:///etc/passwd"},
		"/to-ftp":      {redirect: "ftp://example.com/"},
	})
	tool := NewWebFetch(WebFetchOptions{HTTP: safehttp.Options{
		AllowAddrs: []netip.AddrPort{netip.MustParseAddrPort(site.Listener.Addr().String())},
	}})

	tests := []struct {
		name string
		url  string
		want string
	}{
		{"loopback v4", "http://127.0.0.1/", "127.0.0.1:80 is a loopback address"},
		{"loopback v6", "http://[::1]/", "[::1]:80 is a loopback address"},
		{"cloud metadata", "http://169.254.169.254/latest/meta-data/", "169.254.169.254:80 is a link-local address (cloud metadata endpoint)"},
		{"private", "http://10.0.0.1/", "10.0.0.1:80 is a private address"},
		{"name resolving to loopback", "http://localhost/", "is a loopback address"},
		{"scheme-less name resolving to loopback", "localhost/x", "is a loopback address"},
		{"non-default port", "http://example.com:8080/", "example.com:8080: port 8080 is not allowed (allowed: 80, 443)"},
		{"non-default port on a listening loopback server", secret.URL + "/", fmt.Sprintf("port %d is not allowed", secretPort)},
		{"redirect to private", site.URL + "/to-private", "10.0.0.1:80 is a private address"},
		{"redirect to metadata", site.URL + "/to-metadata", "cloud metadata endpoint"},
		{"redirect to loopback", site.URL + "/to-loopback", "127.0.0.1:80 is a loopback address"},
		{"redirect to loopback v6", site.URL + "/to-v6", "[::1]:80 is a loopback address"},
		{"redirect to a name resolving to loopback", site.URL + "/to-name", "is a loopback address"},
		{"redirect to a listening loopback server", site.URL + "/to-secret", fmt.Sprintf("redirect refused: 127.0.0.1:%d: port %d is not allowed", secretPort, secretPort)},
		{"redirect to non-default port", site.URL + "/to-port", "redirect refused: example.com:8080: port 8080 is not allowed"},
		{"redirect to file", site.URL + "/to-file", `redirect refused: scheme "file" is not allowed`},
		{"redirect to ftp", site.URL + "/to-ftp", `redirect refused: scheme "ftp" is not allowed`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tool.Call(context.Background(), Call{Arguments: fetchArgs(tt.url, 0)})
			if !errors.Is(err, safehttp.ErrBlocked) {
				t.Fatalf("Call(%s) error = %v, want safehttp.ErrBlocked", tt.url, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Call(%s) error = %q, want it to contain %q", tt.url, err, tt.want)
			}
			if strings.HasPrefix(tt.url, site.URL) && !strings.Contains(err.Error(), "reached by a redirect from "+tt.url) {
				t.Errorf("Call(%s) error = %q, want it to name the redirect", tt.url, err)
			}
		})
	}
	if n := secretHits.Load(); n != 0 {
		t.Errorf("the internal server was reached %d times", n)
	}

	// The table is not vacuous: the allowed server itself is fetched.
	res, err := tool.Call(context.Background(), Call{Arguments: fetchArgs(site.URL+"/ok", 0)})
	if err != nil || !strings.Contains(res.Content, "public page") {
		t.Errorf("Call(allowed server) = %q, %v; want the page", res.Content, err)
	}

	// The production configuration refuses the test server too.
	_, err = NewWebFetch(WebFetchOptions{}).Call(context.Background(), Call{Arguments: fetchArgs(site.URL+"/ok", 0)})
	if !errors.Is(err, safehttp.ErrBlocked) {
		t.Errorf("Call(test server) with the production configuration error = %v, want safehttp.ErrBlocked", err)
	}
}

func TestWebFetchAllowedPorts(t *testing.T) {
	tool := NewWebFetch(WebFetchOptions{AllowedPorts: []int{8080}})
	tests := []struct {
		url  string
		want string
	}{
		// Port 80 is no longer allowed: refused by the URL check.
		{"http://127.0.0.2/", "127.0.0.2: port 80 is not allowed (allowed: 8080)"},
		{"https://127.0.0.2/", "127.0.0.2: port 443 is not allowed (allowed: 8080)"},
		// Port 8080 passes the URL check; the address is still refused when dialed.
		{"http://127.0.0.2:8080/", "127.0.0.2:8080 is a loopback address"},
	}
	for _, tt := range tests {
		_, err := tool.Call(context.Background(), Call{Arguments: fetchArgs(tt.url, 0)})
		if !errors.Is(err, safehttp.ErrBlocked) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Call(%s) error = %v, want ErrBlocked saying %q", tt.url, err, tt.want)
		}
	}

	for _, ports := range [][]int{{0}, {80, 65536}, {-443}} {
		bad := NewWebFetch(WebFetchOptions{AllowedPorts: ports})
		_, err := bad.Call(context.Background(), Call{Arguments: fetchArgs("https://example.com/", 0)})
		if !errors.Is(err, ErrMisconfigured) || !strings.Contains(err.Error(), "not in 1-65535") {
			t.Errorf("AllowedPorts %v: Call error = %v, want ErrMisconfigured", ports, err)
		}
	}
}

func TestWebFetchBadArguments(t *testing.T) {
	tool := NewWebFetch(WebFetchOptions{})
	tests := []badArgs{
		{`{}`, `argument "url": required`},
		{`{"url":""}`, `argument "url": must be at least 1 characters long`},
		{`{"url":42}`, `argument "url": must be a string`},
		{`{"url":"https://example.com","max_chars":0}`, `argument "max_chars": must be >= 1`},
		{`{"url":"https://example.com","max_chars":1000001}`, `argument "max_chars": must be <= 100000`},
		{`{"url":"https://example.com","max_chars":"10"}`, `argument "max_chars": must be an integer`},
		{`{"url":"https://example.com","headers":{}}`, `argument "headers": unknown argument (allowed: max_chars, url)`},
		{`{"url":"file:///etc/passwd"}`, `scheme "file" is not supported`},
		{`{"url":"gopher://example.com/"}`, `scheme "gopher" is not supported`},
		{`{"url":"javascript:alert(1)"}`, `scheme "javascript" is not supported`},
		{`{"url":"https://"}`, "has no host"},
		{`{"url":"http://[::1"}`, `argument "url"`},
		{`not json`, "not valid JSON"},
	}
	checkBadArguments(t, tool, tests)
}

func TestWebFetchTarget(t *testing.T) {
	tool := NewWebFetch(WebFetchOptions{})
	var _ Targeter = tool
	tests := []struct {
		args string
		want string
	}{
		{`{"url":"https://example.com/a/b?q=1"}`, "example.com"},
		{`{"url":"http://example.com:8080/"}`, "example.com:8080"},
		{`{"url":"example.org/page"}`, "example.org"},
		{`{"url":"localhost:3000/x"}`, "localhost:3000"},
		{`{"url":"file:///etc/passwd"}`, ""},
		{`{"url":5}`, ""},
		{`{}`, ""},
		{`garbage`, ""},
	}
	for _, tt := range tests {
		if got := tool.Target(json.RawMessage(tt.args)); got != tt.want {
			t.Errorf("Target(%s) = %q, want %q", tt.args, got, tt.want)
		}
	}
}

func TestParseFetchURL(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"https://example.com/a#frag", "https://example.com/a"},
		{"  http://example.com  ", "http://example.com"},
		{"example.com", "https://example.com"},
		{"example.com:8443/x", "https://example.com:8443/x"},
		{"HTTPS://Example.com/", "https://Example.com/"},
	}
	for _, tt := range tests {
		u, err := parseFetchURL(tt.in)
		if err != nil {
			t.Errorf("parseFetchURL(%q) error = %v", tt.in, err)
			continue
		}
		if u.String() != tt.want {
			t.Errorf("parseFetchURL(%q) = %q, want %q", tt.in, u, tt.want)
		}
	}
	for _, in := range []string{"", "mailto:a@b.c", "ftp://x/", "data:text/plain,hi", "//example.com"} {
		if _, err := parseFetchURL(in); !errors.Is(err, ErrInvalidArguments) {
			t.Errorf("parseFetchURL(%q) error = %v, want ErrInvalidArguments", in, err)
		}
	}
}

func TestWebFetchProgress(t *testing.T) {
	body := strings.Repeat("x", 300<<10)
	site := newTestSite(t, map[string]page{"/big": {contentType: "text/plain", body: body}})
	var mu sync.Mutex
	var messages []string
	var fractions []float64
	call := Call{
		Arguments: fetchArgs(site.URL+"/big", 10),
		Progress: func(message string, progress float64) {
			mu.Lock()
			defer mu.Unlock()
			messages = append(messages, message)
			fractions = append(fractions, progress)
		},
	}
	if _, err := testFetch(WebFetchOptions{}).Call(context.Background(), call); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	host := strings.TrimPrefix(site.URL, "http://")
	if len(messages) < 2 || messages[0] != "fetching "+host {
		t.Fatalf("progress messages = %q, want fetching %s first", messages, host)
	}
	if !strings.HasPrefix(messages[1], "reading ") || !strings.HasSuffix(messages[1], " KB") {
		t.Errorf("second message = %q, want reading N KB", messages[1])
	}
	if len(messages) > 10 {
		t.Errorf("%d progress reports for 300 KB, want few", len(messages))
	}
	for i := 1; i < len(fractions); i++ {
		if fractions[i] < fractions[i-1] || fractions[i] > 1 {
			t.Errorf("progress fractions %v are not increasing within [0, 1]", fractions)
			break
		}
	}
}

func TestWebFetchContextAndTimeout(t *testing.T) {
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer slow.Close()
	defer close(release)

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := testFetch(WebFetchOptions{}).Call(ctx, Call{Arguments: fetchArgs(slow.URL, 0)})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error = %v, want context.DeadlineExceeded", err)
	}

	tool := testFetch(WebFetchOptions{HTTP: safehttp.Options{Timeout: 100 * time.Millisecond}})
	_, err = tool.Call(context.Background(), Call{Arguments: fetchArgs(slow.URL, 0)})
	var uerr *url.Error
	if !errors.As(err, &uerr) || !uerr.Timeout() {
		t.Errorf("error = %v, want a client timeout", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("took %v, want the limits to apply", time.Since(start))
	}
}

func TestWebFetchDefinition(t *testing.T) {
	tool := NewWebFetch(WebFetchOptions{})
	if tool.Name() != WebFetchName || !ValidName(tool.Name()) {
		t.Errorf("Name() = %q", tool.Name())
	}
	if tool.Description() == "" {
		t.Error("Description() is empty")
	}
	if _, err := compileSchema(tool.Parameters()); err != nil {
		t.Errorf("Parameters() is not a valid schema: %v", err)
	}
	if !strings.Contains(string(tool.Parameters()), "Defaults to 20000") {
		t.Errorf("Parameters() = %s, want the default max_chars documented", tool.Parameters())
	}
}
