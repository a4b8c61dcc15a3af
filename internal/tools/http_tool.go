package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"text/template"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/longhaul-dev/longhaul/internal/access"
)

// Fixed values of HTTP tools.
const (
	// HTTPToolUserAgent is sent by HTTP tools unless the skill file
	// declares a User-Agent header.
	HTTPToolUserAgent = "longhaul"
	// HTTPToolMaxRedirects is how many redirects an HTTP tool follows.
	HTTPToolMaxRedirects = 5
	// httpErrorExcerpt is how many characters of a non-2xx body an error
	// quotes, so the model sees the service's own message.
	httpErrorExcerpt = 500
	// maxTargetLen bounds Target in characters.
	maxTargetLen = 200
)

const httpToolAccept = "application/json, text/plain;q=0.9, */*;q=0.8"

// HTTPToolOptions configures NewHTTPTool. The zero value is the production
// configuration.
type HTTPToolOptions struct {
	// LookupEnv looks up the ${NAME} variables of the templates at call
	// time. Nil means os.LookupEnv.
	LookupEnv func(name string) (string, bool)
	// Transport sends the requests. Nil means a plain transport shared by
	// all HTTP tools, which may reach private and loopback addresses: a
	// declared URL is the operator's choice, not the model's. Pass
	// safehttp.NewClient(opts).Transport to refuse them instead.
	Transport http.RoundTripper
	// UserSecret returns the secret name of user for the
	// ${user.secret:NAME} references of the headers, or an error wrapping
	// ErrNoUserSecret when the user has not set it. Nil refuses tools that
	// use user secrets.
	UserSecret func(ctx context.Context, user, name string) (string, error)
}

// ErrNoUserSecret is what HTTPToolOptions.UserSecret wraps for a secret
// the user has not set; the call then answers how to set it.
var ErrNoUserSecret = errors.New("the user has not set the secret")

// HTTPTool is an HTTP integration declared in a skill file's http_tools,
// made into a tool the model can call.
//
// Its templates hold two kinds of placeholder. ${NAME} is an environment
// variable, typically a secret such as an API key, looked up at call time;
// {arg} is the call argument arg. A template is parsed into literal text,
// variables and arguments in one pass (see ParseTemplate), so an argument
// holding "${SECRET}" is sent as that text and never expanded; "{{" writes a
// literal "{".
//
// The URL's scheme, host and port come from the file and the environment
// only: {arg} may appear in the path, where its value is path-escaped and
// must not be "." or "..", and in the query, where it is query-escaped. An
// argument the path needs must be given; one missing from the query is
// empty. If the URL's scheme, host or user after substitution differ from
// those of the URL's origin alone, the call is refused.
//
// In query values, a value that is exactly "{arg}" takes the argument,
// repeated for an array and omitted when the argument is absent or null;
// other values are string templates. Without query, a GET or DELETE sends
// the arguments that no template names as query parameters (strings as
// they are, numbers and booleans formatted, arrays repeated, objects as
// JSON).
//
// A declared body is a JSON template: a string that is exactly "{arg}"
// becomes the argument's JSON value, its type kept, and is left out of its
// object or array when the argument is absent; other strings are string
// templates. Without body, a POST, PUT or PATCH sends the arguments that no
// template names as a JSON object. A JSON body goes with Content-Type
// application/json unless the file declares a Content-Type header. Header
// values are string templates; a header whose value comes out empty is not
// sent.
//
// Every call sends Idempotency-Key: the call's IdempotencyKey (stable
// across the engine's retries of one tool call) and, unless declared,
// User-Agent HTTPToolUserAgent and an Accept header preferring JSON.
//
// A call is bounded by the file's timeout and reads at most its
// max_response_bytes; a longer response is cut, noted in the content and
// marked Truncated. It follows at most HTTPToolMaxRedirects redirects, and
// only to the scheme, host and port of the URL it called.
//
// A 2xx answer becomes the content: JSON indented by one space per level
// (or as it is when it does not parse), text as text, anything else as
// "[<type>, N bytes]", an empty body as a line such as "HTTP 204 No
// Content"; a status other than 200 is shown on a first line.
// With a result template (the file's result:, a Go text/template), a
// 2xx JSON answer becomes the template's output instead: dot is the
// decoded body (integers as int64, other numbers float64, an absent key
// nil), and the functions arg,
// trunc, json and default join text/template's own (see resultFuncs).
// The output is bounded by MaxResultBytes and scrubbed of secrets like the
// body; when the body is not JSON, was cut, or the template fails, the
// content is the body as above after a line saying why. Any other
// status is an error wrapping ErrHTTPStatus whose message holds the status
// and the start of the body. Errors that a retry cannot fix wrap
// ErrPermanent: 3xx that were not followed, 4xx other than 408, 425 and
// 429, refused redirects and refused URLs. Network errors, timeouts, 408, 425, 429 and
// 5xx are plain errors that may be retried.
//
// The expanded value of every ${NAME} of the tool is replaced with ${NAME}
// in errors and content (redact.Secrets), and Target never expands variables, so secrets do not reach the
// model, the logs or the workflow history even when a service echoes them.
type HTTPTool struct {
	name        string
	description string
	method      string
	schema      json.RawMessage
	timeout     time.Duration
	maxBytes    int64

	origin      []TemplatePart  // scheme, host and port
	rest        []TemplatePart  // path, query and fragment
	literalHost string          // the origin's host when it has no variables
	headers     []namedTemplate // sorted by name
	query       []namedTemplate // sorted by name; nil when not declared
	body        any             // compiled body template; nil when not declared
	envNames    []string        // every ${NAME}, sorted, without repeats
	userSecrets []string        // every ${user.secret:NAME} of the headers, sorted
	named       map[string]bool // every argument a template names
	userSecret  func(ctx context.Context, user, name string) (string, error)

	approval bool               // approval: required
	result   *template.Template // the result template; nil shows the body
	allow    *access.Rule       // allow: in the file; nil is everyone

	lookup func(string) (string, bool)
	client *http.Client
}

