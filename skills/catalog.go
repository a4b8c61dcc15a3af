package skills

import (
	"slices"
	"sort"
	"strings"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/internal/tools"
)

// Catalog is the merged set of agents and skills. It is built by Load and
// read-only afterwards, so it is safe for concurrent use; the agents, skills
// and tools it returns are shared and must not be modified.
type Catalog struct {
	agents map[string]*Agent
	skills map[string]*Skill
	// damaged holds, while Load runs, the sources of entries whose values
	// failed to decode; their own values are not checked further.
	damaged map[string]bool
	// prompts are the operator's prompts by name (see Prompt).
	prompts map[string]string
}

// Agents returns every agent, sorted by id.
func (c *Catalog) Agents() []*Agent {
	if c == nil {
		return nil
	}
	out := make([]*Agent, 0, len(c.agents))
	for _, a := range c.agents {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Agent returns the agent with the given id.
func (c *Catalog) Agent(id string) (*Agent, bool) {
	if c == nil {
		return nil, false
	}
	a, ok := c.agents[id]
	return a, ok
}

// Skills returns every skill, sorted by id.
func (c *Catalog) Skills() []*Skill {
	if c == nil {
		return nil
	}
	out := make([]*Skill, 0, len(c.skills))
	for _, s := range c.skills {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Skill returns the skill with the given id.
func (c *Catalog) Skill(id string) (*Skill, bool) {
	if c == nil {
		return nil, false
	}
	s, ok := c.skills[id]
	return s, ok
}

// HTTPTools returns every HTTP tool declared by any skill, sorted by name.
func (c *Catalog) HTTPTools() []*tools.HTTPToolDef {
	var out []*tools.HTTPToolDef
	for _, s := range c.Skills() {
		for i := range s.HTTPTools {
			out = append(out, &s.HTTPTools[i])
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// SystemPrompt returns the system prompt of agent: its base prompt followed,
// for each of its skills in order, by the skill's prompt fragment under a
// "## <skill id>" heading. Skills with an empty fragment are left out, and
// parts are separated by a blank line.
func (c *Catalog) SystemPrompt(agent *Agent) string {
	return c.systemPrompt(agent, func(*Skill) bool { return true })
}

// SystemPromptFor is SystemPrompt without the fragments of the skills u
// may not use: their prompts are not the model's business in u's runs.
func (c *Catalog) SystemPromptFor(agent *Agent, u longhaul.User) string {
	return c.systemPrompt(agent, func(s *Skill) bool { return s.Allow.Allows(u) })
}

// SystemPromptKeeping is SystemPromptFor without the fragments of the
// skills keep rejects (the engine's own conditions: the documents skill of
// a run without vector stores).
func (c *Catalog) SystemPromptKeeping(agent *Agent, u longhaul.User, keep func(*Skill) bool) string {
	return c.systemPrompt(agent, func(s *Skill) bool { return s.Allow.Allows(u) && keep(s) })
}

func (c *Catalog) systemPrompt(agent *Agent, keep func(*Skill) bool) string {
	if agent == nil {
		return ""
	}
	var parts []string
	if p := strings.TrimSpace(agent.Prompt); p != "" {
		parts = append(parts, p)
	}
	for _, id := range agent.Skills {
		s, ok := c.Skill(id)
		if !ok || !keep(s) {
			continue
		}
		if p := strings.TrimSpace(s.Prompt); p != "" {
			parts = append(parts, "## "+s.ID+"\n\n"+p)
		}
	}
	return strings.Join(parts, "\n\n")
}

// AgentTools returns the names of the tools agent may call: the sorted,
// de-duplicated union of its skills' tools, or nil when it has none.
func (c *Catalog) AgentTools(agent *Agent) []string {
	return c.agentTools(agent, func(*Skill) bool { return true })
}

// agentTools is the sorted, de-duplicated union of the tools of agent's
// skills that keep admits.
func (c *Catalog) agentTools(agent *Agent, keep func(*Skill) bool) []string {
	if agent == nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, id := range agent.Skills {
		s, ok := c.Skill(id)
		if !ok || !keep(s) {
			continue
		}
		for _, t := range s.Tools {
			if !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	sort.Strings(out)
	return out
}

// AgentsFor returns the agents u may see and use (their allow: admits u),
// sorted by id: what /v1/models lists for u.
func (c *Catalog) AgentsFor(u longhaul.User) []*Agent {
	var out []*Agent
	for _, a := range c.Agents() {
		if a.Allow.Allows(u) {
			out = append(out, a)
		}
	}
	return out
}

// AgentFor returns the agent with the given id when u may use it; an agent
// u may not use is not found, as an unknown one is.
func (c *Catalog) AgentFor(id string, u longhaul.User) (*Agent, bool) {
	a, ok := c.Agent(id)
	if !ok || !a.Allow.Allows(u) {
		return nil, false
	}
	return a, true
}

// SkillAllows reports whether u may use skill id of agent: the agent has
// the skill and the skill's allow: admits u.
func (c *Catalog) SkillAllows(agent *Agent, id string, u longhaul.User) bool {
	s, ok := c.Skill(id)
	return ok && agent != nil && slices.Contains(agent.Skills, id) && s.Allow.Allows(u)
}

// AgentToolsFor is AgentTools over the skills of agent that u may use.
// Tools with allow: rules of their own (HTTP and MCP tools) are judged
// where the tools are: the caller filters the result with them.
func (c *Catalog) AgentToolsFor(agent *Agent, u longhaul.User) []string {
	return c.agentTools(agent, func(s *Skill) bool { return s.Allow.Allows(u) })
}
