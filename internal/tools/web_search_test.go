package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// searxResults is a SearXNG /search?format=json answer as a recent
// instance sends it: typed answers are objects, results carry engine
// bookkeeping the tool ignores, publishedDate is ISO 8601 or null.
const searxResults = `{
  "query": "temporal durable execution",
  "number_of_results": 0,
  "results": [
    {
      "url": "https://temporal.io/blog/durable-execution",
      "title": "What is  Durable Execution?",
      "content": "Durable execution is a way of running code so that it survives crashes,\n restarts and deploys.",
      "publishedDate": "2025-04-03T09:30:00",
      "thumbnail": "",
      "engine": "brave",
      "template": "default.html",
      "parsed_url": ["https", "temporal.io", "/blog/durable-execution", "", "", ""],
      "img_src": "",
      "priority": "",
      "engines": ["brave", "duckduckgo"],
      "positions": [1, 2],
      "score": 4.0,
      "category": "general"
    },
    {
      "url": "https://docs.temporal.io/",
      "title": "Temporal Docs",
      "content": "` + "Learn how Temporal works. " + `",
      "publishedDate": null,
      "engine": "duckduckgo",
      "parsed_url": ["https", "docs.temporal.io", "/", "", "", ""],
      "engines": ["duckduckgo"],
      "positions": [3],
      "score": 0.33,
      "category": "general"
    },
    {
      "url": "https://news.example.org/temporal-raises",
      "title": "Temporal raises a round",
      "content": "",
      "publishedDate": "2026-01-15T00:00:00+01:00",
      "engine": "bing news",
      "category": "news"
    }
  ],
  "answers": [
    {"url": "https://en.wikipedia.org/wiki/Temporal_(software)", "template": "answer/legacy.html", "engine": "wikipedia", "parsed_url": ["https", "en.wikipedia.org", "/wiki/Temporal_(software)", "", "", ""], "answer": "Temporal is an open-source durable execution platform."},
    {"template": "answer/weather.html", "engine": "wttr.in", "current": {"summary": "sunny"}},
    "An answer from an older SearXNG"
  ],
  "corrections": [],
  "infoboxes": [
    {
      "infobox": "Temporal Technologies",
      "id": "https://www.wikidata.org/wiki/Q123",
      "content": "Temporal Technologies is an American software company\n founded in 2019.",
      "img_src": null,
      "urls": [{"title": "Official website", "url": "https://temporal.io/", "official": true}],
      "attributes": [{"label": "Founded", "value": "2019", "entity": "P571"}],
      "engine": "wikidata",
      "engines": ["wikidata"]
    }
  ],
  "suggestions": ["temporal workflow", "temporal vs cadence"],
  "unresponsive_engines": [["google", "timeout"]]
}`

const wantSearxText = `Search results for "temporal durable execution"

Answer: Temporal is an open-source durable execution platform. (https://en.wikipedia.org/wiki/Temporal_(software))

Answer: An answer from an older SearXNG

Info box: Temporal Technologies
   Temporal Technologies is an American software company founded in 2019.
   https://www.wikidata.org/wiki/Q123

1. What is Durable Execution?
   https://temporal.io/blog/durable-execution
   Published: 2025-04-03
   Durable execution is a way of running code so that it survives crashes, restarts and deploys.

2. Temporal Docs
   https://docs.temporal.io/
   Learn how Temporal works.

3. Temporal raises a round
   https://news.example.org/temporal-raises
   Published: 2026-01-15`

// fakeSearx imitates a SearXNG instance: GET /search answers body with
// status, and every request's query is recorded.
type fakeSearx struct {
	*httptest.Server
	mu      sync.Mutex
	queries []url.Values
	paths   []string
	accept  string
}

func newFakeSearx(t *testing.T, status int, contentType, body string) *fakeSearx {
	t.Helper()
	f := &fakeSearx{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.queries = append(f.queries, r.URL.Query())
		f.paths = append(f.paths, r.URL.Path)
		f.accept = r.Header.Get("Accept")
		f.mu.Unlock()
		if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/search") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeSearx) last(t *testing.T) (string, url.Values) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.queries) == 0 {
		t.Fatal("the search server was not called")
	}
	return f.paths[len(f.paths)-1], f.queries[len(f.queries)-1]
}

func newTestSearch(t *testing.T, opts WebSearchOptions) *WebSearch {
	t.Helper()
	s, err := NewWebSearch(opts)
	if err != nil {
		t.Fatalf("NewWebSearch: %v", err)
	}
	return s
}

