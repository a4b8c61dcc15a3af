package skills

import (
	"fmt"
	"slices"
	"strings"

	"github.com/longhaul-dev/longhaul"
)

// This file is agents: in an agent file: the agents an agent may ask, each
// a tool ask_<id> whose call runs that agent as a child run (workflows'
// ask.go) and returns its answer.

// AskToolPrefix starts the name of the tool that asks an agent: the tool
// ask_researcher asks the agent researcher.
const AskToolPrefix = "ask_"

// AskTool is the name of the tool that asks agent id.
func AskTool(id string) string { return AskToolPrefix + id }

// AskedAgent is the agent the tool name asks, when it is an ask_ tool.
func AskedAgent(name string) (string, bool) {
	id, ok := strings.CutPrefix(name, AskToolPrefix)
	return id, ok && id != ""
}

// AskToolsFor are the ask_ tools of agent that u may use, in file order:
// one per agent of its agents: whose allow: admits u (an agent u may not
// use is not offered, as ResolveAgent leaves out the tools u may not use).
func (c *Catalog) AskToolsFor(agent *Agent, u longhaul.User) []string {
	if agent == nil {
		return nil
	}
	var out []string
	for _, id := range agent.Agents {
		if _, ok := c.AgentFor(id, u); ok {
			out = append(out, AskTool(id))
		}
	}
	return out
}

// checkAsks returns the problems of the agents' agents: lists: an agent
// that does not exist or is listed twice, and every cycle of agents that
// ask each other, each reported once, in the file of the cycle's first
// agent by id, naming the whole cycle ("a → b → a").
func (c *Catalog) checkAsks(agents []*Agent) []error {
	var problems []error
	for _, a := range agents {
		for i, id := range a.Agents {
			switch {
			case slices.Contains(a.Agents[:i], id):
				problems = append(problems, &FileError{Path: a.Source, Err: ErrUnknownAgent,
					Detail: fmt.Sprintf("agent %q lists agent %q twice in agents:", a.ID, id)})
			case c.agents[id] == nil:
				problems = append(problems, &FileError{Path: a.Source, Err: ErrUnknownAgent,
					Detail: fmt.Sprintf("agent %q asks agent %q (agents:), which does not exist", a.ID, id)})
			}
		}
	}
	reported := map[string]bool{}
	for _, a := range agents {
		cycle := c.cycleFrom(a.ID, []string{a.ID}, map[string]bool{})
		if cycle == nil {
			continue
		}
		// The cycle's members in order, starting at its least id: the
		// same cycle found from each member is one cycle.
		members := cycle[:len(cycle)-1]
		start := slices.Index(members, slices.Min(members))
		members = append(slices.Clone(members[start:]), members[:start]...)
		key := strings.Join(members, " ")
		if reported[key] {
			continue
		}
		reported[key] = true
		first := c.agents[members[0]]
		problems = append(problems, &FileError{Path: first.Source, Err: ErrAgentCycle, Detail: fmt.Sprintf(
			"agents ask each other in a cycle (agents:): %s → %s; a run would ask without end", strings.Join(members, " → "), members[0])})
	}
	return problems
}

// cycleFrom follows the agents: of the last agent of path, depth first in
// file order, and returns the first path that comes back to path[0]
// (path[0] at both ends), or nil; seen are the agents already followed
// from path[0].
func (c *Catalog) cycleFrom(start string, path []string, seen map[string]bool) []string {
	a := c.agents[path[len(path)-1]]
	if a == nil {
		return nil
	}
	for _, id := range a.Agents {
		if id == start {
			return append(slices.Clone(path), id)
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		if cycle := c.cycleFrom(start, append(path, id), seen); cycle != nil {
			return cycle
		}
	}
	return nil
}
