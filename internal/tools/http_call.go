// An HTTP tool at work: the Tool methods, and a call from its arguments to
// a bounded, scrubbed result (the tool itself and its templates are in
// http_tool.go).

package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/internal/redact"
	"github.com/longhaul-dev/longhaul/internal/safehttp"
	"github.com/longhaul-dev/longhaul/internal/textcut"
)

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
