package skills

import (
	"errors"
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
			if fe.Path != src || !errors.Is(p, ErrInvalid) {
				t.Fatalf("problem %v: path %q, kind %v", p, fe.Path, fe.Err)
			}
			if strings.TrimSpace(p.Error()) == "" {
				t.Fatal("an empty problem")
			}
		}
	})
}
