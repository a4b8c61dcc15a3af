package tools

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestExpandEnv(t *testing.T) {
	env := map[string]string{"HOST": "media.local", "KEY": "s3cret", "EMPTY": ""}
	lookup := func(name string) (string, bool) { v, ok := env[name]; return v, ok }
	tests := []struct {
		name        string
		in          string
		want        string
		wantErr     error
		wantMissing []string
	}{
		{name: "no template", in: "https://example.com/a?b=$1", want: "https://example.com/a?b=$1"},
		{name: "expands", in: "https://${HOST}/api?key=${KEY}", want: "https://media.local/api?key=s3cret"},
		{name: "set but empty", in: "[${EMPTY}]", want: "[]"},
		{name: "escape", in: "$${HOST} and $HOST", want: "${HOST} and $HOST"},
		{name: "unicode kept", in: "é${HOST}ü", want: "émedia.localü"},
		{name: "missing", in: "${HOST}/${MEDIA_SERVER_KEY}", wantErr: ErrMissingEnv, wantMissing: []string{"MEDIA_SERVER_KEY"}},
		{name: "several missing, each once", in: "${A}${B}${A}", wantErr: ErrMissingEnv, wantMissing: []string{"A", "B"}},
		{name: "unterminated", in: "x${HOST", wantErr: ErrBadTemplate},
		{name: "empty name", in: "${}", wantErr: ErrBadTemplate},
		{name: "bad name", in: "${1X}", wantErr: ErrBadTemplate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ExpandEnv(tt.in, lookup)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("ExpandEnv(%q): %v", tt.in, err)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("ExpandEnv(%q) (-want +got):\n%s", tt.in, diff)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("ExpandEnv(%q) error = %v, want %v", tt.in, err, tt.wantErr)
			}
			if got != "" {
				t.Errorf("ExpandEnv(%q) = %q alongside an error, want \"\"", tt.in, got)
			}
			for _, name := range tt.wantMissing {
				if !strings.Contains(err.Error(), `"`+name+`"`) {
					t.Errorf("error %q does not name %s", err, name)
				}
			}
			if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "media.local") {
				t.Errorf("error %q leaks a variable's value", err)
			}
		})
	}
}

func TestExpandEnvUsesProcessEnvironment(t *testing.T) {
	t.Setenv("LONGHAUL_TEST_SKILLS_VAR", "value")
	got, err := ExpandEnv("<${LONGHAUL_TEST_SKILLS_VAR}>", nil)
	if err != nil || got != "<value>" {
		t.Errorf("ExpandEnv = %q, %v; want %q", got, err, "<value>")
	}
}

