package skills

import (
	"errors"
	"strings"
	"testing"
)

func TestPromptsBuiltinAndOverride(t *testing.T) {
	base, err := Load(Builtin())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range promptNames {
		if strings.TrimSpace(base.Prompt(name)) == "" {
			t.Errorf("built-in prompt %q is empty", name)
		}
	}
	if !strings.HasPrefix(base.Prompt(PromptPlanner), "You are planning") {
		t.Errorf("planner prompt = %q", base.Prompt(PromptPlanner))
	}
	op := mapFS(map[string]string{"prompts/planner.md": "\nPlan in three steps at most.\n"})
	c, err := Load(Builtin(), op)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Prompt(PromptPlanner); got != "Plan in three steps at most." {
		t.Errorf("overridden planner prompt = %q", got)
	}
	if c.Prompt(PromptClassify) != base.Prompt(PromptClassify) {
		t.Error("a prompt the operator did not override changed")
	}
	if len(c.Agents()) != len(base.Agents()) {
		t.Error("files in prompts/ were read as agent or skill files")
	}
}

func TestPromptsRefused(t *testing.T) {
	for name, files := range map[string]map[string]string{
		"misspelt": {"prompts/planer.md": "Plan."},
		"empty":    {"prompts/classify.md": " \n"},
	} {
		_, err := Load(Builtin(), mapFS(files))
		var fe *FileError
		if !errors.As(err, &fe) || !errors.Is(err, ErrInvalid) {
			t.Fatalf("%s: err = %v, want a *FileError", name, err)
		}
		for path := range files {
			if !strings.Contains(err.Error(), path) {
				t.Errorf("%s: %v does not name %s", name, err, path)
			}
		}
	}
}
