package tools

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/longhaul-dev/longhaul/internal/access"
)

// Defaults of an HTTP tool definition.
const (
	// DefaultHTTPTimeout is an HTTP tool's timeout when its file omits one.
	DefaultHTTPTimeout = 30 * time.Second
	// DefaultMaxResponseBytes is an HTTP tool's response size limit when its
	// file omits one.
	DefaultMaxResponseBytes int64 = 1 << 20
)

// ErrBadHTTPTool marks an HTTP tool definition that cannot run.
var ErrBadHTTPTool = errors.New("bad http tool")

// HTTPToolDef is an HTTP integration declared as data (a skill file's
// http_tools). Its string fields are templates kept exactly as written:
// ${NAME} references are expanded at call time, never at load time, and
// {name} placeholders take the call argument name (see ParseTemplate).
// Check says whether it can run; NewHTTPTool makes it a Tool.
type HTTPToolDef struct {
	// Name is the tool's function name as the model sees it.
	Name string
	// Description tells the model what the tool does.
	Description string
	// Method is the upper-case HTTP method; GET when empty.
	Method string
	// URL is the URL template.
	URL string
	// Headers maps header names to value templates.
	Headers map[string]string
	// Query maps query parameter names to value templates.
	Query map[string]string
	// Body is an optional JSON-compatible body template, in which a string
	// that is exactly "{name}" takes the argument's JSON value; nil means a
	// POST, PUT or PATCH sends the arguments no template names as the JSON
	// body, and a GET or DELETE without Query sends them as query parameters.
	Body any
	// Parameters is the JSON schema of the call arguments, decoded into JSON
	// types (numbers are float64); {type: object, properties: {}} when nil.
	Parameters map[string]any
	// Timeout bounds one call; DefaultHTTPTimeout when zero.
	Timeout time.Duration
	// MaxResponseBytes bounds the response read; DefaultMaxResponseBytes when zero.
	MaxResponseBytes int64
	// RequiresApproval is set by approval: required; a person must approve each call.
	RequiresApproval bool
	// Result is an optional text/template that turns a 2xx JSON answer
	// into the text the model reads (see HTTPTool); empty shows the body.
	Result string
	// RequiresEnv names environment variables the tool cannot work
	// without: while one is unset or empty, the tool is offered to no
	// agent, and the worker says so at start.
	RequiresEnv []string
	// Skill is the id of the skill that declares the tool.
	Skill string
	// Allow, when set (allow: in the file), names who may be offered and
	// call the tool; nil is everyone who may use the skill.
	Allow *access.Rule
}

// Check returns every problem of a definition whose defaults are filled
// in, as a file's author should read them: each wraps ErrBadTemplate (a
// malformed ${NAME}, an {arg} naming no parameter or sitting in the URL's
// scheme, host or port) or ErrBadHTTPTool (anything else).
func (d *HTTPToolDef) Check() []error {
	var problems []error
	add := func(kind error, format string, args ...any) {
		problems = append(problems, &templateError{kind, fmt.Sprintf(format, args...)})
	}
	if !ValidName(d.Name) {
		add(ErrBadHTTPTool, "name %q is not a valid function name: use 1 to 64 characters from a-z A-Z 0-9 _ -", d.Name)
	}
	if strings.TrimSpace(d.Description) == "" {
		add(ErrBadHTTPTool, "description is required: it tells the model what the tool does")
	}
	if !slices.Contains([]string{"GET", "POST", "PUT", "PATCH", "DELETE"}, d.Method) {
		add(ErrBadHTTPTool, "method %q is not one of GET, POST, PUT, PATCH, DELETE", d.Method)
	}
	if strings.TrimSpace(d.URL) == "" {
		add(ErrBadHTTPTool, "url is empty")
	}
	if d.Timeout <= 0 {
		add(ErrBadHTTPTool, "timeout must be positive, got %s", d.Timeout)
	}
	if d.MaxResponseBytes <= 0 {
		add(ErrBadHTTPTool, "max_response_bytes must be positive, got %d", d.MaxResponseBytes)
	}
	if d.Result != "" {
		if _, err := parseResultTemplate(d.Name, d.Result); err != nil {
			add(ErrBadHTTPTool, "result is not a valid Go text/template: %v", err)
		}
	}
	for _, name := range d.RequiresEnv {
		if !validEnvName(name) {
			add(ErrBadHTTPTool, "requires_env: %q is not an environment variable name: use letters, digits and underscores, not starting with a digit", name)
		}
	}
	schemaProblem := checkObjectSchema(d.Parameters)
	if schemaProblem != "" {
		add(ErrBadHTTPTool, "parameters %s", schemaProblem)
	}
	// Argument placeholders are checked against the properties only when
	// the schema itself is sound, so a broken schema is reported once.
	props, _ := d.Parameters["properties"].(map[string]any)
	for _, t := range d.templates() {
		parts, err := ParseTemplate(t.text)
		if err != nil {
			add(ErrBadTemplate, "%s: %v", t.where, err)
			continue
		}
		if schemaProblem != "" {
			continue
		}
		reported := map[string]bool{}
		for _, p := range parts {
			if p.Kind != TemplateArg || reported[p.Text] {
				continue
			}
			if _, ok := props[p.Text]; !ok {
				reported[p.Text] = true
				add(ErrBadTemplate, "%s: placeholder {%s} names no property in parameters (%s); write {{ for a literal {", t.where, p.Text, propertyList(props))
			}
		}
	}
	if _, err := ParseTemplate(d.URL); err == nil && d.URL != "" {
		origin, _, err := SplitURLTemplate(d.URL)
		switch {
		case err != nil:
			add(ErrBadTemplate, "url: %v", err)
		case !httpOrigin(origin):
			add(ErrBadHTTPTool, "url %q must start with http:// or https://, or with a ${NAME} holding such a URL", d.URL)
		}
	}
	return problems
}

