package skills

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

var (
	reAgentID  = regexp.MustCompile(`^[a-z0-9._:-]{1,64}$`)
	reSkillID  = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	reToolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
)

// httpMethods are the methods an HTTP tool may use.
var httpMethods = map[string]bool{"GET": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true}

// Validate checks the whole catalog and returns every problem, joined with
// errors.Join, each a *FileError naming its file; nil means the catalog is
// sound. knownTool reports whether the tool registry provides a tool of the
// given name; a nil knownTool means it provides none.
//
// Beyond what Load already checks, Validate reports skills naming tools that
// are neither registered nor declared in any skill's http_tools, and HTTP
// tools whose names collide with registered tools.
//
// An agent must have a non-empty prompt unless it has no skills: such an
// agent, like the built-in "naked", is the bare model.
func (c *Catalog) Validate(knownTool func(name string) bool) error {
	if c == nil {
		return &problem{kind: ErrInvalid, msg: "nil catalog"}
	}
	if knownTool == nil {
		knownTool = func(string) bool { return false }
	}
	if problems := c.validate(knownTool, true); len(problems) > 0 {
		return joinSorted(problems)
	}
	return nil
}

// validate returns the catalog's problems. With checkRegistry false, the
// checks that need knownTool are skipped.
func (c *Catalog) validate(knownTool func(string) bool, checkRegistry bool) []error {
	var problems []error
	add := func(src string, k error, format string, args ...any) {
		problems = append(problems, &FileError{Path: src, Err: k, Detail: fmt.Sprintf(format, args...)})
	}

	for _, a := range c.Agents() {
		if c.damaged[a.Source] {
			continue
		}
		if !reAgentID.MatchString(a.ID) {
			add(a.Source, ErrBadID, "agent id %q is invalid: use 1 to 64 characters from a-z 0-9 . _ : -", a.ID)
		}
		if strings.TrimSpace(a.Description) == "" {
			add(a.Source, ErrMissingDescription, "agent %q has no description", a.ID)
		}
		if !a.Mode.Valid() {
			add(a.Source, ErrBadMode, "agent %q has mode %q: use chat, agentic or auto", a.ID, a.Mode)
		}
		if !a.Memory.Valid() {
			add(a.Source, ErrBadMemory, "agent %q has memory %q: use off, tools or recall", a.ID, a.Memory)
		}
		if a.MaxTurns < 0 || a.MaxTurns > MaxTurnsLimit {
			add(a.Source, ErrOutOfRange, "max_turns must be between 1 and %d, got %d", MaxTurnsLimit, a.MaxTurns)
		}
		if a.MaxReplans < 0 || a.MaxReplans > MaxReplansLimit {
			add(a.Source, ErrOutOfRange, "max_replans must be between 0 and %d, got %d", MaxReplansLimit, a.MaxReplans)
		}
		if t := a.Temperature; t != nil && (*t < 0 || *t > MaxTemperature) {
			add(a.Source, ErrOutOfRange, "temperature must be between 0 and %d, got %g", MaxTemperature, *t)
		}
		if strings.TrimSpace(a.Prompt) == "" && len(a.Skills) > 0 {
			add(a.Source, ErrMissingPrompt, "agent %q has skills but no prompt: write its base prompt after the closing ---", a.ID)
		}
		listed := map[string]bool{}
		for _, id := range a.Skills {
			if listed[id] {
				add(a.Source, ErrInvalid, "agent %q lists skill %q twice", a.ID, id)
				continue
			}
			listed[id] = true
			if _, ok := c.skills[id]; !ok {
				add(a.Source, ErrUnknownSkill, "agent %q uses skill %q, which does not exist", a.ID, id)
			}
		}
	}

	skills := c.Skills()
	commands := map[string]*Skill{}
	declared := map[string]*Skill{}
	for _, s := range skills {
		// A damaged skill's own values are not checked, but its command and
		// tools still count for the checks of other skills.
		damaged := c.damaged[s.Source]
		if !damaged {
			problems = append(problems, checkSkill(s)...)
		}
		if s.Command != "" && commandProblem(s.Command) == "" {
			if prev, ok := commands[s.Command]; ok {
				add(s.Source, ErrDuplicateCommand, "command %q is also the command of skill %q in %s", s.Command, prev.ID, prev.Source)
			} else {
				commands[s.Command] = s
			}
		}
		for i := range s.HTTPTools {
			h := &s.HTTPTools[i]
			if !damaged {
				problems = append(problems, checkHTTPTool(s, i, h)...)
			}
			if h.Name == "" {
				continue
			}
			if prev, ok := declared[h.Name]; ok {
				add(s.Source, ErrToolConflict, "http tool %q is also declared by skill %q in %s", h.Name, prev.ID, prev.Source)
				continue
			}
			declared[h.Name] = s
			if checkRegistry && knownTool(h.Name) {
				add(s.Source, ErrToolConflict, "http tool %q has the name of a registered tool: rename it", h.Name)
			}
		}
	}

	if checkRegistry {
		for _, s := range skills {
			for _, t := range s.Tools {
				if !knownTool(t) && declared[t] == nil {
					add(s.Source, ErrUnknownTool, "skill %q uses tool %q, which is neither a registered tool nor declared in any skill's http_tools", s.ID, t)
				}
			}
		}
	}
	return problems
}

