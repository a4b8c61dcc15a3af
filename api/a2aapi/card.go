package a2aapi

import (
	"net/url"
	"strings"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/skills"
)

// The agent cards (spec §8, a2a.proto AgentCard): one per agent, from
// its Markdown, and the catalog's, which lists the agents as skills.

// The bindings served, as AgentInterface.protocolBinding names them (the
// SDK's transports: "JSONRPC" and "HTTP+JSON", dist/client/index.js:5843
// and :6139).
const (
	BindingJSONRPC = "JSONRPC"
	BindingHTTP    = "HTTP+JSON"
)

// bearer is the security scheme of Longhaul's API keys.
const bearer = "bearer"

// textModes are the media types agents take and give.
var textModes = []string{"text/plain"}

// AgentURL is where agent's bindings are served, under base: POST to it
// is JSON-RPC; the HTTP+JSON binding's paths go under it.
func AgentURL(base, agent string) string {
	return strings.TrimSuffix(base, "/") + "/a2a/" + url.PathEscape(agent)
}

// interfaces are the bindings of agent under base.
func interfaces(base, agent string) []AgentInterface {
	u := AgentURL(base, agent)
	return []AgentInterface{
		{URL: u, ProtocolBinding: BindingJSONRPC, ProtocolVersion: ProtocolVersion},
		{URL: u, ProtocolBinding: BindingHTTP, ProtocolVersion: ProtocolVersion},
	}
}

// card is the card's common part: who serves it, how to authenticate,
// what it can do.
func card(base, name, description string) AgentCard {
	return AgentCard{
		Name: name, Description: description, Version: "1.0",
		Provider:     &AgentProvider{URL: base, Organization: "Longhaul"},
		Capabilities: AgentCapabilities{Streaming: true, PushNotifications: true, ExtendedAgentCard: true},
		SecuritySchemes: map[string]SecurityScheme{bearer: {HTTPAuth: &HTTPAuthSecurityScheme{
			Scheme: "Bearer", Description: "A Longhaul API key, as for /v1 (Authorization: Bearer <key>).",
		}}},
		SecurityRequirements: []SecurityRequirement{{Schemes: map[string]StringList{bearer: {List: []string{}}}}},
		DefaultInputModes:    textModes, DefaultOutputModes: textModes,
		SupportedInterfaces: []AgentInterface{}, Skills: []AgentSkill{},
	}
}

// AgentCardOf is agent's card as u sees it, served under base: its
// skills are those of its skills u may use (an agent with none is one
// skill, itself).
func AgentCardOf(cat *skills.Catalog, agent *skills.Agent, u longhaul.User, base string) AgentCard {
	c := card(base, agent.ID, describe(agent))
	c.SupportedInterfaces = interfaces(base, agent.ID)
	for _, id := range agent.Skills {
		s, ok := cat.Skill(id)
		if !ok || !cat.SkillAllows(agent, id, u) {
			continue
		}
		sk := AgentSkill{ID: s.ID, Name: s.ID, Description: s.Description, Tags: []string{"skill"}}
		if s.Command != "" {
			sk.Examples = []string{s.Command}
		}
		c.Skills = append(c.Skills, sk)
	}
	if len(c.Skills) == 0 {
		c.Skills = []AgentSkill{{ID: agent.ID, Name: agent.ID, Description: c.Description, Tags: []string{"agent"}}}
	}
	return c
}

// CatalogCard is the catalog's card for u: every agent u may see is a
// skill, whose description says where its own card is, and its bindings
// are among the card's interfaces (the first agent's first).
func CatalogCard(cat *skills.Catalog, u longhaul.User, base string) AgentCard {
	c := card(base, "Longhaul", "Longhaul's agents. Each skill is an agent; its own card is at /a2a/{agent}/.well-known/agent-card.json.")
	for _, a := range cat.AgentsFor(u) {
		c.SupportedInterfaces = append(c.SupportedInterfaces, interfaces(base, a.ID)...)
		c.Skills = append(c.Skills, AgentSkill{
			ID: a.ID, Name: a.ID, Tags: []string{"agent"},
			Description: describe(a) + " (card: " + AgentURL(base, a.ID) + "/.well-known/agent-card.json)",
		})
	}
	return c
}

// describe is an agent's description, or a line that names it.
func describe(a *skills.Agent) string {
	if a.Description != "" {
		return a.Description
	}
	return "The Longhaul agent " + a.ID + "."
}
