package skills

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode"

	"github.com/longhaul-dev/longhaul/internal/tools"
)

var (
	reAgentID = regexp.MustCompile(`^[a-z0-9._:-]{1,64}$`)
	reSkillID = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	// reLanguage is an ISO 639-1 (or -3) code.
	reLanguage = regexp.MustCompile(`^[a-z]{2,3}$`)
)

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
		return fmt.Errorf("skills: nil catalog: %w", ErrInvalid)
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
	agents := c.Agents()
	for _, a := range agents {
		if !c.damaged[a.Source] {
			problems = append(problems, c.checkAgent(a)...)
		}
	}
	problems = append(problems, c.checkAsks(agents)...)
	skills := c.Skills()
	declared, more := c.checkSkills(skills, knownTool, checkRegistry)
	problems = append(problems, more...)
	if checkRegistry {
		problems = append(problems, checkSkillTools(skills, declared, knownTool)...)
		problems = append(problems, checkAskNames(agents, declared, knownTool)...)
	}
	return problems
}

// checkAgent returns the problems of agent a: its own values and the
// skills it lists.
func (c *Catalog) checkAgent(a *Agent) []error {
	var problems []error
	add := func(k error, format string, args ...any) {
		problems = append(problems, &FileError{Path: a.Source, Err: k, Detail: fmt.Sprintf(format, args...)})
	}
	if !reAgentID.MatchString(a.ID) {
		add(ErrBadID, "agent id %q is invalid: use 1 to 64 characters from a-z 0-9 . _ : -", a.ID)
	}
	if strings.TrimSpace(a.Description) == "" {
		add(ErrMissingDescription, "agent %q has no description", a.ID)
	}
	if !a.Mode.Valid() {
		add(ErrBadMode, "agent %q has mode %q: use chat, agentic or auto", a.ID, a.Mode)
	}
	if !a.Memory.Valid() {
		add(ErrBadMemory, "agent %q has memory %q: use off, tools or recall", a.ID, a.Memory)
	}
	if a.MaxTurns < 0 || a.MaxTurns > MaxTurnsLimit {
		add(ErrOutOfRange, "max_turns must be between 1 and %d, got %d", MaxTurnsLimit, a.MaxTurns)
	}
	if a.MaxReplans < 0 || a.MaxReplans > MaxReplansLimit {
		add(ErrOutOfRange, "max_replans must be between 0 and %d, got %d", MaxReplansLimit, a.MaxReplans)
	}
	if t := a.Temperature; t != nil && (*t < 0 || *t > MaxTemperature) {
		add(ErrOutOfRange, "temperature must be between 0 and %d, got %g", MaxTemperature, *t)
	}
	switch {
	case a.Language != "" && a.Language != LanguageAuto:
		add(ErrBadLanguage, "agent %q has language %q: use auto (answer in the user's language) or leave it out", a.ID, a.Language)
	case a.ReasonIn != "" && a.Language != LanguageAuto:
		add(ErrBadLanguage, "agent %q has reason_in without language: auto", a.ID)
	case a.ReasonIn != "" && !reLanguage.MatchString(a.ReasonIn):
		add(ErrBadLanguage, "agent %q has reason_in %q: use an ISO 639-1 code such as en", a.ID, a.ReasonIn)
	}
	for _, r := range a.Models.Refs() {
		if strings.TrimSpace(r[1]) != r[1] {
			add(ErrInvalid, "models.%s %q has spaces around it", r[0], r[1])
		}
	}
	if strings.TrimSpace(a.Prompt) == "" && len(a.Skills) > 0 {
		add(ErrMissingPrompt, "agent %q has skills but no prompt: write its base prompt after the closing ---", a.ID)
	}
	listed := map[string]bool{}
	for _, id := range a.Skills {
		if listed[id] {
			add(ErrInvalid, "agent %q lists skill %q twice", a.ID, id)
			continue
		}
		listed[id] = true
		if _, ok := c.skills[id]; !ok {
			add(ErrUnknownSkill, "agent %q uses skill %q, which does not exist", a.ID, id)
		}
	}
	return problems
}