// httpOrigin reports whether a URL template's origin can be an http or
// https origin: it starts with a ${NAME} or with a literal "http://" or
// "https://".
func httpOrigin(origin []TemplatePart) bool {
	if len(origin) == 0 {
		return false
	}
	if origin[0].Kind != TemplateLiteral {
		return true
	}
	lower := strings.ToLower(origin[0].Text)
	return strings.HasPrefix(lower, "http://") || strings.HasPrefix(lower, "https://")
}

// propertyList names the properties of a parameters schema for a message.
func propertyList(props map[string]any) string {
	if len(props) == 0 {
		return "it declares none"
	}
	names := slices.Sorted(maps.Keys(props))
	for i, n := range names {
		names[i] = "{" + n + "}"
	}
	return "it declares " + strings.Join(names, ", ")
}

// checkObjectSchema returns why schema is not an object schema, or "".
func checkObjectSchema(schema map[string]any) string {
	if schema == nil {
		return "are missing"
	}
	if schema["type"] != "object" {
		return fmt.Sprintf(`must be an object schema with type: object, got type: %v`, schema["type"])
	}
	props, hasProps := schema["properties"]
	if hasProps {
		if _, ok := props.(map[string]any); !ok {
			return "properties must be a mapping from argument names to schemas"
		}
	}
	if req, ok := schema["required"]; ok {
		list, ok := req.([]any)
		if !ok {
			return "required must be a list of argument names"
		}
		propMap, _ := props.(map[string]any)
		for _, r := range list {
			name, ok := r.(string)
			if !ok {
				return "required must be a list of argument names"
			}
			if _, ok := propMap[name]; !ok {
				return fmt.Sprintf("required names %q, which is not in properties", name)
			}
		}
	}
	return ""
}

// placedTemplate is one template string of a definition and where it sits.
type placedTemplate struct{ where, text string }

// templates returns the template strings of d in a stable order.
func (d *HTTPToolDef) templates() []placedTemplate {
	out := []placedTemplate{{"url", d.URL}}
	for _, k := range slices.Sorted(maps.Keys(d.Headers)) {
		out = append(out, placedTemplate{"headers." + k, d.Headers[k]})
	}
	for _, k := range slices.Sorted(maps.Keys(d.Query)) {
		out = append(out, placedTemplate{"query." + k, d.Query[k]})
	}
	var walk func(where string, v any)
	walk = func(where string, v any) {
		switch v := v.(type) {
		case string:
			out = append(out, placedTemplate{where, v})
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(v)) {
				walk(where+"."+k, v[k])
			}
		case []any:
			for i, e := range v {
				walk(fmt.Sprintf("%s[%d]", where, i), e)
			}
		}
	}
	walk("body", d.Body)
	return out
}
