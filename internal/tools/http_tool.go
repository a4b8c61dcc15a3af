package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/template"
	"time"
	"unicode/utf8"

	"golang.org/x/net/http/httpguts"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/internal/access"
	"github.com/longhaul-dev/longhaul/internal/redact"
	"github.com/longhaul-dev/longhaul/internal/safehttp"
	"github.com/longhaul-dev/longhaul/internal/textcut"
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

// Name implements Tool.
func (t *HTTPTool) Name() string { return t.name }

// Description implements Tool.
func (t *HTTPTool) Description() string { return t.description }

// Parameters implements Tool.
func (t *HTTPTool) Parameters() json.RawMessage { return t.schema }

// RequiresApproval reports whether the skill file marks the tool
// approval: required.
func (t *HTTPTool) RequiresApproval() bool { return t.approval }

// Allows reports whether the tool's allow: rule admits u.
func (t *HTTPTool) Allows(u longhaul.User) bool { return t.allow.Allows(u) }

// Target implements Targeter: it returns the method, the URL's host when
// the file writes it literally, and the path with the arguments filled in.
// Variables are shown as ${NAME}, never expanded, and the query is left
// out.
func (t *HTTPTool) Target(args json.RawMessage) string {
	a, _ := decodeHTTPArgs(args)
	return t.target(a)
}

func (t *HTTPTool) target(args map[string]any) string {
	var b strings.Builder
	b.WriteString(t.method)
	b.WriteByte(' ')
	b.WriteString(t.literalHost)
loop:
	for _, p := range t.rest {
		switch p.Kind {
		case TemplateLiteral:
			if i := strings.IndexAny(p.Text, "?#"); i >= 0 {
				b.WriteString(p.Text[:i])
				break loop
			}
			b.WriteString(p.Text)
		case TemplateEnv:
			b.WriteString("${" + p.Text + "}")
		case TemplateArg:
			if v, ok := args[p.Text]; ok && v != nil {
				b.WriteString(url.PathEscape(argString(v)))
			} else {
				b.WriteString("{" + p.Text + "}")
			}
		}
	}
	s := b.String()
	return textcut.Ellipsis(s, maxTargetLen)
}

// decodeHTTPArgs decodes a JSON arguments object, keeping numbers exact.
// Empty or null arguments are an empty object.
func decodeHTTPArgs(raw json.RawMessage) (map[string]any, error) {
	args := map[string]any{}
	if len(bytes.TrimSpace(raw)) == 0 {
		return args, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return args, fmt.Errorf("%w: arguments are not valid JSON: %v", ErrInvalidArguments, err)
	}
	switch v := v.(type) {
	case nil:
		return args, nil
	case map[string]any:
		return v, nil
	}
	return args, fmt.Errorf("%w: arguments must be a JSON object", ErrInvalidArguments)
}

// argString formats an argument for a URL, query or string template:
// strings as they are, numbers and booleans formatted, null as "", arrays
// and objects as compact JSON.
func argString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	case bool:
		return strconv.FormatBool(v)
	case nil:
		return ""
	}
	b, err := marshalJSON(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// queryValues are the values of a query parameter taking argument v: one
// per element of an array, none for null.
func queryValues(v any) []string {
	switch v := v.(type) {
	case nil:
		return nil
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			if e != nil {
				out = append(out, argString(e))
			}
		}
		return out
	}
	return []string{argString(v)}
}

// marshalJSON is json.Marshal without HTML escaping and trailing newline.
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// exactArg returns the argument name when parts is exactly one {arg}.
func exactArg(parts []TemplatePart) (string, bool) {
	if len(parts) == 1 && parts[0].Kind == TemplateArg {
		return parts[0].Text, true
	}
	return "", false
}

// callState is what one call has expanded: the arguments and the values of
// the variables.
type callState struct {
	args  map[string]any
	env   map[string]string
	scrub *redact.Secrets
}