func search(t *testing.T, s *WebSearch, args string) (Result, error) {
	t.Helper()
	return s.Call(context.Background(), Call{ID: "c1", Arguments: json.RawMessage(args)})
}

func TestWebSearch(t *testing.T) {
	// The instance is on loopback: the operator's URL is not SSRF-checked.
	srv := newFakeSearx(t, http.StatusOK, "application/json", searxResults)
	tool := newTestSearch(t, WebSearchOptions{BaseURL: srv.URL})

	res, err := search(t, tool, `{"query":"  temporal durable execution "}`)
	if err != nil {
		t.Fatalf("Call error = %v", err)
	}
	if diff := cmp.Diff(wantSearxText, res.Content); diff != "" {
		t.Errorf("Content mismatch (-want +got):\n%s", diff)
	}
	if res.Target != "temporal durable execution" || res.Truncated {
		t.Errorf("Target, Truncated = %q, %v", res.Target, res.Truncated)
	}
	path, q := srv.last(t)
	if path != "/search" {
		t.Errorf("path = %q, want /search", path)
	}
	want := url.Values{"q": {"temporal durable execution"}, "format": {"json"}}
	if diff := cmp.Diff(want, q); diff != "" {
		t.Errorf("query parameters (-want +got):\n%s", diff)
	}
	if srv.accept != "application/json" {
		t.Errorf("Accept = %q, want application/json", srv.accept)
	}
}

