package skills

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// ExpandEnv expands the ${NAME} references in the template s, looking each
// NAME up with lookup (os.LookupEnv when lookup is nil). NAME is a letter or
// underscore followed by letters, digits and underscores. A "$" not followed
// by "{" is kept as is, and "$${" writes a literal "${".
//
// A variable that is not set is an error wrapping ErrMissingEnv and naming
// the variable — never its value — with one such error per missing variable.
// A malformed reference is an error wrapping ErrBadTemplate.
func ExpandEnv(s string, lookup func(string) (string, bool)) (string, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	out, missing, err := expand(s, lookup)
	if err != nil {
		return "", &problem{kind: ErrBadTemplate, msg: err.Error()}
	}
	if len(missing) > 0 {
		errs := make([]error, len(missing))
		for i, name := range missing {
			errs[i] = &problem{kind: ErrMissingEnv, msg: fmt.Sprintf("environment variable %q is not set", name)}
		}
		return "", errors.Join(errs...)
	}
	return out, nil
}

// problem is an error of a given kind outside any one file.
type problem struct {
	kind error
	msg  string
}

func (p *problem) Error() string { return "skills: " + p.msg }
func (p *problem) Unwrap() error { return p.kind }

// checkTemplate reports whether s is a well-formed template.
func checkTemplate(s string) error {
	_, _, err := expand(s, func(string) (string, bool) { return "", true })
	return err
}

// expand expands s, returning the result and the names, without repeats, of
// the variables lookup did not find.
func expand(s string, lookup func(string) (string, bool)) (string, []string, error) {
	if !strings.Contains(s, "$") {
		return s, nil, nil
	}
	var b strings.Builder
	var missing []string
	seen := map[string]bool{}
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			b.WriteString("${")
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return "", nil, fmt.Errorf(`unterminated "${" at byte %d of template %q`, i, s)
			}
			name := s[i+2 : i+2+end]
			if !validEnvName(name) {
				return "", nil, fmt.Errorf(`"${%s}" in template %q is not a valid variable reference: use letters, digits and underscores, not starting with a digit`, name, s)
			}
			if v, ok := lookup(name); ok {
				b.WriteString(v)
			} else if !seen[name] {
				seen[name] = true
				missing = append(missing, name)
			}
			i += 2 + end + 1
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String(), missing, nil
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