// render expands a string template; each argument goes through escape.
func (s *callState) render(parts []TemplatePart, escape func(string) string) string {
	var b strings.Builder
	for _, p := range parts {
		switch p.Kind {
		case TemplateLiteral:
			b.WriteString(p.Text)
		case TemplateEnv:
			b.WriteString(s.env[p.Text])
		case TemplateUserSecret:
			b.WriteString(s.env[UserSecretPrefix+p.Text])
		case TemplateArg:
			b.WriteString(escape(argString(s.args[p.Text])))
		}
	}
	return b.String()
}

func identity(s string) string { return s }

// Call implements Tool.
func (t *HTTPTool) Call(ctx context.Context, call Call) (Result, error) {
	st, target, missing, err := t.prepare(ctx, call)
	switch {
	case err != nil:
		return Result{}, err
	case missing != nil:
		return *missing, nil
	}

	callCtx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	req, err := t.newRequest(callCtx, st, call)
	if err != nil {
		return Result{}, t.fail(st, target, err)
	}

	call.report("calling "+target, 0)
	resp, err := t.client.Do(req)
	if err != nil {
		return Result{}, t.fail(st, target, t.transportError(ctx, callCtx, err))
	}
	defer resp.Body.Close()
	data, cut, err := safehttp.ReadLimited(resp.Body, t.maxBytes)
	if err != nil {
		return Result{}, t.fail(st, target, fmt.Errorf("reading the response: %w", t.transportError(ctx, callCtx, err)))
	}
	if cut {
		data = dropPartialRune(data)
	}
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	mediaType = strings.ToLower(mediaType)

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return Result{}, t.fail(st, target, statusErr(resp, t.excerpt(st, mediaType, data, cut)))
	}
	return t.content(st, resp, mediaType, data, cut, target), nil
}

// prepare decodes the call's arguments and expands the variables and the
// user's secrets the tool sends. When the user has not set one of their
// secrets, missing is the result telling the model so, and the call is
// not made.
func (t *HTTPTool) prepare(ctx context.Context, call Call) (st *callState, target string, missing *Result, err error) {
	args, err := decodeHTTPArgs(call.Arguments)
	if err != nil {
		return nil, "", nil, fmt.Errorf("%s: %w", t.name, err)
	}
	target = t.target(args)
	env, err := t.expandEnv()
	if err != nil {
		return nil, "", nil, fmt.Errorf("%s: %w", t.name, err)
	}
	// The user's own secrets, read at call time for the user the call is
	// made for; kept with the variables so that they are scrubbed alike.
	for _, name := range t.userSecrets {
		v, err := t.userSecret(ctx, call.User, name)
		if errors.Is(err, ErrNoUserSecret) {
			return nil, "", &Result{Target: target, Content: fmt.Sprintf(
				"MISSING SECRET: %s could not run because it sends the user's own secret %q, which they have not set. "+
					"Tell the user to set it on this Longhaul server, with their API key: PUT /v1/secrets/%s with the JSON body {\"value\": \"...\"}, then to ask again.",
				t.name, name, name)}, nil
		}
		if err != nil {
			return nil, "", nil, fmt.Errorf("%s: the user's secret %q: %w", t.name, name, err)
		}
		env[UserSecretPrefix+name] = v
	}
	return &callState{args: args, env: env, scrub: redact.NewSecrets(env)}, target, nil, nil
}

// content is the result of a 2xx answer: the result template's output or
// the body, scrubbed of secrets, after the status when it is not 200.
func (t *HTTPTool) content(st *callState, resp *http.Response, mediaType string, data []byte, cut bool, target string) Result {
	status := "HTTP " + resp.Status
	if len(data) == 0 {
		return Result{Content: status, Target: target}
	}
	var text string
	if t.result != nil {
		rendered, err := t.renderResult(data, st.args)
		if err == nil {
			text = st.scrub.Hide(rendered)
			if resp.StatusCode != http.StatusOK {
				text = status + "\n\n" + text
			}
			return Result{Content: text, Target: target}
		}
		text = fmt.Sprintf("[the tool's result template failed (%v); the response follows as it came]\n\n", st.scrub.Hide(err.Error()))
	}
	text += formatBody(mediaType, data, cut, false)
	if cut {
		text = st.scrub.HideCut(text)
		text += fmt.Sprintf("\n\n[truncated: the response was larger than %d bytes; only the first %d bytes were read]", t.maxBytes, t.maxBytes)
	} else {
		text = st.scrub.Hide(text)
	}
	if resp.StatusCode != http.StatusOK {
		text = status + "\n\n" + text
	}
	return Result{Content: text, Truncated: cut, Target: target}
}