func TestParseTemplate(t *testing.T) {
	lit := func(s string) TemplatePart { return TemplatePart{Kind: TemplateLiteral, Text: s} }
	env := func(s string) TemplatePart { return TemplatePart{Kind: TemplateEnv, Text: s} }
	arg := func(s string) TemplatePart { return TemplatePart{Kind: TemplateArg, Text: s} }
	tests := []struct {
		in      string
		want    []TemplatePart
		wantErr bool
	}{
		{in: "", want: nil},
		{in: "plain", want: []TemplatePart{lit("plain")}},
		{in: "Bearer ${TOKEN}", want: []TemplatePart{lit("Bearer "), env("TOKEN")}},
		{in: "${BASE}/items/{id}", want: []TemplatePart{env("BASE"), lit("/items/"), arg("id")}},
		{in: "{a}{b-c}{d_e}", want: []TemplatePart{arg("a"), arg("b-c"), arg("d_e")}},
		{in: "{{id}", want: []TemplatePart{lit("{id}")}},
		{in: "$${X} and $5", want: []TemplatePart{lit("${X} and $5")}},
		{in: "{ viewer { login } }", want: []TemplatePart{lit("{ viewer { login } }")}},
		{in: `{"a":1}`, want: []TemplatePart{lit(`{"a":1}`)}},
		{in: "{}", want: []TemplatePart{lit("{}")}},
		{in: "x{unterminated", want: []TemplatePart{lit("x{unterminated")}},
		{in: "${A}}", want: []TemplatePart{env("A"), lit("}")}},
		{in: "${UNCLOSED", wantErr: true},
		{in: "${1X}", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseTemplate(tt.in)
		if tt.wantErr {
			if !errors.Is(err, ErrBadTemplate) {
				t.Errorf("ParseTemplate(%q) error = %v, want ErrBadTemplate", tt.in, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseTemplate(%q): %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("ParseTemplate(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestSplitURLTemplate(t *testing.T) {
	tests := []struct {
		in, origin, rest string
		wantErr          bool
	}{
		{in: "https://api.example.com/v1/{id}?q={q}", origin: "https://api.example.com", rest: "/v1/{id}?q={q}"},
		{in: "${BASE}/v1/{id}", origin: "${BASE}", rest: "/v1/{id}"},
		{in: "${BASE}?q={q}", origin: "${BASE}", rest: "?q={q}"},
		{in: "https://${HOST}:8443/{id}", origin: "https://${HOST}:8443", rest: "/{id}"},
		{in: "${SCHEME}://${HOST}/x", origin: "${SCHEME}://${HOST}", rest: "/x"},
		{in: "http://h", origin: "http://h", rest: ""},
		{in: "https://{host}/x", wantErr: true},
		{in: "https://h:{port}/x", wantErr: true},
		{in: "${BASE}{path}", wantErr: true},
		{in: "https://h{suffix}", wantErr: true},
		{in: "${BAD", wantErr: true},
	}
	for _, tt := range tests {
		origin, rest, err := SplitURLTemplate(tt.in)
		if tt.wantErr {
			if !errors.Is(err, ErrBadTemplate) {
				t.Errorf("SplitURLTemplate(%q) error = %v, want ErrBadTemplate", tt.in, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("SplitURLTemplate(%q): %v", tt.in, err)
			continue
		}
		if o, r := writeTemplate(origin), writeTemplate(rest); o != tt.origin || r != tt.rest {
			t.Errorf("SplitURLTemplate(%q) = %q + %q, want %q + %q", tt.in, o, r, tt.origin, tt.rest)
		}
	}
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
		if _, envErr := ExpandEnv(s, func(string) (string, bool) { return "", true }); (err == nil) != (envErr == nil) {
			t.Fatalf("%q: ParseTemplate says %v, ExpandEnv's grammar says %v", s, err, envErr)
		}
		if err != nil {
			if !errors.Is(err, ErrBadTemplate) {
				t.Fatalf("%q: error %v does not wrap ErrBadTemplate", s, err)
			}
			return
		}
		again, err := ParseTemplate(writeTemplate(parts))
		if err != nil || !reflect.DeepEqual(again, parts) {
			t.Fatalf("%q → %+v → %q → %+v (%v)", s, parts, writeTemplate(parts), again, err)
		}
		if origin, rest, err := SplitURLTemplate(s); err == nil {
			for _, p := range origin {
				if p.Kind == TemplateArg {
					t.Fatalf("%q: an argument in the origin: %+v", s, origin)
				}
			}
			if writeTemplate(append(origin, rest...)) != writeTemplate(parts) {
				t.Fatalf("%q split into %+v and %+v", s, origin, rest)
			}
		}
	})
}

// writeTemplate writes parts back in the template grammar.
func writeTemplate(parts []TemplatePart) string {
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

func TestUserSecretTemplate(t *testing.T) {
	parts, err := ParseTemplate("Bearer ${user.secret:SEERR_key-1}")
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 2 || parts[1] != (TemplatePart{Kind: TemplateUserSecret, Text: "SEERR_key-1"}) {
		t.Errorf("ParseTemplate = %+v", parts)
	}
	for _, bad := range []string{"${user.secret:}", "${user.secret:a b}", "${user.secret:a.b}"} {
		if _, err := ParseTemplate(bad); !errors.Is(err, ErrBadTemplate) {
			t.Errorf("ParseTemplate(%q) = %v, want ErrBadTemplate", bad, err)
		}
	}
	// Only an HTTP tool's headers may hold one: not MCP settings, not a URL.
	if _, err := ExpandEnv("${user.secret:X}", nil); !errors.Is(err, ErrBadTemplate) {
		t.Errorf("ExpandEnv: %v, want ErrBadTemplate", err)
	}
	if _, _, err := SplitURLTemplate("https://${user.secret:X}/a"); !errors.Is(err, ErrBadTemplate) {
		t.Errorf("SplitURLTemplate: %v, want ErrBadTemplate", err)
	}
}