// checkSkills returns the problems of the skills' own values and HTTP
// tools, of commands and HTTP tool names two skills share and, with
// checkRegistry, of HTTP tools named like registered tools. declared maps
// each HTTP tool's name to the skill declaring it.
func (c *Catalog) checkSkills(skills []*Skill, knownTool func(string) bool, checkRegistry bool) (declared map[string]*Skill, problems []error) {
	add := func(src string, k error, format string, args ...any) {
		problems = append(problems, &FileError{Path: src, Err: k, Detail: fmt.Sprintf(format, args...)})
	}
	commands := map[string]*Skill{}
	declared = map[string]*Skill{}
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
	return declared, problems
}

// checkSkillTools returns the problems of skills using tools that are
// neither registered nor declared in any skill's http_tools.
func checkSkillTools(skills []*Skill, declared map[string]*Skill, knownTool func(string) bool) []error {
	var problems []error
	for _, s := range skills {
		for _, t := range s.Tools {
			if !knownTool(t) && declared[t] == nil {
				problems = append(problems, &FileError{Path: s.Source, Err: ErrUnknownTool, Detail: fmt.Sprintf(
					"skill %q uses tool %q, which is neither a registered tool nor declared in any skill's http_tools", s.ID, t)})
			}
		}
	}
	return problems
}

// checkAskNames returns the problems of ask_ tools named like a registered
// or an HTTP tool: the call would be the agent's, never the tool's.
func checkAskNames(agents []*Agent, declared map[string]*Skill, knownTool func(string) bool) []error {
	var problems []error
	for _, a := range agents {
		for _, id := range a.Agents {
			if name := AskTool(id); knownTool(name) || declared[name] != nil {
				problems = append(problems, &FileError{Path: a.Source, Err: ErrToolConflict, Detail: fmt.Sprintf(
					"agent %q asks agent %q with the tool %q, which is also a registered or HTTP tool: rename the tool", a.ID, id, name)})
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
func checkHTTPTool(s *Skill, i int, h *tools.HTTPToolDef) []error {
	label := fmt.Sprintf("http_tools[%d]", i)
	if h.Name != "" {
		label = fmt.Sprintf("http tool %q", h.Name)
	}
	var problems []error
	for _, p := range h.Check() {
		k := ErrBadHTTPTool
		if errors.Is(p, tools.ErrBadTemplate) {
			k = ErrBadTemplate
		}
		problems = append(problems, &FileError{Path: s.Source, Err: k, Detail: label + ": " + p.Error()})
	}
	return problems
}

// CheckModels checks every model reference of the catalog — each agent's
// model: and models:, each skill's model: — with check (the configured
// endpoints' rule, endpoints.Set.Check) and returns every problem, joined,
// each a *FileError naming its file and wrapping ErrUnknownEndpoint.
func (c *Catalog) CheckModels(check func(ref string) error) error {
	var problems []error
	add := func(src, key, ref string, err error) {
		problems = append(problems, &FileError{Path: src, Err: ErrUnknownEndpoint, Detail: fmt.Sprintf("%s %q: %v", key, ref, err)})
	}
	for _, a := range c.Agents() {
		if a.Model != "" {
			if err := check(a.Model); err != nil {
				add(a.Source, "model", a.Model, err)
			}
		}
		for _, r := range a.Models.Refs() {
			if err := check(r[1]); err != nil {
				add(a.Source, "models."+r[0], r[1], err)
			}
		}
	}
	for _, s := range c.Skills() {
		if s.Model != "" {
			if err := check(s.Model); err != nil {
				add(s.Source, "model", s.Model, err)
			}
		}
	}
	if len(problems) > 0 {
		return joinSorted(problems)
	}
	return nil
}