// checkSkill returns the problems of skill s's own values, other than its
// HTTP tools.
func checkSkill(s *Skill) []error {
	var problems []error
	add := func(k error, format string, args ...any) {
		problems = append(problems, &FileError{Path: s.Source, Err: k, Detail: fmt.Sprintf(format, args...)})
	}
	if !reSkillID.MatchString(s.ID) {
		add(ErrBadID, "skill id %q is invalid: use 1 to 64 characters from a-z A-Z 0-9 _ -", s.ID)
	}
	if strings.TrimSpace(s.Description) == "" {
		add(ErrMissingDescription, "skill %q has no description", s.ID)
	}
	if strings.TrimSpace(s.Prompt) == "" {
		add(ErrMissingPrompt, "skill %q has no prompt: write its prompt fragment after the closing ---", s.ID)
	}
	if s.MaxTurns < 0 || s.MaxTurns > MaxTurnsLimit {
		add(ErrOutOfRange, "max_turns must be between 1 and %d, got %d", MaxTurnsLimit, s.MaxTurns)
	}
	if s.Command != "" {
		if msg := commandProblem(s.Command); msg != "" {
			add(ErrBadCommand, "%s", msg)
		}
	}
	return problems
}

// commandProblem returns what is wrong with the slash command cmd, or "".
func commandProblem(cmd string) string {
	switch {
	case !strings.HasPrefix(cmd, "/"):
		return fmt.Sprintf("command %q must start with \"/\"", cmd)
	case strings.IndexFunc(cmd, unicode.IsSpace) >= 0:
		return fmt.Sprintf("command %q must not contain spaces", cmd)
	case len(cmd) == 1:
		return fmt.Sprintf("command %q needs a name after the \"/\"", cmd)
	}
	return ""
}

