package activities

import (
	"encoding/json"
	"fmt"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/textcut"
	"github.com/longhaul-dev/longhaul/internal/tools"
	"github.com/longhaul-dev/longhaul/skills"
)

// This file is the activities' side of agents asking agents (agents: in an
// agent file): the ask_ tools in an agent's spec, their definitions as the
// model is offered them, and the progress a child run's calls show on its
// parent's call. The workflow runs the calls themselves, as child runs
// (workflows/ask.go).

// askParameters is the schema of every ask_ tool: the question alone.
var askParameters = json.RawMessage(`{"type":"object","properties":{"question":{"type":"string","description":"The question or task for the agent, with everything it needs to know: it sees nothing of this conversation."}},"required":["question"],"additionalProperties":false}`)

// askSpecs are the ask_ tools of agent ag that user may use (the agents
// of its agents: whose allow: admits user).
func (a *Activities) askSpecs(ag *skills.Agent, user longhaul.User) []contract.AskSpec {
	var out []contract.AskSpec
	for _, name := range a.catalog.AskToolsFor(ag, user) {
		id, _ := skills.AskedAgent(name)
		asked, _ := a.catalog.Agent(id)
		out = append(out, contract.AskSpec{Tool: name, Agent: id, Description: asked.Description})
	}
	return out
}

// askDefinition is the definition of the tool name when it asks an agent
// of the catalog (and is no registered tool).
func (a *Activities) askDefinition(name string) (tools.Definition, bool) {
	if a.tools.Has(name) {
		return tools.Definition{}, false
	}
	id, ok := skills.AskedAgent(name)
	if !ok {
		return tools.Definition{}, false
	}
	ag, ok := a.catalog.Agent(id)
	if !ok {
		return tools.Definition{}, false
	}
	return tools.Definition{
		Name:        name,
		Description: fmt.Sprintf("Ask the agent %s (%s). It works on the question on its own and returns its answer.", id, textcut.Ellipsis(ag.Description, 200)),
		Parameters:  askParameters,
	}, true
}

// definitions are the definitions of the tools names, in their order: a
// registered tool's from the registry, an ask_ tool's made here.
func (a *Activities) definitions(names []string) ([]tools.Definition, error) {
	var registered []string
	for _, n := range names {
		if _, ok := a.askDefinition(n); !ok {
			registered = append(registered, n)
		}
	}
	defs, err := a.tools.Definitions(registered)
	if err != nil {
		return nil, err
	}
	out := make([]tools.Definition, 0, len(names))
	for _, n := range names {
		if d, ok := a.askDefinition(n); ok {
			out = append(out, d)
			continue
		}
		out = append(out, defs[0])
		defs = defs[1:]
	}
	return out, nil
}

// progress publishes a child run's call's progress p on its parent's call
// (a tool_status of the parent's, over NATS only).
func (a *Activities) progress(p *contract.Progress) {
	if p == nil || p.Run == "" {
		return
	}
	a.Bus.ToolStatus(p.Run, p.After, longhaul.ToolStatusData{ToolCallID: p.ToolCallID, Name: p.Tool, Message: p.Message})
}

// hasTool reports whether name is a registered tool or asks an agent of
// the catalog: what a plan's tool step may call.
func (a *Activities) hasTool(name string) bool {
	_, asks := a.askDefinition(name)
	return asks || a.tools.Has(name)
}

// validateArgs checks args against the parameters of the tool name, a
// registered or an ask_ tool.
func (a *Activities) validateArgs(name string, args json.RawMessage) error {
	if d, ok := a.askDefinition(name); ok {
		return tools.ValidateArguments(d.Parameters, args)
	}
	return a.tools.Validate(name, args)
}
