package skills

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
)

// The engine's own prompts: what the planner, the supervisors, the
// dispatcher and the memory are told, and the notes a run adds to a
// conversation. Each is a plain text file, prompts/<name>.md, built in
// (builtin/prompts) and replaced by an operator's file of the same name in
// their directory, the way agents and skills are.
const (
	PromptPlanner       = "planner"        // leads the planner's system prompt
	PromptPlannerMemory = "planner-memory" // offers the planner memory steps
	PromptPlanReview    = "plan-review"    // the plan supervisor
	PromptStepReview    = "step-review"    // the step supervisor
	PromptClassify      = "classify"       // the dispatcher of "auto" agents
	PromptMemoryExtract = "memory-extract" // extracts facts to remember
	PromptMaxTurns      = "max-turns"      // added when an agent used all its turns
	PromptRecall        = "recall"         // leads the recalled memories
	PromptCompact       = "compact"        // summarizes older turns that no longer fit the window
)

// promptNames lists every prompt; a file in prompts/ with another name is
// an error (a misspelt override would otherwise be ignored).
var promptNames = []string{PromptPlanner, PromptPlannerMemory, PromptPlanReview, PromptStepReview,
	PromptClassify, PromptMemoryExtract, PromptMaxTurns, PromptRecall, PromptCompact}

// promptDir is the directory of a layer that holds prompts, not agent or
// skill files.
const promptDir = "prompts"

// loadPrompts reads the layer's prompts/ directory into c, replacing the
// prompts of earlier layers.
func (c *Catalog) loadPrompts(layer fs.FS) []error {
	entries, err := fs.ReadDir(layer, promptDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return []error{&FileError{Path: sourceName(layer, promptDir), Err: err, Detail: err.Error()}}
	}
	var problems []error
	for _, e := range entries {
		p := path.Join(promptDir, e.Name())
		name, isMD := strings.CutSuffix(e.Name(), ".md")
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") || !isMD {
			continue
		}
		src := sourceName(layer, p)
		if !slices.Contains(promptNames, name) {
			problems = append(problems, &FileError{Path: src, Err: ErrUnknownPrompt, Detail: fmt.Sprintf("no prompt is called %q (the prompts are %s)", name, strings.Join(promptNames, ", "))})
			continue
		}
		data, err := fs.ReadFile(layer, p)
		if err != nil {
			problems = append(problems, &FileError{Path: src, Err: err, Detail: err.Error()})
			continue
		}
		text := strings.TrimSpace(string(data))
		if text == "" {
			problems = append(problems, &FileError{Path: src, Err: ErrMissingPrompt, Detail: "the prompt is empty"})
			continue
		}
		if c.prompts == nil {
			c.prompts = map[string]string{}
		}
		c.prompts[name] = text
	}
	return problems
}

// Prompt returns the text of the named prompt (one of the Prompt*
// constants): the operator's when they gave one, else the built-in one.
func (c *Catalog) Prompt(name string) string {
	if c != nil {
		if p, ok := c.prompts[name]; ok {
			return p
		}
	}
	return builtinPrompt(name)
}

// builtinPrompt reads a built-in prompt; a catalog loaded without the
// built-in layer (tests) still has every prompt.
func builtinPrompt(name string) string {
	data, err := fs.ReadFile(builtinFiles, "builtin/"+promptDir+"/"+name+".md")
	if err != nil {
		panic(fmt.Sprintf("skills: the built-in prompt %q is missing: %v", name, err))
	}
	return strings.TrimSpace(string(data))
}