// checkHTTPTool returns the problems of the i-th HTTP tool of skill s.
func checkHTTPTool(s *Skill, i int, h *HTTPTool) []error {
	var problems []error
	label := fmt.Sprintf("http_tools[%d]", i)
	if h.Name != "" {
		label = fmt.Sprintf("http tool %q", h.Name)
	}
	add := func(k error, format string, args ...any) {
		problems = append(problems, &FileError{Path: s.Source, Err: k, Detail: label + ": " + fmt.Sprintf(format, args...)})
	}
	if !reToolName.MatchString(h.Name) {
		add(ErrBadHTTPTool, "name %q is not a valid function name: use 1 to 64 characters from a-z A-Z 0-9 _ -", h.Name)
	}
	if strings.TrimSpace(h.Description) == "" {
		add(ErrBadHTTPTool, "description is required: it tells the model what the tool does")
	}
	if !httpMethods[h.Method] {
		add(ErrBadHTTPTool, "method %q is not one of GET, POST, PUT, PATCH, DELETE", h.Method)
	}
	if strings.TrimSpace(h.URL) == "" {
		add(ErrBadHTTPTool, "url is empty")
	}
	if h.Timeout <= 0 {
		add(ErrBadHTTPTool, "timeout must be positive, got %s", h.Timeout)
	}
	if h.MaxResponseBytes <= 0 {
		add(ErrBadHTTPTool, "max_response_bytes must be positive, got %d", h.MaxResponseBytes)
	}
	if err := checkSchema(h.Parameters); err != "" {
		add(ErrBadHTTPTool, "parameters %s", err)
	}
	// Argument placeholders are checked against the properties only when
	// the schema itself is sound, so a broken schema is reported once.
	props, _ := h.Parameters["properties"].(map[string]any)
	checkArgs := checkSchema(h.Parameters) == ""
	for _, t := range templates(h) {
		if err := checkTemplate(t.text); err != nil {
			add(ErrBadTemplate, "%s: %v", t.where, err)
			continue
		}
		parts, err := parseTemplate(t.text)
		if err != nil {
			add(ErrBadTemplate, "%s: %v", t.where, err)
			continue
		}
		if !checkArgs {
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
	if h.URL != "" {
		origin, _, err := splitURLTemplate(h.URL)
		switch {
		case err != nil && !errors.Is(err, errBadTemplateSyntax):
			add(ErrBadTemplate, "url: %v", err)
		case err == nil && !httpOrigin(origin):
			add(ErrBadHTTPTool, "url %q must start with http:// or https://, or with a ${NAME} holding such a URL", h.URL)
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
	names := sortedKeys(props)
	for i, n := range names {
		names[i] = "{" + n + "}"
	}
	return "it declares " + strings.Join(names, ", ")
}

// TemplatePartKind says what a TemplatePart stands for.
type TemplatePartKind int

// The kinds of TemplatePart.
const (
	// TemplateLiteral is text used as written.
	TemplateLiteral TemplatePartKind = iota
	// TemplateEnv is a ${NAME} reference to an environment variable,
	// usually a secret such as an API key.
	TemplateEnv
	// TemplateArg is a {name} placeholder for the call argument name.
	TemplateArg
)

// TemplatePart is one piece of a parsed HTTP tool template.
type TemplatePart struct {
	Kind TemplatePartKind
	// Text is the literal text, the variable's name or the argument's name.
	Text string
}

// ParseTemplate splits an HTTP tool template into literal text, ${NAME}
// environment references and {name} argument placeholders, in one pass, so
// that an argument's value is never itself read as a template: an argument
// holding "${SECRET}" stays that text.
//
// The grammar is that of ExpandEnv ("$${" writes a literal "${"; NAME is a
// letter or underscore followed by letters, digits and underscores) plus
// argument placeholders: "{" followed by one or more letters, digits, "_"
// or "-" and "}" is a placeholder, "{{" writes a literal "{", and any other
// "{" or "}" is literal text, so JSON or GraphQL text passes through. A
// malformed ${...} is an error wrapping ErrBadTemplate.
func ParseTemplate(s string) ([]TemplatePart, error) {
	parts, err := parseTemplate(s)
	if err != nil {
		return nil, &problem{kind: ErrBadTemplate, msg: err.Error()}
	}
	return parts, nil
}

// SplitURLTemplate parses the URL template s like ParseTemplate and splits
// its parts into the origin (scheme, host and port) and the rest (path,
// query and fragment). The origin ends at the first "/", "?" or "#" of
// literal text that is not part of the scheme's "://", so in
// "${BASE}/items/{id}" the origin is ${BASE}. An argument placeholder in the
// origin is an error wrapping ErrBadTemplate: the operator who wrote the
// file chooses the host, never the model.
func SplitURLTemplate(s string) (origin, rest []TemplatePart, err error) {
	origin, rest, err = splitURLTemplate(s)
	if err != nil {
		return nil, nil, &problem{kind: ErrBadTemplate, msg: err.Error()}
	}
	return origin, rest, nil
}

// errBadTemplateSyntax marks a template that parseTemplate rejected.
var errBadTemplateSyntax = errors.New("bad template syntax")

// splitURLTemplate is SplitURLTemplate with unwrapped errors.
func splitURLTemplate(s string) (origin, rest []TemplatePart, err error) {
	parts, err := parseTemplate(s)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", errBadTemplateSyntax, err)
	}
	afterScheme := false
	for i, p := range parts {
		switch p.Kind {
		case TemplateArg:
			return nil, nil, fmt.Errorf("placeholder {%s} is in the scheme, host or port of %q: arguments may only fill the path and the query, after a literal \"/\" or \"?\"", p.Text, s)
		case TemplateEnv:
			origin = append(origin, p)
			continue
		}
		text := p.Text
		for j := 0; j < len(text); j++ {
			if !afterScheme && strings.HasPrefix(text[j:], "://") {
				afterScheme = true
				j += 2
				continue
			}
			if c := text[j]; c == '/' || c == '?' || c == '#' {
				if j > 0 {
					origin = append(origin, TemplatePart{Kind: TemplateLiteral, Text: text[:j]})
				}
				rest = append(rest, TemplatePart{Kind: TemplateLiteral, Text: text[j:]})
				return origin, append(rest, parts[i+1:]...), nil
			}
		}
		origin = append(origin, p)
	}
	return origin, nil, nil
}

// parseTemplate is ParseTemplate with unwrapped errors, whose messages
// match those of ExpandEnv.
func parseTemplate(s string) ([]TemplatePart, error) {
	var parts []TemplatePart
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			parts = append(parts, TemplatePart{Kind: TemplateLiteral, Text: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			lit.WriteString("${")
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return nil, fmt.Errorf(`unterminated "${" at byte %d of template %q`, i, s)
			}
			name := s[i+2 : i+2+end]
			if !validEnvName(name) {
				return nil, fmt.Errorf(`"${%s}" in template %q is not a valid variable reference: use letters, digits and underscores, not starting with a digit`, name, s)
			}
			flush()
			parts = append(parts, TemplatePart{Kind: TemplateEnv, Text: name})
			i += 2 + end + 1
		case strings.HasPrefix(s[i:], "{{"):
			lit.WriteByte('{')
			i += 2
		case s[i] == '{':
			name := argName(s[i+1:])
			if name == "" {
				lit.WriteByte('{')
				i++
				continue
			}
			flush()
			parts = append(parts, TemplatePart{Kind: TemplateArg, Text: name})
			i += len(name) + 2
		default:
			lit.WriteByte(s[i])
			i++
		}
	}
	flush()
	return parts, nil
}

// argName returns the argument name of a placeholder whose "{" was just
// before s, or "" when s does not start with a name and "}".
func argName(s string) string {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '}':
			return s[:i]
		case c == '_', c == '-', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		default:
			return ""
		}
	}
	return ""
}

// checkSchema returns why schema is not an object schema, or "".
func checkSchema(schema map[string]any) string {
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

// template is one template string of an HTTP tool and where it sits.
type template struct{ where, text string }

// templates returns the template strings of h in a stable order.
func templates(h *HTTPTool) []template {
	out := []template{{"url", h.URL}}
	for _, k := range sortedKeys(h.Headers) {
		out = append(out, template{"headers." + k, h.Headers[k]})
	}
	for _, k := range sortedKeys(h.Query) {
		out = append(out, template{"query." + k, h.Query[k]})
	}
	var walk func(where string, v any)
	walk = func(where string, v any) {
		switch v := v.(type) {
		case string:
			out = append(out, template{where, v})
		case map[string]any:
			for _, k := range sortedKeys(v) {
				walk(where+"."+k, v[k])
			}
		case []any:
			for i, e := range v {
				walk(fmt.Sprintf("%s[%d]", where, i), e)
			}
		}
	}
	walk("body", h.Body)
	return out
}

// sortedKeys returns the keys of m, sorted.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
