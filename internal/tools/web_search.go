package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/longhaul-dev/longhaul/internal/safehttp"
	"github.com/longhaul-dev/longhaul/internal/textcut"
)

// WebSearchName is the name of the web_search tool.
const WebSearchName = "web_search"

// Limits and defaults of web_search.
const (
	DefaultSearchResults = 8
	// MaxSearchResults is the largest max_results a model may ask for.
	MaxSearchResults     = 20
	DefaultSearchTimeout = 15 * time.Second
	// MaxSearchPage is the last result page a model may ask for.
	MaxSearchPage = 10
	// maxSearchBodyBytes caps the SearXNG response; a page of results is
	// tens of kilobytes.
	maxSearchBodyBytes = 4 << 20
	maxSnippetChars    = 300
	maxAnswerChars     = 500
	maxInfoboxChars    = 500
	maxAnswers         = 3
	maxInfoboxes       = 2
	maxSuggestions     = 5
	maxErrorExcerpt    = 200
)

// ErrSearchJSONDisabled is returned (wrapped) when the SearXNG instance
// refuses the JSON format, which it does with 403 Forbidden unless json is
// listed in search.formats of its settings.yml.
var ErrSearchJSONDisabled = errors.New("SearXNG JSON format is not enabled")

// WebSearchOptions configures NewWebSearch.
type WebSearchOptions struct {
	// BaseURL is the SearXNG instance (or a service answering the same
	// JSON API), such as "http://searxng:8080" or
	// "https://search.example.org/searx". The tool requests
	// BaseURL + "/search". It is the operator's setting, so it may name a
	// private or loopback host. Required.
	BaseURL string
	// HTTP is the client requests go through. Nil means a client that only
	// speaks http and https, bounds redirects and time (Timeout) and, the
	// URL being the operator's, does not refuse private addresses. The
	// URLs in results are only text: nothing fetches them.
	HTTP *http.Client
	// Timeout bounds one search when HTTP is nil. Zero means
	// DefaultSearchTimeout.
	Timeout time.Duration
	// MaxResults is how many results are returned when the model does not
	// say. Zero means DefaultSearchResults; it is capped at
	// MaxSearchResults.
	MaxResults int
	// Categories, when not empty, is sent as the categories parameter
	// (for example "general" or "general,news").
	Categories string
	// Language is sent as the language parameter when the model does not
	// give one (for example "en" or "all"). Empty leaves the instance's
	// default.
	Language string
	// UserAgent is sent with every request. Empty means DefaultUserAgent.
	UserAgent string
}

// WebSearch is the web_search tool: it queries a SearXNG instance's JSON
// API and returns the top results as a compact numbered list.
type WebSearch struct {
	client   *http.Client
	endpoint *url.URL
	opts     WebSearchOptions
	schema   json.RawMessage
}

