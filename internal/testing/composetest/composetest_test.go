package composetest_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/internal/testing/composetest"
)

// TestLoadInterpolation: a variable with neither a value nor a default is
// an error (Compose itself would put in an empty string), a default or an
// empty value is not, and ${VAR:?message} fails with its message.
func TestLoadInterpolation(t *testing.T) {
	for _, c := range []struct {
		name, value string
		env         map[string]string
		want        string // the value of X in the service, or the error
		fails       bool
	}{
		{"set", "${A}", map[string]string{"A": "a"}, "a", false},
		{"set empty", "${A}", map[string]string{"A": ""}, "", false},
		{"default", "${A:-d}", nil, "d", false},
		{"empty default", "${A:-}", nil, "", false},
		{"escaped", "$${A}", nil, "${A}", false},
		{"unset", "x${A}", nil, "${A} is not set", true},
		{"unset, plain form", "$A", nil, "$A is not set", true},
		{"required", "${A:?set A in .env}", nil, "set A in .env", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			yml := "services:\n  s:\n    image: busybox:1\n    environment:\n      X: '" + c.value + "'\n"
			if err := os.WriteFile(filepath.Join(root, composetest.File), []byte(yml), 0o600); err != nil {
				t.Fatal(err)
			}
			p, err := composetest.LoadErr(context.Background(), root, c.env)
			if c.fails {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Errorf("error %v, want one saying %q", err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := composetest.Env(p.Services["s"])["X"]; got != c.want {
				t.Errorf("X=%q, want %q", got, c.want)
			}
		})
	}
}

// TestHostPath maps a path in a container to the file behind its bind
// mount, the innermost mount winning, and reports a path no bind mount
// covers.
func TestHostPath(t *testing.T) {
	root := t.TempDir()
	yml := `services:
  s:
    image: busybox:1
    volumes:
      - ./conf:/etc/app
      - ./conf/inner:/etc/app/inner:ro
      - data:/data
volumes:
  data:
`
	if err := os.WriteFile(filepath.Join(root, composetest.File), []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := composetest.LoadErr(context.Background(), root, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := p.Services["s"]
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{"/etc/app/a.yaml", filepath.Join(root, "conf", "a.yaml"), true},
		{"/etc/app/inner/b.yaml", filepath.Join(root, "conf", "inner", "b.yaml"), true},
		{"/etc/application/a.yaml", "", false},
		{"/data/x", "", false}, // a named volume, not a file of this machine
	} {
		if got, ok := composetest.HostPath(s, c.in); ok != c.ok || got != c.want {
			t.Errorf("HostPath(%s) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}
