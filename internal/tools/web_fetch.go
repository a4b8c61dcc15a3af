package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/net/html/charset"

	"github.com/longhaul-dev/longhaul/internal/safehttp"
	"github.com/longhaul-dev/longhaul/internal/textcut"
)

// WebFetchName is the name of the web_fetch tool.
const WebFetchName = "web_fetch"

// Limits and defaults of web_fetch.
const (
	DefaultMaxBodyBytes = 2 << 20
	DefaultMaxChars     = 20000
	// MaxCharsLimit is the largest max_chars a model may ask for.
	MaxCharsLimit    = 100000
	DefaultUserAgent = "Longhaul/1.0 (web_fetch; +https://github.com/longhaul-dev/longhaul)"
)

// ErrHTTPStatus is returned (wrapped) when the server answers with a
// status other than 2xx.
var ErrHTTPStatus = errors.New("unsuccessful HTTP status")

// ErrUnsupportedContentType is returned (wrapped) when the response is not
// HTML, XHTML, text, JSON or XML.
var ErrUnsupportedContentType = errors.New("unsupported content type")

// ErrMisconfigured is returned (wrapped) by every call of a tool whose
// options are invalid.
var ErrMisconfigured = errors.New("tool is misconfigured")

const acceptHeader = "text/html, application/xhtml+xml;q=0.9, text/markdown;q=0.9, text/plain;q=0.8, application/json;q=0.8, application/xml;q=0.6, text/*;q=0.5"

// WebFetchOptions configures NewWebFetch. The zero value is the production
// configuration.
type WebFetchOptions struct {
	// HTTP configures the safehttp client. Its zero value refuses private,
	// loopback and other non-public addresses and ports other than 80 and
	// 443, and follows at most safehttp.DefaultMaxRedirects redirects;
	// only tests and URLs that an operator chose may set AllowPrivate.
	HTTP safehttp.Options
	// AllowedPorts are the only ports web_fetch connects to, checked for
	// the first URL and every redirect before anything is dialed, and for
	// every connection when it is dialed. Empty means 80 and 443. When set
	// it replaces HTTP.AllowedPorts: safehttp enforces the one list. A
	// port outside 1-65535 makes every call fail with ErrMisconfigured.
	AllowedPorts []int
	// MaxBodyBytes caps how much of a response body is read. Zero means
	// DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxChars is how many characters of page text are returned when the
	// model does not say. Zero means DefaultMaxChars.
	MaxChars int
	// UserAgent is sent with every request. Empty means DefaultUserAgent.
	UserAgent string
}

// WebFetch is the web_fetch tool: it fetches a URL the model chose, through
// the SSRF-safe client of package safehttp, and returns the page as
// readable text.
type WebFetch struct {
	client *http.Client
	opts   WebFetchOptions
	schema json.RawMessage
	err    error // a configuration error every call reports
}

