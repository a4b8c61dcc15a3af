package skills

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

// TestModelFallbackLists: model: and each models: entry take a string or a
// list, a list becoming one reference of its models joined by commas; a
// skill's model: likewise. CheckModels checks the joined reference, which
// the endpoints' rule checks model by model.
func TestModelFallbackLists(t *testing.T) {
	c := mustLoad(t, nil, fstest.MapFS{
		"a.md": {Data: []byte(agentMD("agent: a\ndescription: A\nmodel: [remote:big-model, llama3.1:8b]\n"+
			"models:\n  answer:\n    - remote:big-model\n    - llama3.1:8b\n  plan: qwen2.5:7b\n", ""))},
		"s.md": {Data: []byte("---\nskill: s\ndescription: S\nmodel: [\"other:x\", \"llama3.1:8b\"]\n---\nS.\n")},
	})
	a, _ := c.Agent("a")
	if a.Model != "remote:big-model,llama3.1:8b" {
		t.Errorf("model = %q", a.Model)
	}
	if want := (RoleModels{Plan: "qwen2.5:7b", Answer: "remote:big-model,llama3.1:8b"}); a.Models != want {
		t.Errorf("models = %+v, want %+v", a.Models, want)
	}
	s, _ := c.Skill("s")
	if s.Model != "other:x,llama3.1:8b" {
		t.Errorf("skill model = %q", s.Model)
	}
	var checked []string
	_ = c.CheckModels(func(ref string) error { checked = append(checked, ref); return nil })
	if diff := cmp.Diff([]string{"remote:big-model,llama3.1:8b", "qwen2.5:7b", "remote:big-model,llama3.1:8b", "other:x,llama3.1:8b"}, checked); diff != "" {
		t.Errorf("CheckModels checked (-want +got):\n%s", diff)
	}
}

// TestModelFallbackListErrors: a list entry that is not one model
// reference, and an empty list, are reported with their line and path.
func TestModelFallbackListErrors(t *testing.T) {
	for _, tc := range []struct{ front, want string }{
		{"model: [a, {b: c}]\n", "model[1]: bad value: want a model reference"},
		{"model: [\"a,b\"]\n", "model[0]: bad value: want a model reference"},
		{"model: [\" \"]\n", "model[0]: bad value: want a model reference"},
		{"model: []\n", "model: an empty list"},
		{"models: {answer: [a, [b]]}\n", "models.answer[1]: bad value"},
	} {
		_, err := Load(fstest.MapFS{"a.md": {Data: []byte(agentMD("agent: a\ndescription: A\n"+tc.front, "You help.\n"))}})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrInvalid) {
			t.Errorf("%q: error = %v, want one with %q", tc.front, err, tc.want)
		}
	}
}
