package skills

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
)

// FuzzLoad loads an operator's agent or skill file, whatever it holds:
// the catalog loads, or every problem is a *FileError that names the file.
func FuzzLoad(f *testing.F) {
	for _, s := range []string{
		"---\nagent: a\nname: A\ndescription: d\n---\nYou help.\n",
		"---\nskill: s\nname: S\ndescription: d\ncommand: /s\ntools: [current_time]\n---\nDo {{.Input}}.\n",
		"---\nskill: h\nname: H\ndescription: d\nhttp_tools:\n  - name: get_item\n    description: Gets an item\n    url: https://${HOST}/items/{id}\n    parameters: {type: object, properties: {id: {type: string}}}\n    approval: required\n---\nbody\n",
		"---\nagent: a\nagent: b\n---\n",
		"---\nagent: [1\n---\n",
		"---\nagent: a\nskill: s\n---\n",
		"---\nname: 3\n",
		"no frontmatter",
		"\ufeff---\r\nagent: a\r\nmax_steps: x\r\n---\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const src = "fuzz/agents/x.md"
		_, err := Load(Named("fuzz", fstest.MapFS{"agents/x.md": {Data: data}}))
		if err == nil {
			return
		}
		var joined interface{ Unwrap() []error }
		problems := []error{err}
		if errors.As(err, &joined) {
			problems = joined.Unwrap()
		}
		for _, p := range problems {
			var fe *FileError
			if !errors.As(p, &fe) {
				t.Fatalf("a problem that names no file: %v", p)
			}
			if fe.Path != src || !errors.Is(p, ErrInvalid) && !errors.Is(p, ErrMissingEnv) {
				t.Fatalf("problem %v: path %q, kind %v", p, fe.Path, fe.Err)
			}
			if strings.TrimSpace(p.Error()) == "" {
				t.Fatal("an empty problem")
			}
		}
	})
}

// FuzzTemplate parses an HTTP tool template: it parses exactly when the
// ${NAME} grammar of ExpandEnv accepts it, and the parts written back in
// the grammar parse to the same parts.
func FuzzTemplate(f *testing.F) {
	for _, s := range []string{
		"${BASE}/items/{id}?q={q}", "$${literal}", "{{not_an_arg}}", `{"json": {id}}`, "${", "${1X}", "{a-b_c}", "{}", "$", "}{",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		parts, err := ParseTemplate(s)
		if envErr := checkTemplate(s); (err == nil) != (envErr == nil) {
			t.Fatalf("%q: ParseTemplate says %v, ExpandEnv's grammar says %v", s, err, envErr)
		}
		if err != nil {
			if !errors.Is(err, ErrBadTemplate) {
				t.Fatalf("%q: error %v does not wrap ErrBadTemplate", s, err)
			}
			return
		}
		again, err := ParseTemplate(render(parts))
		if err != nil || !reflect.DeepEqual(again, parts) {
			t.Fatalf("%q → %+v → %q → %+v (%v)", s, parts, render(parts), again, err)
		}
		if origin, rest, err := SplitURLTemplate(s); err == nil {
			for _, p := range origin {
				if p.Kind == TemplateArg {
					t.Fatalf("%q: an argument in the origin: %+v", s, origin)
				}
			}
			if render(append(origin, rest...)) != render(parts) {
				t.Fatalf("%q split into %+v and %+v", s, origin, rest)
			}
		}
	})
}

// render writes parts back in the template grammar.
func render(parts []TemplatePart) string {
	var b strings.Builder
	for _, p := range parts {
		switch p.Kind {
		case TemplateEnv:
			b.WriteString("${" + p.Text + "}")
		case TemplateArg:
			b.WriteString("{" + p.Text + "}")
		default:
			for i := 0; i < len(p.Text); i++ {
				switch {
				case strings.HasPrefix(p.Text[i:], "${"):
					b.WriteString("$${")
					i++
				case p.Text[i] == '{':
					b.WriteString("{{")
				default:
					b.WriteByte(p.Text[i])
				}
			}
		}
	}
	return b.String()
}