// NewWebFetch returns a web_fetch tool configured by opts. Invalid options
// do not fail here: every call of the tool then fails with an error
// wrapping ErrMisconfigured that names the problem.
func NewWebFetch(opts WebFetchOptions) *WebFetch {
	var confErr error
	if len(opts.AllowedPorts) > 0 {
		ports := make([]uint16, 0, len(opts.AllowedPorts))
		for _, p := range opts.AllowedPorts {
			if p < 1 || p > 65535 {
				confErr = fmt.Errorf("web_fetch: %w: allowed port %d is not in 1-65535", ErrMisconfigured, p)
				break
			}
			ports = append(ports, uint16(p))
		}
		opts.HTTP.AllowedPorts = ports
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.MaxChars <= 0 {
		opts.MaxChars = DefaultMaxChars
	}
	opts.MaxChars = min(opts.MaxChars, MaxCharsLimit)
	if opts.UserAgent == "" {
		opts.UserAgent = DefaultUserAgent
	}
	schema := fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "url": {
      "type": "string",
      "minLength": 1,
      "description": "The http or https URL to fetch."
    },
    "max_chars": {
      "type": "integer",
      "minimum": 1,
      "maximum": %d,
      "description": "The most characters of page text to return. Defaults to %d."
    }
  },
  "required": ["url"],
  "additionalProperties": false
}`, MaxCharsLimit, opts.MaxChars)
	return &WebFetch{
		client: safehttp.NewClient(opts.HTTP),
		opts:   opts,
		schema: json.RawMessage(schema),
		err:    confErr,
	}
}

// Name implements Tool.
func (*WebFetch) Name() string { return WebFetchName }

// Description implements Tool.
func (*WebFetch) Description() string {
	return "Fetch a public web page or document by URL and return its readable text. " +
		"For HTML the main content is extracted (navigation, ads and sidebars dropped) and converted to Markdown, keeping headings, lists, tables and links; " +
		"plain text, Markdown, JSON and XML are returned as they are. Images, PDFs and other binary files cannot be read. " +
		"Only http and https URLs on the public internet (ports 80 and 443 unless configured otherwise) can be fetched; long pages are truncated."
}

// Parameters implements Tool.
func (w *WebFetch) Parameters() json.RawMessage { return w.schema }

type webFetchArgs struct {
	URL      string `json:"url"`
	MaxChars *int   `json:"max_chars"`
}

// Target implements Targeter: it returns the host of the URL to fetch.
func (*WebFetch) Target(args json.RawMessage) string {
	var a webFetchArgs
	if err := json.Unmarshal(args, &a); err != nil {
		return ""
	}
	u, err := parseFetchURL(a.URL)
	if err != nil {
		return ""
	}
	return u.Host
}

// parseFetchURL parses the URL a model gave. A URL without a scheme, such
// as "example.com/page", is taken as https.
func parseFetchURL(raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	if raw != "" && !strings.Contains(raw, "://") {
		// "example.com/page" and "example.com:8080/page" lack a scheme;
		// "mailto:x" or "file:/etc/passwd" have one.
		before, after, found := strings.Cut(raw, ":")
		if !found || strings.Contains(before, ".") || after != "" && after[0] >= '0' && after[0] <= '9' {
			raw = "https://" + raw
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf(`%w: argument "url": %v`, ErrInvalidArguments, err)
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	default:
		return nil, fmt.Errorf(`%w: argument "url": scheme %q is not supported; use an http or https URL`, ErrInvalidArguments, u.Scheme)
	}
	if u.Host == "" {
		return nil, fmt.Errorf(`%w: argument "url": %q has no host`, ErrInvalidArguments, raw)
	}
	u.Fragment, u.RawFragment = "", ""
	return u, nil
}

// Call implements Tool.
func (w *WebFetch) Call(ctx context.Context, call Call) (Result, error) {
	if w.err != nil {
		return Result{}, w.err
	}
	u, maxChars, err := w.parseArgs(call)
	if err != nil {
		return Result{}, err
	}
	call.report("fetching "+u.Host, 0)
	f, err := w.fetch(ctx, call, u)
	if err != nil {
		return Result{}, err
	}
	page, isHTML, err := f.page()
	if err != nil {
		return Result{}, err
	}
	text := strings.ToValidUTF8(page.Text, "\uFFFD")
	if text == "" {
		text = "(the page has no readable text)"
	}
	text, charsCut := truncate(text, maxChars, f.bodyCut, w.opts.MaxBodyBytes)
	return Result{Content: f.format(page, isHTML, text), Truncated: f.bodyCut || charsCut, Target: u.Host}, nil
}

// parseArgs checks the call's arguments and returns the URL to fetch and
// the most characters to return.
func (w *WebFetch) parseArgs(call Call) (*url.URL, int, error) {
	if err := ValidateArguments(w.schema, call.Arguments); err != nil {
		return nil, 0, err
	}
	var a webFetchArgs
	if err := json.Unmarshal(call.Arguments, &a); err != nil {
		return nil, 0, fmt.Errorf("%w: %v", ErrInvalidArguments, err)
	}
	u, err := parseFetchURL(a.URL)
	if err != nil {
		return nil, 0, err
	}
	maxChars := w.opts.MaxChars
	if a.MaxChars != nil {
		maxChars = *a.MaxChars
	}
	return u, maxChars, nil
}

// fetchedPage is a response web_fetch read: its URL after redirects, its
// (declared or sniffed) type and its body, cut at MaxBodyBytes.
type fetchedPage struct {
	finalURL  *url.URL
	header    string // the Content-Type
	mediaType string
	params    map[string]string
	data      []byte
	bodyCut   bool
}

// fetch GETs u and reads the body of a 2xx answer of a readable type.
func (w *WebFetch) fetch(ctx context.Context, call Call, u *url.URL) (*fetchedPage, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("web_fetch: %w", err)
	}
	req.Header.Set("User-Agent", w.opts.UserAgent)
	req.Header.Set("Accept", acceptHeader)
	resp, err := w.client.Do(req)
	if err != nil {
		return nil, fetchError(u, err)
	}
	defer resp.Body.Close()
	f := &fetchedPage{finalURL: resp.Request.URL}

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("web_fetch: %s: %w: %s", f.finalURL.Redacted(), ErrHTTPStatus, resp.Status)
	}
	f.header = resp.Header.Get("Content-Type")
	f.mediaType, f.params, _ = mime.ParseMediaType(f.header)
	f.mediaType = strings.ToLower(f.mediaType)
	if f.header != "" && readableKind(f.mediaType) == unreadable {
		return nil, unsupported(f.mediaType, f.header)
	}

	body := &progressReader{r: resp.Body, call: call, total: resp.ContentLength, limit: w.opts.MaxBodyBytes}
	f.data, f.bodyCut, err = safehttp.ReadLimited(body, w.opts.MaxBodyBytes)
	if err != nil {
		return nil, fmt.Errorf("web_fetch: reading %s: %w", f.finalURL.Redacted(), err)
	}
	if f.bodyCut {
		f.data = dropPartialRune(f.data)
	}
	if f.header == "" {
		// No declared type: sniff, as a browser would.
		f.header = http.DetectContentType(f.data)
		f.mediaType, f.params, _ = mime.ParseMediaType(f.header)
		if readableKind(f.mediaType) == unreadable {
			return nil, unsupported(f.mediaType, f.header)
		}
	}
	return f, nil
}

// page renders the body as readable text: an HTML page's article, or the
// text as it is.
func (f *fetchedPage) page() (page readablePage, isHTML bool, err error) {
	if readableKind(f.mediaType) != htmlKind {
		page.Text = strings.TrimSpace(decodeText(f.data, f.params["charset"]))
		return page, false, nil
	}
	data := f.data
	enc, _, _ := charset.DetermineEncoding(data, f.header)
	if decoded, err := enc.NewDecoder().Bytes(data); err == nil {
		data = decoded
	}
	if page, err = htmlPageText(data, f.finalURL); err != nil {
		return page, true, fmt.Errorf("web_fetch: rendering %s: %w", f.finalURL.Redacted(), err)
	}
	return page, true, nil
}

// format is the tool's content: the page's title, URL, author, date and,
// for what is not HTML, its type, then its text.
func (f *fetchedPage) format(page readablePage, isHTML bool, text string) string {
	var out strings.Builder
	if page.Title != "" {
		fmt.Fprintf(&out, "Title: %s\n", strings.ToValidUTF8(page.Title, "\uFFFD"))
	}
	fmt.Fprintf(&out, "URL: %s\n", f.finalURL.Redacted())
	if page.Byline != "" {
		fmt.Fprintf(&out, "Author: %s\n", strings.ToValidUTF8(page.Byline, "\uFFFD"))
	}
	if !page.Published.IsZero() {
		fmt.Fprintf(&out, "Published: %s\n", page.Published.UTC().Format(time.DateOnly))
	}
	if !isHTML {
		fmt.Fprintf(&out, "Content-Type: %s\n", f.mediaType)
	}
	out.WriteString("\n")
	out.WriteString(text)
	return out.String()
}

// fetchError describes a failed request. When the failure happened after
// a redirect, the error already names the URL redirected to; it is marked
// as such, so that the model sees why a URL it never asked for failed.
func fetchError(requested *url.URL, err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) && uerr.URL != requested.String() {
		return fmt.Errorf("web_fetch: %w (reached by a redirect from %s)", err, requested.Redacted())
	}
	return fmt.Errorf("web_fetch: %w", err)
}

// contentKind says how web_fetch turns a media type into text.
type contentKind int

const (
	unreadable contentKind = iota
	htmlKind               // HTML and XHTML: readable text extraction
	textKind               // text/*, JSON, XML: returned as they are
)

// readableKind classifies a media type.
func readableKind(mediaType string) contentKind {
	switch {
	case mediaType == "text/html", mediaType == "application/xhtml+xml":
		return htmlKind
	case strings.HasPrefix(mediaType, "text/"),
		mediaType == "application/json",
		mediaType == "application/xml",
		strings.HasPrefix(mediaType, "application/") && (strings.HasSuffix(mediaType, "+json") || strings.HasSuffix(mediaType, "+xml")):
		return textKind
	}
	return unreadable
}

func unsupported(mediaType, header string) error {
	if mediaType == "" {
		mediaType = header
	}
	return fmt.Errorf("web_fetch: %w %q: only HTML, XHTML, text, JSON and XML can be read", ErrUnsupportedContentType, mediaType)
}

// dropPartialRune removes an incomplete UTF-8 sequence that a cut left at
// the end of data, so the text does not end in a replacement character.
func dropPartialRune(data []byte) []byte {
	for i := len(data) - 1; i >= 0 && i >= len(data)-utf8.UTFMax; i-- {
		if utf8.RuneStart(data[i]) {
			if !utf8.FullRune(data[i:]) {
				return data[:i]
			}
			break
		}
	}
	return data
}

// decodeText converts a text body in the declared charset to UTF-8.
func decodeText(data []byte, label string) string {
	if label != "" && !strings.EqualFold(label, "utf-8") && !strings.EqualFold(label, "utf8") {
		if enc, _ := charset.Lookup(label); enc != nil {
			if decoded, err := enc.NewDecoder().Bytes(data); err == nil {
				return string(decoded)
			}
		}
	}
	return string(data)
}

// truncate cuts text to maxChars characters and notes the cut, and notes
// when the body itself was cut at maxBytes.
func truncate(text string, maxChars int, bodyCut bool, maxBytes int64) (string, bool) {
	n := utf8.RuneCountInString(text)
	charsCut := n > maxChars
	if charsCut {
		text = strings.TrimRight(textcut.Runes(text, maxChars), " \t\n")
	}
	switch {
	case charsCut && bodyCut:
		text += fmt.Sprintf("\n\n[truncated: page was more than %d characters; only the first %d bytes of the response were read]", n, maxBytes)
	case charsCut:
		text += fmt.Sprintf("\n\n[truncated: page was %d characters]", n)
	case bodyCut:
		text += fmt.Sprintf("\n\n[truncated: the response was larger than %d bytes; only the first %d bytes were read]", maxBytes, maxBytes)
	}
	return text, charsCut
}

// progressReader reports reading progress every 64 KiB.
type progressReader struct {
	r        io.Reader
	call     Call
	total    int64 // Content-Length, or -1
	limit    int64
	read     int64
	reported int64
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.read += int64(n)
	if p.call.Progress != nil && p.read-p.reported >= 64<<10 {
		p.reported = p.read
		total := p.total
		if total <= 0 || total > p.limit {
			total = p.limit
		}
		frac := min(float64(p.read)/float64(total), 1)
		p.call.report(fmt.Sprintf("reading %d KB", p.read>>10), 0.1+0.8*frac)
	}
	return n, err
}