var (
	_ Tool     = (*HTTPTool)(nil)
	_ Targeter = (*HTTPTool)(nil)
	_ Approver = (*HTTPTool)(nil)
)

// namedTemplate is a header or query value template.
type namedTemplate struct {
	name  string
	parts []TemplatePart
}

// bodyTemplate is a string of a body template.
type bodyTemplate struct {
	parts []TemplatePart
}

// sharedTransport is the plain transport of HTTP tools without
// HTTPToolOptions.Transport, shared so they share idle connections.
var sharedTransport = sync.OnceValue(func() http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxResponseHeaderBytes = 256 << 10
	return t
})

// errRedirect is wrapped by the errors of refused redirects.
var errRedirect = errors.New("redirect refused")

// NewHTTPTool returns the tool def declares. def is normally checked by
// def.Check already (the catalog does); NewHTTPTool still refuses a definition
// it cannot run: a bad name or method, a malformed template, an {arg} in the
// URL's scheme, host or port, or an {arg} naming no property of the
// parameters schema.
func NewHTTPTool(def *HTTPToolDef, opts HTTPToolOptions) (*HTTPTool, error) {
	if def == nil {
		return nil, errors.New("http tool: nil definition")
	}
	t, err := newHTTPTool(def, opts)
	if err != nil {
		return nil, fmt.Errorf("http tool %q: %s", def.Name, err)
	}
	return t, nil
}