// expandEnv looks up every variable the tool's templates name. Errors name
// missing variables, never values.
func (t *HTTPTool) expandEnv() (map[string]string, error) {
	env := make(map[string]string, len(t.envNames))
	var errs []error
	for _, name := range t.envNames {
		v, err := ExpandEnv("${"+name+"}", t.lookup)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		env[name] = v
	}
	return env, errors.Join(errs...)
}

// newRequest builds the request of one call.
func (t *HTTPTool) newRequest(ctx context.Context, st *callState, call Call) (*http.Request, error) {
	u, err := t.buildURL(st)
	if err != nil {
		return nil, err
	}
	if extra := t.queryArgs(st); len(extra) > 0 {
		if u.RawQuery != "" {
			u.RawQuery += "&"
		}
		u.RawQuery += extra.Encode()
	}
	body, hasBody, err := t.requestBody(st)
	if err != nil {
		return nil, err
	}

	var reader io.Reader // a *bytes.Reader lets redirects resend the body
	if hasBody {
		reader = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, t.method, u.String(), reader)
	if err != nil {
		return nil, fmt.Errorf("cannot build the request: %v (%w)", err, ErrPermanent)
	}
	req.Header.Set("User-Agent", HTTPToolUserAgent)
	req.Header.Set("Accept", httpToolAccept)
	if hasBody {
		req.Header.Set("Content-Type", "application/json")
	}
	if err := t.setHeaders(req, st); err != nil {
		return nil, err
	}
	if call.IdempotencyKey != "" {
		req.Header.Set("Idempotency-Key", call.IdempotencyKey)
	}
	return req, nil
}

// queryArgs is the query the call adds to the URL: the declared query
// templates, or else, for a GET or DELETE, the arguments no template names.
func (t *HTTPTool) queryArgs(st *callState) url.Values {
	var extra url.Values
	switch {
	case t.query != nil:
		extra = url.Values{}
		for _, q := range t.query {
			if name, ok := exactArg(q.parts); ok {
				for _, v := range queryValues(st.args[name]) {
					extra.Add(q.name, v)
				}
				continue
			}
			extra.Add(q.name, st.render(q.parts, identity))
		}
	case t.method == http.MethodGet || t.method == http.MethodDelete:
		extra = url.Values{}
		for _, name := range t.unnamedArgs(st.args) {
			for _, v := range queryValues(st.args[name]) {
				extra.Add(name, v)
			}
		}
	}
	return extra
}

// requestBody is the JSON body of the call, if it has one: the declared
// body template, or else, for a POST, PUT or PATCH, an object of the
// arguments no template names.
func (t *HTTPTool) requestBody(st *callState) (body []byte, hasBody bool, err error) {
	switch {
	case t.body != nil:
		if v, ok := st.renderBody(t.body); ok {
			if body, err = marshalJSON(v); err != nil {
				return nil, false, fmt.Errorf("encoding the body: %w", err)
			}
			hasBody = true
		}
	case t.method == http.MethodPost || t.method == http.MethodPut || t.method == http.MethodPatch:
		obj := map[string]any{}
		for _, name := range t.unnamedArgs(st.args) {
			obj[name] = st.args[name]
		}
		if body, err = marshalJSON(obj); err != nil {
			return nil, false, fmt.Errorf("encoding the body: %w", err)
		}
		hasBody = true
	}
	return body, hasBody, nil
}