// NewWebSearch returns a web_search tool configured by opts. A missing or
// unusable BaseURL is an error.
func NewWebSearch(opts WebSearchOptions) (*WebSearch, error) {
	endpoint, err := searchEndpoint(opts.BaseURL)
	if err != nil {
		return nil, err
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultSearchTimeout
	}
	if opts.MaxResults <= 0 {
		opts.MaxResults = DefaultSearchResults
	}
	opts.MaxResults = min(opts.MaxResults, MaxSearchResults)
	if opts.UserAgent == "" {
		opts.UserAgent = DefaultUserAgent
	}
	client := opts.HTTP
	if client == nil {
		client = safehttp.NewClient(safehttp.Options{Timeout: opts.Timeout, AllowPrivate: true})
	}
	schema := fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "query": {
      "type": "string",
      "minLength": 1,
      "maxLength": 500,
      "description": "What to search the web for. Search engine syntax such as quotes and site:example.com works with most engines."
    },
    "max_results": {
      "type": "integer",
      "minimum": 1,
      "maximum": %d,
      "description": "How many results to return. Defaults to %d."
    },
    "time_range": {
      "type": "string",
      "enum": ["day", "week", "month", "year"],
      "description": "Only return results published within this period."
    },
    "language": {
      "type": "string",
      "minLength": 2,
      "maxLength": 20,
      "description": "Language of the results as a code such as en, de or pt-BR, or all."
    },
    "page": {
      "type": "integer",
      "minimum": 1,
      "maximum": %d,
      "description": "The page of results, for more results on the same query. Defaults to 1."
    }
  },
  "required": ["query"],
  "additionalProperties": false
}`, MaxSearchResults, opts.MaxResults, MaxSearchPage)
	return &WebSearch{
		client:   client,
		endpoint: endpoint,
		opts:     opts,
		schema:   json.RawMessage(schema),
	}, nil
}

// searchEndpoint returns the URL of the search API under base. A base that
// already ends in /search is used as it is.
func searchEndpoint(base string) (*url.URL, error) {
	base = strings.TrimSpace(base)
	if base == "" {
		return nil, errors.New("web_search: the SearXNG base URL is empty")
	}
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("web_search: SearXNG base URL: %w", err)
	}
	if s := strings.ToLower(u.Scheme); s != "http" && s != "https" || u.Host == "" {
		return nil, fmt.Errorf("web_search: SearXNG base URL %q must be an http or https URL with a host", u.Redacted())
	}
	u.RawQuery, u.Fragment, u.RawFragment = "", "", ""
	if !strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/search") {
		u = u.JoinPath("search")
	}
	return u, nil
}

// Name implements Tool.
func (*WebSearch) Name() string { return WebSearchName }

// Description implements Tool.
func (*WebSearch) Description() string {
	return "Search the web and return the top results, each with its title, URL, a short snippet and the publication date when known, " +
		"plus direct answers and info boxes when the search engines give them. " +
		"Use it to find sources, then web_fetch a result's URL to read it in full."
}

// Parameters implements Tool.
func (w *WebSearch) Parameters() json.RawMessage { return w.schema }

type webSearchArgs struct {
	Query      string `json:"query"`
	MaxResults *int   `json:"max_results"`
	TimeRange  string `json:"time_range"`
	Language   string `json:"language"`
	Page       *int   `json:"page"`
}

// Target implements Targeter: it returns the query.
func (*WebSearch) Target(args json.RawMessage) string {
	var a webSearchArgs
	if err := json.Unmarshal(args, &a); err != nil {
		return ""
	}
	return textcut.Ellipsis(collapse(a.Query), 100)
}

// Call implements Tool.
func (w *WebSearch) Call(ctx context.Context, call Call) (Result, error) {
	if err := ValidateArguments(w.schema, call.Arguments); err != nil {
		return Result{}, err
	}
	var a webSearchArgs
	if err := json.Unmarshal(call.Arguments, &a); err != nil {
		return Result{}, fmt.Errorf("%w: %v", ErrInvalidArguments, err)
	}
	query := strings.TrimSpace(a.Query)
	if query == "" {
		return Result{}, fmt.Errorf(`%w: argument "query": must not be blank`, ErrInvalidArguments)
	}
	maxResults := w.opts.MaxResults
	if a.MaxResults != nil {
		maxResults = *a.MaxResults
	}
	page := 1
	if a.Page != nil {
		page = *a.Page
	}
	if a.Language != "" && !validLanguage(a.Language) {
		return Result{}, fmt.Errorf(`%w: argument "language": %q is not a language code such as en, de or pt-BR, or all`, ErrInvalidArguments, a.Language)
	}
	language := a.Language
	if language == "" {
		language = w.opts.Language
	}

	params := url.Values{"q": {query}, "format": {"json"}}
	if w.opts.Categories != "" {
		params.Set("categories", w.opts.Categories)
	}
	if language != "" {
		params.Set("language", language)
	}
	if a.TimeRange != "" {
		params.Set("time_range", a.TimeRange)
	}
	if page > 1 {
		params.Set("pageno", strconv.Itoa(page))
	}
	u := *w.endpoint
	u.RawQuery = params.Encode()

	call.report("searching", 0)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Result{}, fmt.Errorf("web_search: %w", err)
	}
	req.Header.Set("User-Agent", w.opts.UserAgent)
	req.Header.Set("Accept", "application/json")
	resp, err := w.client.Do(req)
	if err != nil {
		return Result{}, fmt.Errorf("web_search: %w", err)
	}
	defer resp.Body.Close()
	data, cut, err := safehttp.ReadLimited(resp.Body, maxSearchBodyBytes)
	if err != nil {
		return Result{}, fmt.Errorf("web_search: reading the response: %w", err)
	}

	switch {
	case resp.StatusCode == http.StatusForbidden:
		return Result{}, fmt.Errorf("web_search: %w: the instance answered %s; SearXNG does so when json is missing from search.formats in its settings.yml (add it: formats: [html, json]): %s",
			ErrSearchJSONDisabled, resp.Status, excerpt(data))
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return Result{}, fmt.Errorf("web_search: %w: %s: %s", ErrHTTPStatus, resp.Status, excerpt(data))
	case cut:
		return Result{}, fmt.Errorf("web_search: the response is larger than %d bytes", maxSearchBodyBytes)
	}
	sr, err := parseSearx(data)
	if err != nil {
		mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		return Result{}, fmt.Errorf("web_search: the response (%s) is not SearXNG JSON: %v: %s", mediaType, err, excerpt(data))
	}
	call.report("searching", 1)
	return Result{Content: formatSearch(query, page, maxResults, sr), Target: textcut.Ellipsis(collapse(query), 100)}, nil
}

// validLanguage reports whether s looks like a language tag SearXNG
// knows: letters, then hyphen-separated letters or digits ("en", "pt-BR",
// "zh-Hant-TW", "all").
func validLanguage(s string) bool {
	for i, part := range strings.Split(s, "-") {
		if part == "" || len(part) > 8 || i == 0 && len(part) < 2 {
			return false
		}
		for _, c := range part {
			letter := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
			if !letter && (i == 0 || c < '0' || c > '9') {
				return false
			}
		}
	}
	return true
}

// searxResponse is the part of SearXNG's JSON answer that web_search uses.
type searxResponse struct {
	Results             []searxResult
	Answers             []searxAnswer
	Infoboxes           []searxInfobox
	Suggestions         []string
	UnresponsiveEngines [][]looseString // [engine name, reason]
}

// parseSearx decodes a SearXNG JSON answer. It must be an object with a
// "results" array; each item of the lists is decoded on its own and
// skipped when it does not fit, so that one odd item from an engine cannot
// spoil the rest.
func parseSearx(data []byte) (*searxResponse, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, err
	}
	var results []json.RawMessage
	if err := json.Unmarshal(top["results"], &results); err != nil || top["results"] == nil {
		return nil, errors.New(`no "results" array`)
	}
	return &searxResponse{
		Results:             decodeEach[searxResult](results),
		Answers:             decodeEach[searxAnswer](rawList(top["answers"])),
		Infoboxes:           decodeEach[searxInfobox](rawList(top["infoboxes"])),
		Suggestions:         decodeEach[string](rawList(top["suggestions"])),
		UnresponsiveEngines: decodeEach[[]looseString](rawList(top["unresponsive_engines"])),
	}, nil
}

// rawList splits a JSON array into its items; anything else is empty.
func rawList(raw json.RawMessage) []json.RawMessage {
	var items []json.RawMessage
	_ = json.Unmarshal(raw, &items)
	return items
}

// decodeEach decodes the items that fit T and drops the others.
func decodeEach[T any](items []json.RawMessage) []T {
	out := make([]T, 0, len(items))
	for _, raw := range items {
		var v T
		if json.Unmarshal(raw, &v) == nil {
			out = append(out, v)
		}
	}
	return out
}

type searxResult struct {
	URL           looseString `json:"url"`
	Title         looseString `json:"title"`
	Content       looseString `json:"content"`
	PublishedDate looseString `json:"publishedDate"`
	Pubdate       looseString `json:"pubdate"`
}

type searxInfobox struct {
	Infobox looseString `json:"infobox"`
	ID      looseString `json:"id"`
	Content looseString `json:"content"`
	URLs    []struct {
		Title looseString `json:"title"`
		URL   looseString `json:"url"`
	} `json:"urls"`
}

// searxAnswer is an answer, which SearXNG gives as a plain string (before
// 2025) or as an object with an "answer" field and an optional "url".
type searxAnswer struct {
	Text string
	URL  string
}

func (a *searxAnswer) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		a.Text = s
		return nil
	}
	var o struct {
		Answer looseString `json:"answer"`
		URL    looseString `json:"url"`
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return err
	}
	a.Text, a.URL = string(o.Answer), string(o.URL)
	return nil // other answer types (translations, weather) have no text and are skipped
}

// looseString decodes a JSON string; any other value decodes as "".
type looseString string

func (s *looseString) UnmarshalJSON(b []byte) error {
	var v string
	if json.Unmarshal(b, &v) == nil {
		*s = looseString(v)
	} else {
		*s = ""
	}
	return nil
}

// formatSearch renders a SearXNG response as a compact numbered list.
func formatSearch(query string, page, maxResults int, sr *searxResponse) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Search results for %q", query)
	if page > 1 {
		fmt.Fprintf(&b, " (page %d)", page)
	}
	b.WriteString("\n")
	writeAnswers(&b, sr.Answers)
	writeInfoboxes(&b, sr.Infoboxes)
	if writeResults(&b, sr.Results, maxResults) == 0 {
		writeNoResults(&b, sr)
	}
	return strings.ToValidUTF8(strings.TrimRight(b.String(), "\n"), "\uFFFD")
}

// writeAnswers writes up to maxAnswers direct answers, each with its link.
func writeAnswers(b *strings.Builder, answers []searxAnswer) {
	n := 0
	for _, a := range answers {
		text := textcut.Ellipsis(collapse(a.Text), maxAnswerChars)
		if text == "" || n == maxAnswers {
			continue
		}
		n++
		fmt.Fprintf(b, "\nAnswer: %s", text)
		if link := collapse(string(a.URL)); link != "" {
			fmt.Fprintf(b, " (%s)", link)
		}
		b.WriteString("\n")
	}
}

// writeInfoboxes writes up to maxInfoboxes info boxes: title, content and
// the first http link among the box's id and URLs.
func writeInfoboxes(b *strings.Builder, infoboxes []searxInfobox) {
	n := 0
	for _, ib := range infoboxes {
		title := textcut.Ellipsis(collapse(string(ib.Infobox)), 200)
		content := textcut.Ellipsis(collapse(string(ib.Content)), maxInfoboxChars)
		if title == "" && content == "" || n == maxInfoboxes {
			continue
		}
		n++
		fmt.Fprintf(b, "\nInfo box: %s\n", title)
		if content != "" {
			fmt.Fprintf(b, "   %s\n", content)
		}
		link := collapse(string(ib.ID))
		if !strings.HasPrefix(link, "http") {
			link = ""
			for _, u := range ib.URLs {
				if l := collapse(string(u.URL)); strings.HasPrefix(l, "http") {
					link = l
					break
				}
			}
		}
		if link != "" {
			fmt.Fprintf(b, "   %s\n", link)
		}
	}
}

// writeResults writes up to maxResults numbered results that have a link
// and returns how many it wrote.
func writeResults(b *strings.Builder, results []searxResult, maxResults int) int {
	shown := 0
	for _, r := range results {
		link := collapse(string(r.URL))
		if link == "" {
			continue
		}
		if shown == maxResults {
			break
		}
		shown++
		title := textcut.Ellipsis(collapse(string(r.Title)), 200)
		if title == "" {
			title = "(no title)"
		}
		fmt.Fprintf(b, "\n%d. %s\n   %s\n", shown, title, link)
		if date := publishedDate(string(r.PublishedDate), string(r.Pubdate)); date != "" {
			fmt.Fprintf(b, "   Published: %s\n", date)
		}
		if snippet := textcut.Ellipsis(collapse(string(r.Content)), maxSnippetChars); snippet != "" {
			fmt.Fprintf(b, "   %s\n", snippet)
		}
	}
	return shown
}

// writeNoResults says there were no results, with SearXNG's suggested
// queries and the engines that failed.
func writeNoResults(b *strings.Builder, sr *searxResponse) {
	b.WriteString("\nNo results.")
	var suggestions []string
	for _, s := range sr.Suggestions {
		if s := collapse(s); s != "" && len(suggestions) < maxSuggestions {
			suggestions = append(suggestions, strconv.Quote(s))
		}
	}
	if len(suggestions) > 0 {
		fmt.Fprintf(b, " Suggested queries: %s.", strings.Join(suggestions, ", "))
	}
	if failed := unresponsive(sr.UnresponsiveEngines); failed != "" {
		fmt.Fprintf(b, " Search engines that failed: %s.", failed)
	}
	b.WriteString("\n")
}

// publishedDate returns the date of a SearXNG publishedDate (an ISO 8601
// date and time, with or without zone) as YYYY-MM-DD, falling back to the
// pubdate string, or the raw text when it does not parse.
func publishedDate(published, pubdate string) string {
	for _, s := range []string{published, pubdate} {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05-0700", "2006-01-02 15:04:05", time.DateOnly} {
			if t, err := time.Parse(layout, s); err == nil {
				return t.Format(time.DateOnly)
			}
		}
		return textcut.Ellipsis(collapse(s), 40)
	}
	return ""
}

// unresponsive lists the engines SearXNG reports as failed.
func unresponsive(engines [][]looseString) string {
	var parts []string
	for _, e := range engines {
		if len(e) == 0 || collapse(string(e[0])) == "" {
			continue
		}
		part := collapse(string(e[0]))
		if len(e) > 1 && collapse(string(e[1])) != "" {
			part += " (" + collapse(string(e[1])) + ")"
		}
		parts = append(parts, part)
		if len(parts) == 5 {
			break
		}
	}
	return strings.Join(parts, ", ")
}

// excerpt returns the start of a response body for an error message.
func excerpt(data []byte) string {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return "(empty body)"
	}
	if len(data) > 4*maxErrorExcerpt {
		data = data[:4*maxErrorExcerpt]
	}
	return strconv.Quote(textcut.Ellipsis(collapse(strings.ToValidUTF8(string(data), "\uFFFD")), maxErrorExcerpt))
}