// newHTTPTool is NewHTTPTool for a definition that is not nil; its errors
// do not yet name the tool.
func newHTTPTool(def *HTTPToolDef, opts HTTPToolOptions) (*HTTPTool, error) {
	if !ValidName(def.Name) {
		return nil, errors.New("invalid name: it must match ^[a-zA-Z0-9_-]{1,64}$")
	}
	t := &HTTPTool{
		name:        def.Name,
		description: def.Description,
		method:      strings.ToUpper(def.Method),
		timeout:     def.Timeout,
		maxBytes:    def.MaxResponseBytes,
		named:       map[string]bool{},
		lookup:      opts.LookupEnv,
		userSecret:  opts.UserSecret,
	}
	if err := t.setDefaults(def.Method); err != nil {
		return nil, err
	}
	props, err := t.compileSchema(def)
	if err != nil {
		return nil, err
	}
	c := &templateCompiler{t: t, props: props, userSecrets: opts.UserSecret != nil,
		env: map[string]bool{}, secrets: map[string]bool{}}
	if err := c.compile(def); err != nil {
		return nil, err
	}
	t.envNames = slices.Sorted(maps.Keys(c.env))
	t.userSecrets = slices.Sorted(maps.Keys(c.secrets))

	transport := opts.Transport
	if transport == nil {
		transport = sharedTransport()
	}
	t.client = &http.Client{Transport: transport, CheckRedirect: checkRedirect}
	return t, nil
}

// setDefaults checks t's method (the file's method) and fills in the
// defaults of the method, the limits and the environment lookup.
func (t *HTTPTool) setDefaults(method string) error {
	switch t.method {
	case "":
		t.method = http.MethodGet
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		return fmt.Errorf("method %q is not one of GET, POST, PUT, PATCH, DELETE", method)
	}
	if t.timeout <= 0 {
		t.timeout = DefaultHTTPTimeout
	}
	if t.maxBytes <= 0 {
		t.maxBytes = DefaultMaxResponseBytes
	}
	if t.lookup == nil {
		t.lookup = os.LookupEnv
	}
	return nil
}

// compileSchema sets what t shows the model and the engine: the parameters
// schema, approval, the result template and the allow rule. It returns the
// schema's properties, which the templates' {arg} placeholders must name.
func (t *HTTPTool) compileSchema(def *HTTPToolDef) (map[string]any, error) {
	params := map[string]any{"type": "object", "properties": map[string]any{}}
	if def.Parameters != nil {
		params = maps.Clone(def.Parameters)
	}
	// Closed by default: an argument the operator did not declare is
	// refused when the call is validated, never forwarded to the service.
	if _, set := params["additionalProperties"]; !set {
		params["additionalProperties"] = false
	}
	t.approval = def.RequiresApproval
	if def.Result != "" {
		r, err := parseResultTemplate(def.Name, def.Result)
		if err != nil {
			return nil, fmt.Errorf("result: %v", err)
		}
		t.result = r
	}
	t.allow = def.Allow
	schema, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("parameters: %v", err)
	}
	t.schema = schema
	props, _ := params["properties"].(map[string]any)
	return props, nil
}

// templateCompiler compiles the URL, header, query and body templates of
// an HTTP tool, noting the variables, user secrets and arguments they name.
type templateCompiler struct {
	t           *HTTPTool
	props       map[string]any // the parameters' properties
	userSecrets bool           // per-user secrets are configured
	env         map[string]bool
	secrets     map[string]bool
}

// compile compiles every template of def into c.t.
func (c *templateCompiler) compile(def *HTTPToolDef) error {
	if err := c.url(def.URL); err != nil {
		return err
	}
	if err := c.headers(def.Headers); err != nil {
		return err
	}
	if err := c.query(def.Query); err != nil {
		return err
	}
	if def.Body != nil {
		var err error
		if c.t.body, err = compileBody("body", def.Body, c.parse); err != nil {
			return err
		}
	}
	return nil
}

// note records the variables, user secrets and arguments of the template
// at where, refusing a user secret outside the headers or without per-user
// secrets, and an argument the parameters do not declare.
func (c *templateCompiler) note(where string, parts []TemplatePart) error {
	for _, p := range parts {
		switch p.Kind {
		case TemplateUserSecret:
			if !strings.HasPrefix(where, "headers.") {
				return fmt.Errorf("%s: ${%s%s}: a user's secret may only stand in the headers", where, UserSecretPrefix, p.Text)
			}
			if !c.userSecrets {
				return fmt.Errorf("%s: ${%s%s} needs per-user secrets, which need LONGHAUL_TOKEN_KEY", where, UserSecretPrefix, p.Text)
			}
			c.secrets[p.Text] = true
		case TemplateEnv:
			c.env[p.Text] = true
		case TemplateArg:
			if _, ok := c.props[p.Text]; !ok {
				return fmt.Errorf("%s: placeholder {%s} names no property in parameters", where, p.Text)
			}
			c.t.named[p.Text] = true
		}
	}
	return nil
}

