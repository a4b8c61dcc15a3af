package tools

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// The template language of HTTP tools and MCP server settings has two kinds
// of reference. ${NAME} is an environment variable, usually a secret such as
// an API key, read when the template is used and never when it is loaded;
// NAME is a letter or underscore followed by letters, digits and
// underscores, and "$${" writes a literal "${". {name} is the call argument
// name of an HTTP tool: "{" followed by one or more letters, digits, "_" or
// "-" and "}"; "{{" writes a literal "{", and any other "{" or "}" is
// literal text, so that JSON or GraphQL passes through. MCP settings have no
// arguments: there, every "{" is literal. One scanner, scan, reads both.

// Errors of the template language.
var (
	// ErrBadTemplate marks a malformed ${NAME} reference, or an {arg}
	// placeholder where it may not stand.
	ErrBadTemplate = errors.New("bad template")
	// ErrMissingEnv marks a ${NAME} reference whose variable is not set.
	ErrMissingEnv = errors.New("missing environment variable")
)

// templateError is an error of one of the template language's kinds whose
// message is its detail alone, so that callers can prefix their own context.
type templateError struct {
	kind error
	msg  string
}

func (e *templateError) Error() string { return e.msg }
func (e *templateError) Unwrap() error { return e.kind }

// TemplatePartKind says what a TemplatePart stands for.
type TemplatePartKind int

// The kinds of TemplatePart.
const (
	// TemplateLiteral is text used as written.
	TemplateLiteral TemplatePartKind = iota
	// TemplateEnv is a ${NAME} reference to an environment variable.
	TemplateEnv
	// TemplateArg is a {name} placeholder for the call argument name.
	TemplateArg
	// TemplateUserSecret is a ${user.secret:NAME} reference to the secret
	// NAME of the user the call is made for (set through the secrets API),
	// allowed only in an HTTP tool's headers; Text is NAME.
	TemplateUserSecret
)

// UserSecretPrefix starts a ${user.secret:NAME} reference.
const UserSecretPrefix = "user.secret:"

// TemplatePart is one piece of a parsed template.
type TemplatePart struct {
	Kind TemplatePartKind
	// Text is the literal text, the variable's name or the argument's name.
	Text string
}

// ParseTemplate splits an HTTP tool template into literal text, ${NAME}
// references and {name} argument placeholders, in one pass, so that an
// argument's value is never itself read as a template: an argument holding
// "${SECRET}" stays that text. A malformed ${...} is an error wrapping
// ErrBadTemplate.
func ParseTemplate(s string) ([]TemplatePart, error) {
	return scan(s, true)
}

// ExpandEnv expands the ${NAME} references of s, a template without
// argument placeholders (every "{" is literal), looking each NAME up with
// lookup (os.LookupEnv when lookup is nil).
//
// A variable that is not set is an error wrapping ErrMissingEnv and naming
// the variable — never its value — with one such error per missing variable.
// A malformed reference is an error wrapping ErrBadTemplate.
func ExpandEnv(s string, lookup func(string) (string, bool)) (string, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	parts, err := scan(s, false)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	var errs []error
	seen := map[string]bool{}
	for _, p := range parts {
		if p.Kind == TemplateLiteral {
			b.WriteString(p.Text)
			continue
		}
		if p.Kind == TemplateUserSecret {
			return "", &templateError{ErrBadTemplate, fmt.Sprintf("${%s%s}: a user's secret may only stand in an HTTP tool's headers", UserSecretPrefix, p.Text)}
		}
		if v, ok := lookup(p.Text); ok {
			b.WriteString(v)
		} else if !seen[p.Text] {
			seen[p.Text] = true
			errs = append(errs, &templateError{ErrMissingEnv, fmt.Sprintf("environment variable %q is not set", p.Text)})
		}
	}
	if len(errs) > 0 {
		return "", errors.Join(errs...)
	}
	return b.String(), nil
}

// SplitURLTemplate parses the URL template s like ParseTemplate and splits
// its parts into the origin (scheme, host and port) and the rest (path,
// query and fragment). The origin ends at the first "/", "?" or "#" of
// literal text that is not part of the scheme's "://", so in
// "${BASE}/items/{id}" the origin is ${BASE}. An argument placeholder in the
// origin is an error wrapping ErrBadTemplate: the operator who wrote the
// file chooses the host, never the model.
func SplitURLTemplate(s string) (origin, rest []TemplatePart, err error) {
	parts, err := ParseTemplate(s)
	if err != nil {
		return nil, nil, err
	}
	afterScheme := false
	for i, p := range parts {
		switch p.Kind {
		case TemplateUserSecret:
			return nil, nil, &templateError{ErrBadTemplate, fmt.Sprintf("${%s%s} is in the URL %q: a user's secret may only stand in an HTTP tool's headers", UserSecretPrefix, p.Text, s)}
		case TemplateArg:
			return nil, nil, &templateError{ErrBadTemplate, fmt.Sprintf("placeholder {%s} is in the scheme, host or port of %q: arguments may only fill the path and the query, after a literal \"/\" or \"?\"", p.Text, s)}
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

// scan parses s; with args false, "{" is always literal text.
func scan(s string, args bool) ([]TemplatePart, error) {
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
				return nil, &templateError{ErrBadTemplate, fmt.Sprintf(`unterminated "${" at byte %d of template %q`, i, s)}
			}
			name := s[i+2 : i+2+end]
			if secret, ok := strings.CutPrefix(name, UserSecretPrefix); ok {
				if !validSecretName(secret) {
					return nil, &templateError{ErrBadTemplate, fmt.Sprintf(`"${%s}" in template %q is not a valid user secret reference: a secret name is 1 to 64 letters, digits, "_" or "-"`, name, s)}
				}
				flush()
				parts = append(parts, TemplatePart{Kind: TemplateUserSecret, Text: secret})
				i += 2 + end + 1
				continue
			}
			if !validEnvName(name) {
				return nil, &templateError{ErrBadTemplate, fmt.Sprintf(`"${%s}" in template %q is not a valid variable reference: use letters, digits and underscores, not starting with a digit`, name, s)}
			}
			flush()
			parts = append(parts, TemplatePart{Kind: TemplateEnv, Text: name})
			i += 2 + end + 1
		case args && strings.HasPrefix(s[i:], "{{"):
			lit.WriteByte('{')
			i += 2
		case args && s[i] == '{' && argName(s[i+1:]) != "":
			name := argName(s[i+1:])
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

// validSecretName reports whether name can name a user's secret: 1 to 64
// letters, digits, "_" or "-" (usercreds.ValidSecretName).
func validSecretName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for _, r := range name {
		switch {
		case r == '_', r == '-', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		default:
			return false
		}
	}
	return true
}

// validEnvName reports whether name is a valid environment variable name.
func validEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i, r := range name {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
