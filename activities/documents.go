package activities

import (
	"slices"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/skills"
)

// onlyDocuments reports whether tools name document_search and nothing
// else: a skill such as the documents skill, which is of no use to a run
// without vector stores.
func onlyDocuments(tools []string) bool {
	return len(tools) > 0 && !slices.ContainsFunc(tools, func(t string) bool { return t != longhaul.DocumentSearchTool })
}

// WithoutDocuments returns s as a run without vector stores has it:
// without document_search, and without the skills that had no other tool
// (so plans cannot name them either), the built-in documents skill among
// them. The workflow calls it; it is pure.
func WithoutDocuments(s contract.AgentSpec) contract.AgentSpec {
	drop := func(t string) bool { return t == longhaul.DocumentSearchTool }
	s.Tools = slices.DeleteFunc(slices.Clone(s.Tools), drop)
	s.Approval = slices.DeleteFunc(slices.Clone(s.Approval), drop)
	var kept []contract.SkillSpec
	for _, sk := range s.Skills {
		if sk.ID == skills.DocumentsSkill || onlyDocuments(sk.Tools) {
			continue
		}
		sk.Tools = slices.DeleteFunc(slices.Clone(sk.Tools), drop)
		kept = append(kept, sk)
	}
	s.Skills = kept
	return s
}

// RunVectorStores is the vector stores a run searches: the agent's, then
// the request's that the agent does not name, each once, at most
// longhaul.MaxVectorStores. Pure, for the workflow.
func RunVectorStores(agent, request []string) []string {
	var out []string
	for _, id := range append(slices.Clone(agent), request...) {
		if id == "" || slices.Contains(out, id) {
			continue
		}
		if len(out) == longhaul.MaxVectorStores {
			break
		}
		out = append(out, id)
	}
	return out
}