// parse parses the template s at where and notes what it names.
func (c *templateCompiler) parse(where, s string) ([]TemplatePart, error) {
	parts, err := ParseTemplate(s)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	return parts, c.note(where, parts)
}

// url compiles the URL template into its origin and the rest.
func (c *templateCompiler) url(raw string) error {
	t := c.t
	var err error
	if t.origin, t.rest, err = SplitURLTemplate(raw); err != nil {
		return fmt.Errorf("url: %v", err)
	}
	if err := c.note("url", t.origin); err != nil {
		return err
	}
	if err := c.note("url", t.rest); err != nil {
		return err
	}
	if len(t.origin) == 0 {
		return fmt.Errorf("url %q has no scheme and host", raw)
	}
	if host, ok := literalHost(t.origin); ok {
		t.literalHost = host
	}
	return nil
}

// headers compiles the header templates, sorted by name.
func (c *templateCompiler) headers(headers map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(headers)) {
		parts, err := c.parse("headers."+k, headers[k])
		if err != nil {
			return err
		}
		if !httpguts.ValidHeaderFieldName(k) {
			return fmt.Errorf("header name %q is invalid", k)
		}
		c.t.headers = append(c.t.headers, namedTemplate{name: http.CanonicalHeaderKey(k), parts: parts})
	}
	return nil
}

// query compiles the query templates, sorted by name; a nil query stays
// nil (not declared).
func (c *templateCompiler) query(query map[string]string) error {
	if query == nil {
		return nil
	}
	c.t.query = []namedTemplate{}
	for _, k := range slices.Sorted(maps.Keys(query)) {
		parts, err := c.parse("query."+k, query[k])
		if err != nil {
			return err
		}
		c.t.query = append(c.t.query, namedTemplate{name: k, parts: parts})
	}
	return nil
}

// checkRedirect follows at most HTTPToolMaxRedirects redirects, and only
// within the scheme, host and port of the first request.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > HTTPToolMaxRedirects {
		return fmt.Errorf("%w: more than %d redirects", errRedirect, HTTPToolMaxRedirects)
	}
	if from := via[0].URL; !sameOrigin(req.URL, from) {
		return fmt.Errorf("%w: %s://%s redirects to %s://%s; an HTTP tool only follows redirects to the scheme, host and port of its URL",
			errRedirect, from.Scheme, from.Host, req.URL.Scheme, req.URL.Host)
	}
	return nil
}

// sameOrigin reports whether a and b have the same scheme, host and port.
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) &&
		strings.EqualFold(a.Hostname(), b.Hostname()) &&
		effectivePort(a) == effectivePort(b)
}

func effectivePort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}

// literalHost returns the host of a URL origin made of literal text only.
func literalHost(origin []TemplatePart) (string, bool) {
	var b strings.Builder
	for _, p := range origin {
		if p.Kind != TemplateLiteral {
			return "", false
		}
		b.WriteString(p.Text)
	}
	u, err := url.Parse(b.String())
	if err != nil || u.Host == "" {
		return "", false
	}
	return u.Host, true
}

// compileBody turns the strings of a body template into bodyTemplates.
func compileBody(where string, v any, parse func(where, s string) ([]TemplatePart, error)) (any, error) {
	switch v := v.(type) {
	case string:
		parts, err := parse(where, v)
		if err != nil {
			return nil, err
		}
		return bodyTemplate{parts: parts}, nil
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			c, err := compileBody(where+"."+k, e, parse)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			c, err := compileBody(fmt.Sprintf("%s[%d]", where, i), e, parse)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	}
	return v, nil
}