// setHeaders sets the declared headers on req; a header whose value comes
// out empty is not sent.
func (t *HTTPTool) setHeaders(req *http.Request, st *callState) error {
	for _, h := range t.headers {
		v := st.render(h.parts, identity)
		if !httpguts.ValidHeaderFieldValue(v) {
			return fmt.Errorf("%w: header %s would hold a line break or another control character", ErrInvalidArguments, h.name)
		}
		if v == "" {
			req.Header.Del(h.name)
			continue
		}
		req.Header.Set(h.name, v)
	}
	return nil
}

// buildURL expands the URL template and checks that the arguments did not
// change its scheme, host or user.
func (t *HTTPTool) buildURL(st *callState) (*url.URL, error) {
	originText := st.render(t.origin, func(string) string { return "" })
	origin, err := url.Parse(originText)
	if err != nil {
		return nil, fmt.Errorf("the url's scheme and host %q do not parse: %v (%w)", originText, err, ErrPermanent)
	}
	if s := strings.ToLower(origin.Scheme); (s != "http" && s != "https") || origin.Host == "" {
		return nil, fmt.Errorf("the url must start with http:// or https:// and a host, got %q (%w)", originText, ErrPermanent)
	}

	var b strings.Builder
	b.WriteString(originText)
	for _, p := range t.rest {
		switch p.Kind {
		case TemplateLiteral:
			b.WriteString(p.Text)
		case TemplateEnv:
			b.WriteString(st.env[p.Text])
		case TemplateArg:
			inQuery := strings.ContainsAny(b.String(), "?#")
			v, ok := st.args[p.Text]
			s := argString(v)
			switch {
			case inQuery:
				b.WriteString(url.QueryEscape(s))
			case !ok || v == nil || s == "":
				return nil, fmt.Errorf("%w: argument %q is needed for the url path", ErrInvalidArguments, p.Text)
			case s == "." || s == "..":
				return nil, fmt.Errorf("%w: argument %q must not be %q in the url path", ErrInvalidArguments, p.Text, s)
			default:
				b.WriteString(url.PathEscape(s))
			}
		}
	}
	u, err := url.Parse(b.String())
	if err != nil {
		return nil, fmt.Errorf("%w: the url does not parse: %v", ErrInvalidArguments, err)
	}
	if u.Scheme != origin.Scheme || !strings.EqualFold(u.Host, origin.Host) || u.User.String() != origin.User.String() {
		return nil, fmt.Errorf("refusing a url whose scheme, host or user differs from %s://%s after argument substitution (%w)", origin.Scheme, origin.Host, ErrPermanent)
	}
	u.Fragment, u.RawFragment = "", ""
	return u, nil
}