func TestWebSearchParameters(t *testing.T) {
	srv := newFakeSearx(t, http.StatusOK, "application/json", searxResults)
	tests := []struct {
		name string
		opts WebSearchOptions
		args string
		want url.Values
	}{
		{
			name: "all arguments",
			args: `{"query":"go generics","time_range":"month","language":"de","page":2,"max_results":3}`,
			want: url.Values{"q": {"go generics"}, "format": {"json"}, "time_range": {"month"}, "language": {"de"}, "pageno": {"2"}},
		},
		{
			name: "operator defaults",
			opts: WebSearchOptions{Categories: "general,news", Language: "en"},
			args: `{"query":"go"}`,
			want: url.Values{"q": {"go"}, "format": {"json"}, "categories": {"general,news"}, "language": {"en"}},
		},
		{
			name: "the model's language wins",
			opts: WebSearchOptions{Language: "en"},
			args: `{"query":"go","language":"pt-BR","page":1}`,
			want: url.Values{"q": {"go"}, "format": {"json"}, "language": {"pt-BR"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.BaseURL = srv.URL
			if _, err := search(t, newTestSearch(t, tt.opts), tt.args); err != nil {
				t.Fatalf("Call error = %v", err)
			}
			_, q := srv.last(t)
			if diff := cmp.Diff(tt.want, q); diff != "" {
				t.Errorf("query parameters (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWebSearchBaseURL(t *testing.T) {
	srv := newFakeSearx(t, http.StatusOK, "application/json", `{"results":[]}`)
	for base, wantPath := range map[string]string{
		srv.URL:                    "/search",
		srv.URL + "/":              "/search",
		srv.URL + "/searx":         "/searx/search",
		srv.URL + "/searx/search":  "/searx/search",
		srv.URL + "/search?x=1#ab": "/search",
	} {
		if _, err := search(t, newTestSearch(t, WebSearchOptions{BaseURL: base}), `{"query":"q"}`); err != nil {
			t.Errorf("BaseURL %s: Call error = %v", base, err)
			continue
		}
		if path, q := srv.last(t); path != wantPath || q.Get("x") != "" {
			t.Errorf("BaseURL %s: requested %s?%s, want path %s", base, path, q.Encode(), wantPath)
		}
	}
	for _, base := range []string{"", "  ", "searxng:8080", "ftp://searx.example/", "http://", "://bad"} {
		if _, err := NewWebSearch(WebSearchOptions{BaseURL: base}); err == nil {
			t.Errorf("NewWebSearch(BaseURL %q) error = nil, want an error", base)
		}
	}
}

func TestWebSearchMaxResults(t *testing.T) {
	var results []string
	for i := 1; i <= 25; i++ {
		results = append(results, fmt.Sprintf(`{"url":"https://example.com/%d","title":"Result %d","content":"snippet %d"}`, i, i, i))
	}
	srv := newFakeSearx(t, http.StatusOK, "application/json", `{"results":[`+strings.Join(results, ",")+`]}`)
	tests := []struct {
		name string
		opts WebSearchOptions
		args string
		want int
	}{
		{"default", WebSearchOptions{}, `{"query":"q"}`, DefaultSearchResults},
		{"argument", WebSearchOptions{}, `{"query":"q","max_results":2}`, 2},
		{"argument at the limit", WebSearchOptions{}, `{"query":"q","max_results":20}`, MaxSearchResults},
		{"option", WebSearchOptions{MaxResults: 3}, `{"query":"q"}`, 3},
		{"option above the limit", WebSearchOptions{MaxResults: 50}, `{"query":"q"}`, MaxSearchResults},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.BaseURL = srv.URL
			res, err := search(t, newTestSearch(t, tt.opts), tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(res.Content, fmt.Sprintf("\n%d. Result %d\n   https://example.com/%d\n   snippet %d", tt.want, tt.want, tt.want, tt.want)) ||
				strings.Contains(res.Content, fmt.Sprintf("\n%d. ", tt.want+1)) {
				t.Errorf("Content =\n%s\nwant exactly %d results", res.Content, tt.want)
			}
		})
	}
}

func TestWebSearchFormatting(t *testing.T) {
	long := strings.Repeat("word ", 200)
	tests := []struct {
		name   string
		body   string
		want   []string
		absent []string
	}{
		{
			name: "no results",
			body: `{"results":[],"answers":[],"infoboxes":[],"suggestions":["go lang","golang"],"unresponsive_engines":[["google","timeout"],["brave","Suspended: too many requests"]]}`,
			want: []string{`Search results for "q"` + "\n\nNo results. Suggested queries: \"go lang\", \"golang\". Search engines that failed: google (timeout), brave (Suspended: too many requests)."},
		},
		{
			name: "bare minimum",
			body: `{"results":[]}`,
			want: []string{"\n\nNo results."},
		},
		{
			name:   "long snippet is clipped",
			body:   `{"results":[{"url":"https://a.example/","title":"A","content":"` + long + `"}]}`,
			want:   []string{"1. A\n   https://a.example/\n   word word", "word…"},
			absent: []string{long},
		},
		{
			name: "odd items are skipped, not fatal",
			body: `{"results":[{"url":"https://a.example/","title":42,"content":{"x":1},"publishedDate":"last week"},{"title":"no url"},null,"text",{"url":"https://b.example/","title":"B","pubdate":"2024-02-03 04:05:06+0000"}],
				"answers":[7,{"answer":""}],"infoboxes":[{"infobox":"Box","urls":"not a list"},{"infobox":"Box 2","id":"Q1","urls":[{"title":"site","url":"https://box.example/"}]}],
				"suggestions":{"not":"a list"},"unresponsive_engines":"none"}`,
			want: []string{
				"1. (no title)\n   https://a.example/\n   Published: last week\n",
				"2. B\n   https://b.example/\n   Published: 2024-02-03",
				"Info box: Box 2\n   https://box.example/",
			},
			absent: []string{"Answer:", "no url", "3. "},
		},
		{
			name: "published dates",
			body: `{"results":[{"url":"https://a.example/","title":"A","publishedDate":"2023-12-31T23:59:59.123456+00:00"},{"url":"https://b.example/","title":"B","publishedDate":"2022-06-01"}]}`,
			want: []string{"Published: 2023-12-31", "Published: 2022-06-01"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeSearx(t, http.StatusOK, "application/json", tt.body)
			res, err := search(t, newTestSearch(t, WebSearchOptions{BaseURL: srv.URL}), `{"query":"q"}`)
			if err != nil {
				t.Fatalf("Call error = %v", err)
			}
			checkContains(t, "Content", res.Content, tt.want, tt.absent)
		})
	}
}

func TestWebSearchErrors(t *testing.T) {
	tests := []struct {
		name        string
		status      int
		contentType string
		body        string
		wantErr     error
		want        []string
	}{
		{
			name: "json format disabled", status: http.StatusForbidden, contentType: "text/html",
			body:    "<html><body><h1>403 Forbidden</h1></body></html>",
			wantErr: ErrSearchJSONDisabled,
			want:    []string{"403 Forbidden", "search.formats", "settings.yml", "json"},
		},
		{
			name: "server error", status: http.StatusInternalServerError, contentType: "text/plain",
			body:    "engine crashed: " + strings.Repeat("x", 1000),
			wantErr: ErrHTTPStatus,
			want:    []string{"500 Internal Server Error", `"engine crashed: xxx`, "…"},
		},
		{
			name: "too many requests", status: http.StatusTooManyRequests, contentType: "text/plain",
			body:    "",
			wantErr: ErrHTTPStatus,
			want:    []string{"429 Too Many Requests", "(empty body)"},
		},
		{
			name: "not JSON", status: http.StatusOK, contentType: "text/html",
			body: "<html>login page</html>",
			want: []string{"web_search: the response (text/html) is not SearXNG JSON", "login page"},
		},
		{
			name: "JSON but not SearXNG", status: http.StatusOK, contentType: "application/json",
			body: `{"hits":[]}`,
			want: []string{`no "results" array`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeSearx(t, tt.status, tt.contentType, tt.body)
			_, err := search(t, newTestSearch(t, WebSearchOptions{BaseURL: srv.URL}), `{"query":"q"}`)
			if err == nil {
				t.Fatal("Call error = nil")
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("Call error = %v, want %v", err, tt.wantErr)
			}
			checkContains(t, "error", err.Error(), tt.want, nil)
			if len(err.Error()) > 600 {
				t.Errorf("error is %d bytes long, want a short excerpt", len(err.Error()))
			}
		})
	}

	// An instance that is down.
	srv := newFakeSearx(t, http.StatusOK, "application/json", searxResults)
	tool := newTestSearch(t, WebSearchOptions{BaseURL: srv.URL})
	srv.Close()
	if _, err := search(t, tool, `{"query":"q"}`); err == nil || !strings.HasPrefix(err.Error(), "web_search: ") {
		t.Errorf("Call error = %v, want a web_search error", err)
	}
}

func TestWebSearchBadArguments(t *testing.T) {
	srv := newFakeSearx(t, http.StatusOK, "application/json", searxResults)
	tool := newTestSearch(t, WebSearchOptions{BaseURL: srv.URL})
	tests := []badArgs{
		{`{}`, `argument "query": required`},
		{`{"query":""}`, `argument "query": must be at least 1 characters long`},
		{`{"query":"   "}`, `argument "query": must not be blank`},
		{`{"query":7}`, `argument "query": must be a string`},
		{`{"query":"q","max_results":0}`, `argument "max_results": must be >= 1`},
		{`{"query":"q","max_results":21}`, `argument "max_results": must be <= 20`},
		{`{"query":"q","time_range":"decade"}`, `argument "time_range"`},
		{`{"query":"q","language":"en us"}`, `argument "language": "en us" is not a language code`},
		{`{"query":"q","language":"e"}`, `argument "language": must be at least 2 characters long`},
		{`{"query":"q","language":"12"}`, `argument "language": "12" is not a language code`},
		{`{"query":"q","language":"en-"}`, `argument "language": "en-" is not a language code`},
		{`{"query":"q","page":0}`, `argument "page": must be >= 1`},
		{`{"query":"q","engines":"google"}`, `argument "engines": unknown argument`},
		{`nope`, "not valid JSON"},
	}
	checkBadArguments(t, tool, tests)
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if len(srv.queries) != 0 {
		t.Errorf("bad arguments reached the search server %d times", len(srv.queries))
	}
}

func TestWebSearchDefinition(t *testing.T) {
	tool := newTestSearch(t, WebSearchOptions{BaseURL: "http://searxng:8080"})
	checkDefinition(t, tool, WebSearchName)
	if !strings.Contains(string(tool.Parameters()), "Defaults to 8") {
		t.Errorf("Parameters() = %s, want the default max_results documented", tool.Parameters())
	}
	if _, err := NewRegistry(tool, NewWebFetch(WebFetchOptions{})); err != nil {
		t.Errorf("NewRegistry(web_search, web_fetch): %v", err)
	}

	var _ Targeter = tool
	tests := []struct {
		args, want string
	}{
		{`{"query":"  go   generics "}`, "go generics"},
		{`{"query":"` + strings.Repeat("a", 150) + `"}`, strings.Repeat("a", 99) + "…"},
		{`{}`, ""},
		{`garbage`, ""},
	}
	for _, tt := range tests {
		if got := tool.Target(json.RawMessage(tt.args)); got != tt.want {
			t.Errorf("Target(%s) = %q, want %q", tt.args, got, tt.want)
		}
	}
}