// unnamedArgs returns the names of the arguments that no template names,
// sorted.
func (t *HTTPTool) unnamedArgs(args map[string]any) []string {
	var names []string
	for name := range args {
		if !t.named[name] {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// renderBody expands a compiled body template. It reports false for an
// exact {arg} whose argument is absent.
func (s *callState) renderBody(n any) (any, bool) {
	switch n := n.(type) {
	case bodyTemplate:
		if name, ok := exactArg(n.parts); ok {
			v, ok := s.args[name]
			return v, ok
		}
		return s.render(n.parts, identity), true
	case map[string]any:
		out := make(map[string]any, len(n))
		for k, e := range n {
			if v, ok := s.renderBody(e); ok {
				out[k] = v
			}
		}
		return out, true
	case []any:
		out := make([]any, 0, len(n))
		for _, e := range n {
			if v, ok := s.renderBody(e); ok {
				out = append(out, v)
			}
		}
		return out, true
	}
	return n, true
}

// transportError describes an error of client.Do or of reading the body
// without the request URL, which may hold secrets, and tells the caller's
// cancellation (ctx) from the call's own timeout (callCtx).
func (t *HTTPTool) transportError(ctx, callCtx context.Context, err error) error {
	if errors.Is(err, errRedirect) {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("%v (%w)", err, ErrPermanent)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if callCtx.Err() != nil {
		return fmt.Errorf("timed out after %s", t.timeout)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return errors.New(ue.Err.Error())
	}
	return errors.New(err.Error())
}

// fail prefixes err with the tool name and target and scrubs secrets from
// its message. Of err's chain only the sentinels ErrPermanent,
// ErrHTTPStatus, ErrInvalidArguments and the context errors remain visible
// (to errors.Is), since the messages of the causes could hold secrets.
func (t *HTTPTool) fail(st *callState, target string, err error) error {
	return &callError{
		msg: st.scrub.Hide(fmt.Sprintf("%s: %s: %v", t.name, target, err)),
		err: err,
	}
}

// callError is an HTTP tool's error with secrets scrubbed from its message.
type callError struct {
	msg string
	err error
}

func (e *callError) Error() string { return e.msg }

// Is matches the sentinels err wraps without exposing err itself, whose
// message may hold secrets.
func (e *callError) Is(target error) bool {
	switch target {
	case ErrPermanent, ErrHTTPStatus, ErrInvalidArguments, context.Canceled, context.DeadlineExceeded:
		return errors.Is(e.err, target)
	}
	return false
}

// statusErr is the error for a non-2xx response with the given excerpt of
// its body.
func statusErr(resp *http.Response, excerpt string) error {
	msg := "HTTP " + resp.Status
	if excerpt != "" {
		msg += ": " + excerpt
	}
	switch c := resp.StatusCode; {
	case c == http.StatusRequestTimeout, c == http.StatusTooEarly, c == http.StatusTooManyRequests, c >= 500:
		return fmt.Errorf("%s (%w)", msg, ErrHTTPStatus)
	}
	// Other 4xx, and 3xx that were not followed, will come back the same.
	return fmt.Errorf("%s (%w, %w)", msg, ErrHTTPStatus, ErrPermanent)
}

// excerpt returns the start of a non-2xx body for an error message, on one
// line, with secrets scrubbed before it is cut.
func (t *HTTPTool) excerpt(st *callState, mediaType string, data []byte, cut bool) string {
	if len(data) == 0 {
		return ""
	}
	text := formatBody(mediaType, data, cut, true)
	text = strings.Join(strings.Fields(st.scrub.Hide(text)), " ")
	if cut {
		text = st.scrub.HideCut(text)
	}
	if cut := textcut.Runes(text, httpErrorExcerpt); len(cut) < len(text) {
		text = st.scrub.HideCut(cut) + "…"
	}
	return text
}

// formatBody turns a response body into text: JSON indented (compact when
// oneLine), text as text, other types as "[<type>, N bytes]".
func formatBody(mediaType string, data []byte, cut, oneLine bool) string {
	isJSON := mediaType == "application/json" || strings.HasSuffix(mediaType, "+json")
	if (isJSON || mediaType == "") && json.Valid(data) {
		var buf bytes.Buffer
		var err error
		if oneLine {
			err = json.Compact(&buf, data)
		} else {
			err = json.Indent(&buf, data, "", " ")
		}
		if err == nil {
			return buf.String()
		}
	}
	if isJSON || textType(mediaType) || mediaType == "" && utf8.Valid(data) {
		return strings.ToValidUTF8(string(data), "\uFFFD")
	}
	if mediaType == "" {
		mediaType = "unknown type"
	}
	if cut {
		return fmt.Sprintf("[%s, more than %d bytes]", mediaType, len(data))
	}
	return fmt.Sprintf("[%s, %d bytes]", mediaType, len(data))
}

// textType reports whether a media type is text a model can read.
func textType(mediaType string) bool {
	switch {
	case strings.HasPrefix(mediaType, "text/"),
		mediaType == "application/xml", strings.HasSuffix(mediaType, "+xml"),
		mediaType == "application/javascript", mediaType == "application/x-www-form-urlencoded",
		mediaType == "application/yaml", mediaType == "application/x-yaml":
		return true
	}
	return false
}
